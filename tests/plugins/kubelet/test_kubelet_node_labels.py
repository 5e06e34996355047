"""Node labels and taints: ``--node-label``/``--node-taint`` join ``kubeletArguments``, and both
are checked as the kubelet checks them (``ValidateKubeletFlags``, ``ParseTaints``)."""

from __future__ import annotations

import pytest

from nodehost import ValidationScope
from nodehost.plugins.kubelet import nodehost_validate_config
from nodehost.plugins.kubelet.labels import label_problem, merge_node_flags, taint_problem

SELECTED = frozenset({"kubelet"})


def problems_of(sample_config, **arguments: list[str]) -> list[str]:
    config = sample_config(kubeletArguments=arguments)
    found = nodehost_validate_config(config=config, scope=ValidationScope.NODE, selected=SELECTED)
    return [problem.render() for problem in found]


@pytest.mark.parametrize(
    "label",
    [
        "role=edge",
        "example.com/tier=",
        "node.kubernetes.io/role=edge",  # an allowed namespace
        "team.kubelet.kubernetes.io/x=y",  # a subdomain of one
        "topology.kubernetes.io/zone=z1",  # an allowed key
        "flag",  # a key alone: the empty value
    ],
)
def test_labels_a_kubelet_may_set(label: str) -> None:
    assert label_problem(label) is None


@pytest.mark.parametrize(
    ("label", "start"),
    [
        (
            "node-role.kubernetes.io/worker=",
            "a kubelet may not set 'node-role.kubernetes.io/worker'",
        ),
        ("k8s.io/x=y", "a kubelet may not set 'k8s.io/x'"),
        ("a.b.k8s.io/x=y", "a kubelet may not set 'a.b.k8s.io/x'"),
        ("-bad=x", "label key '-bad' must be a qualified name"),
        ("a/b/c=x", "label key 'a/b/c' must be a qualified name"),
        ("ok=" + "v" * 64, "label value 'vvvv"),
        ("ok=has space", "label value 'has space'"),
    ],
)
def test_labels_the_kubelet_refuses(label: str, start: str) -> None:
    problem = label_problem(label)
    assert problem is not None and problem.startswith(start)


def test_the_refusal_of_a_kubernetes_label_lists_what_is_allowed() -> None:
    problem = label_problem("node-role.kubernetes.io/worker=")
    assert problem is not None
    assert "(kubelet.kubernetes.io, node.kubernetes.io)" in problem
    assert "kubernetes.io/hostname" in problem


@pytest.mark.parametrize(
    ("taint", "problem"),
    [
        ("dedicated=gpu:NoSchedule", None),
        ("maintenance:NoExecute", None),
        ("a=b:Sometimes", "invalid taint effect: Sometimes, unsupported taint effect"),
        ("a=b", "invalid taint spec: a=b"),
        ("a=b=c:NoSchedule", "invalid taint spec: a=b=c:NoSchedule"),
    ],
)
def test_taints_parse_as_the_kubelet_reads_them(taint: str, problem: str | None) -> None:
    assert taint_problem(taint) == problem


def test_flags_join_the_file_labels_last_and_taints_into_one_value() -> None:
    arguments = {"node-labels": ("a=1,b=2",), "register-with-taints": ("x:NoSchedule",)}
    merged = merge_node_flags(arguments, ["b=3"], ["y=1:NoExecute"])
    assert merged["node-labels"] == ("a=1,b=2", "b=3")
    assert merged["register-with-taints"] == ("x:NoSchedule,y=1:NoExecute",)
    assert merge_node_flags(arguments, [], []) == arguments


def test_a_file_label_that_is_not_a_label_is_an_error_with_its_path(sample_config) -> None:
    problems = problems_of(sample_config, **{"node-labels": ["ok=1,-bad=x"]})
    assert len(problems) == 1
    assert problems[0].startswith(
        "kubeletArguments.node-labels: Invalid value: \"-bad=x\": label key '-bad' must be"
    )


def test_a_restricted_file_label_is_a_warning_and_not_passed_on(sample_config) -> None:
    """Origin's installers wrote node-role.kubernetes.io labels; a current kubelet exits on them."""
    from nodehost.plugins.kubelet.arguments import kubelet_arguments

    config = sample_config(
        kubeletArguments={"node-labels": ["node-role.kubernetes.io/compute=true,a=1"]}
    )
    found = nodehost_validate_config(config=config, scope=ValidationScope.NODE, selected=SELECTED)
    assert [(p.is_error, p.path, p.value) for p in found] == [
        (False, "kubeletArguments.node-labels", "node-role.kubernetes.io/compute=true")
    ]
    assert found[0].detail.endswith("not passed to the kubelet (label the Node after it registers)")
    assert kubelet_arguments(config, {}).arguments["node-labels"] == ["a=1"]
    only = sample_config(kubeletArguments={"node-labels": ["k8s.io/x=1"]})
    assert "node-labels" not in kubelet_arguments(only, {}).arguments


def test_a_taint_given_twice_is_a_problem_with_its_path(sample_config) -> None:
    problems = problems_of(
        sample_config, **{"register-with-taints": ["a=1:NoSchedule,a=2:NoSchedule"]}
    )
    assert problems == [
        'kubeletArguments.register-with-taints: Invalid value: "a=2:NoSchedule": '
        "a taint with this key and effect is given twice"
    ]


def test_a_bad_taint_effect_in_the_file_is_a_problem_with_its_path(sample_config) -> None:
    problems = problems_of(sample_config, **{"register-with-taints": ["a=1:Never"]})
    assert problems == [
        'register-with-taints: Invalid value: "a=1:Never": could not be set: '
        "invalid taint effect: Never, unsupported taint effect"
    ]
