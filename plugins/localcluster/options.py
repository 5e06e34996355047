"""What ``--local-cluster DIR`` implies for the other start options.

The local cluster owns DIR and everything in it (see :mod:`.layout`), so it
chooses the node's folders and the bootstrap settings itself:

* ``--config-dir DIR/node`` and, unless given, ``--state-dir DIR/state``;
* ``--bootstrap-config-name node-config`` and ``--kubeconfig
  DIR/bootstrap.kubeconfig`` (the local API server's bootstrap token);
* ``--standins=missing`` unless ``--standins`` is given: the real kubelet and
  kube-proxy where installed, stand-ins where not;
* ``--disable runtime`` when containerd cannot run here (:mod:`.machine`) and
  the selection is the default one;
* an explicit ``--components``/``--enable`` gets ``localcluster`` added: the
  node cannot bootstrap without it.

Flags that choose what the local cluster chooses are usage errors naming the
flag, as is a DIR that is neither new, empty, nor a local cluster's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nodehost.errors import UsageError
from nodehost.options import DEFAULT_CONFIG_DIR, DEFAULT_MASTER_CERT_DIR
from nodehost.plugins.localcluster import NAME
from nodehost.plugins.localcluster.layout import CONFIG_MAP, Layout, layout_of

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.options import StartOptions

RUNTIME = "runtime"
BOOTSTRAP = "bootstrap"
#: The ``bootstrap`` plugin's options this plugin sets and reads (their ``dest``).
BOOTSTRAP_CONFIG_NAME = "bootstrap_config_name"
FLAG = "--local-cluster"


def implied_options(
    options: StartOptions, components: frozenset[str], runtime_possible: bool
) -> dict[str, Any]:
    """The start options ``--local-cluster`` sets (``bootstrap``'s own among them);
    ``UsageError`` for a flag that clashes, or without the ``bootstrap`` component."""
    if BOOTSTRAP not in components:
        raise UsageError(
            f"{FLAG} needs the bootstrap component, whose plugin is disabled or failed", FLAG
        )
    check_flags(options)
    layout = layout_of(options)
    check_directory(layout)
    changes: dict[str, Any] = {
        "local_cluster": str(layout.directory),
        "config_dir": str(layout.node_dir),
        "kubeconfig": str(layout.bootstrap_kubeconfig),
        BOOTSTRAP_CONFIG_NAME: CONFIG_MAP,
    }
    if options.state_dir is None:
        changes["state_dir"] = str(layout.state_dir)
    if options.standins is None:
        changes["standins"] = "missing"
    changes.update(_selection(options, not runtime_possible and RUNTIME in components))
    return changes


#: Flags whose job ``--local-cluster`` does, and what it does instead.
CLASHES = (
    ("config", "--config", "the node's config comes from the local cluster's config map"),
    ("kubeconfig", "--kubeconfig", "the node bootstraps with DIR/bootstrap.kubeconfig"),
    (BOOTSTRAP_CONFIG_NAME, "--bootstrap-config-name", f"the config map is {CONFIG_MAP}"),
    ("write_config", "--write-config", "the node's folder is DIR/node, written by bootstrap"),
    ("write_flags", "--write-flags", "the kubelet's arguments come from the config map"),
)


def check_flags(options: StartOptions) -> None:
    """``UsageError`` for a flag that chooses what ``--local-cluster`` chooses."""
    for field, flag, instead in CLASHES:
        if options.plugin_values.get(field) or getattr(options, field, None):
            raise UsageError(f"{flag} cannot be given with {FLAG}: {instead}", flag)
    if options.config_dir != DEFAULT_CONFIG_DIR:
        raise UsageError(
            f"--config-dir cannot be given with {FLAG}: it is DIR/node", "--config-dir"
        )
    if options.master_cert_dir != DEFAULT_MASTER_CERT_DIR:
        raise UsageError(
            f"--master-cert-dir cannot be given with {FLAG}: the local cluster's CA is DIR/signer",
            "--master-cert-dir",
        )
    if NAME in names(options.disable):
        raise UsageError(
            f"--disable cannot name {NAME} with {FLAG}: the node bootstraps against it",
            "--disable",
        )


def check_directory(layout: Layout) -> None:
    """DIR must be new, empty, or a local cluster's (a guard against ``--local-cluster ~``)."""
    directory = layout.directory
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} is not a folder", FLAG)
    if directory.is_dir() and not layout.settings_file.exists() and any(directory.iterdir()):
        raise UsageError(
            f"{directory} is not empty and holds no local cluster (no "
            f"{layout.settings_file.name}); give a new or empty folder",
            FLAG,
        )


def _selection(options: StartOptions, leave_out_runtime: bool) -> dict[str, str]:
    """The selection flags: ``localcluster`` in an explicit one, runtime out when impossible."""
    changes = {}
    for field in ("components", "enable"):
        given = getattr(options, field)
        if given is not None and NAME not in names(given):
            changes[field] = ",".join(filter(None, (given, NAME)))
    default_selection = options.components is None and options.enable is None
    if default_selection and leave_out_runtime:
        changes["disable"] = ",".join(filter(None, (options.disable, RUNTIME)))
    return changes


def names(value: str) -> set[str]:
    return {part.strip() for part in value.split(",") if part.strip()}
