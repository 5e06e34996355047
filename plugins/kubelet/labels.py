"""The labels and taints a kubelet registers its Node with, checked as the kubelet checks them.

``--node-label KEY=VALUE`` and ``--node-taint KEY[=VALUE]:EFFECT`` (repeatable)
join ``kubeletArguments.node-labels`` / ``register-with-taints``
(:func:`merge_node_flags`): a flag's label replaces the same key from the
file; taints are added to the file's (the kubelet keeps only the last
``register-with-taints`` value, so they are joined into one).

The checks are the kubelet's own (``ValidateKubeletFlags`` in
``cmd/kubelet/app/options/options.go``): a label key is a qualified name and
its value a label value; a key in the ``kubernetes.io`` or ``k8s.io``
namespace (or a subdomain of either) must be one a kubelet may set on its own
Node (``IsKubeletLabel`` in ``pkg/kubelet/apis/well_known_labels.go``: the
:data:`KUBELET_LABELS`, or a namespace ending in one of
:data:`KUBELET_LABEL_NAMESPACES`).  A taint is ``key[=value]:Effect`` with an
effect of :data:`~nodehost.kube.goparse.TAINT_EFFECTS` (``ParseTaints``), and no
two taints share a key and effect (the API server refuses such a Node).

A restricted label in ``kubeletArguments.node-labels`` -- Origin's installers
wrote ``node-role.kubernetes.io/compute=true`` there, which Origin's kubelet
took and a current one refuses at start -- is a warning and is not passed to
the kubelet (:func:`without_restricted_labels`); from ``--node-label`` it is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodehost.kube.goparse import FlagError, is_label_value, is_qualified_name, parse_taint

LABELS_FLAG = "node-labels"
TAINTS_FLAG = "register-with-taints"

#: Label keys in the kubernetes.io / k8s.io namespaces a kubelet may set on its own Node.
KUBELET_LABELS = (
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
)
#: Label namespaces (and their subdomains) a kubelet may set on its own Node.
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def label_problem(pair: str) -> str | None:
    """Why one ``key[=value]`` label may not be registered by a kubelet; None if it may."""
    return label_syntax_problem(pair) or restricted_label_problem(pair)


def label_syntax_problem(pair: str) -> str | None:
    """Why ``key[=value]`` is not a label at all (``IsQualifiedName``, ``IsValidLabelValue``)."""
    key, _, value = (part.strip() for part in pair.partition("="))
    if not is_qualified_name(key):
        return (
            f"label key {key!r} must be a qualified name: an optional DNS subdomain prefix and "
            "'/', then 1-63 alphanumeric characters, '-', '_' or '.', starting and ending "
            "alphanumeric"
        )
    if not is_label_value(value):
        return (
            f"label value {value!r} must be at most 63 alphanumeric characters, '-', '_' or '.', "
            "starting and ending alphanumeric (or empty)"
        )
    return None


def restricted_label_problem(pair: str) -> str | None:
    """Why a kubelet may not set this label on its own Node (its namespace), or None."""
    key = pair.partition("=")[0].strip()
    if _is_kubernetes_label(key) and not _is_kubelet_label(key):
        return (
            f"a kubelet may not set {key!r} on its Node: labels in the 'kubernetes.io' and "
            f"'k8s.io' namespaces must begin with an allowed prefix "
            f"({', '.join(KUBELET_LABEL_NAMESPACES)}) or be one of {', '.join(KUBELET_LABELS)}"
        )
    return None


def without_restricted_labels(values: Sequence[str]) -> list[str]:
    """``node-labels`` values without the pairs a current kubelet refuses (empty ones dropped)."""
    kept = []
    for value in values:
        pairs = [p for p in value.split(",") if p.strip() and not restricted_label_problem(p)]
        if pairs:
            kept.append(",".join(pairs))
    return kept


def taint_problem(spec: str) -> str | None:
    """Why one ``key[=value]:Effect`` taint does not parse as the kubelet reads it, or None."""
    try:
        parse_taint(spec.strip())
    except FlagError as error:
        return str(error)
    return None


def duplicate_taints(specs: Sequence[str]) -> list[str]:
    """The taints of ``specs`` whose key and effect an earlier one has already."""
    seen: set[tuple[str, str]] = set()
    repeated = []
    for spec in specs:
        try:
            taint = parse_taint(spec.strip())
        except FlagError:
            continue
        identity = (taint["key"], taint["effect"])
        if identity in seen:
            repeated.append(spec)
        seen.add(identity)
    return repeated


def label_pairs(values: Sequence[str]) -> list[str]:
    """Every ``key[=value]`` of ``node-labels`` values (each a comma-separated list)."""
    return [pair for value in values for pair in value.split(",") if pair.strip()]


def taint_specs(values: Sequence[str]) -> list[str]:
    """Every taint of the ``register-with-taints`` value the kubelet uses (the last one)."""
    return [spec for spec in values[-1].split(",") if spec.strip()] if values else []


def merge_node_flags(
    arguments: Mapping[str, tuple[str, ...]], labels: Sequence[str], taints: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """``arguments`` (``kubeletArguments``) with the flags' labels and taints joined in."""
    merged = dict(arguments)
    if labels:
        merged[LABELS_FLAG] = (*arguments.get(LABELS_FLAG, ()), *labels)
    if taints:
        merged[TAINTS_FLAG] = (",".join([*taint_specs(arguments.get(TAINTS_FLAG, ())), *taints]),)
    return merged


def _namespace(key: str) -> str:
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def _is_kubernetes_label(key: str) -> bool:
    namespace = _namespace(key)
    return any(
        namespace == root or namespace.endswith("." + root) for root in ("kubernetes.io", "k8s.io")
    )


def _is_kubelet_label(key: str) -> bool:
    if key in KUBELET_LABELS:
        return True
    namespace = _namespace(key)
    return any(
        namespace == allowed or namespace.endswith("." + allowed)
        for allowed in KUBELET_LABEL_NAMESPACES
    )


def check_node_flags(labels: Sequence[str], taints: Sequence[str]) -> None:
    """Each ``--node-label`` and ``--node-taint`` as the kubelet checks it; ``UsageError``."""
    from nodehost.errors import UsageError

    for label in labels:
        problem = label_problem(label)
        if problem:
            raise UsageError(f"{label!r}: {problem}", "--node-label")
    for taint in taints:
        problem = taint_problem(taint)
        if problem:
            raise UsageError(f"{taint!r}: {problem}", "--node-taint")
    for taint in duplicate_taints(taints):
        raise UsageError(
            f"{taint!r}: a taint with this key and effect is given twice", "--node-taint"
        )
