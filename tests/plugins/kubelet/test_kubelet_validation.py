"""The kubelet's validation hook: Origin's rule 13 (:ref:`origin-validation-kubelet-arguments`)
with Origin's paths, removed flags, the required settings (:ref:`origin-kubelet-required-settings`),
reserved keys."""

from __future__ import annotations

from nodehost import Severity, ValidationScope
from nodehost.plugins.kubelet import nodehost_validate_config

SELECTED = frozenset({"kubelet"})


def rendered(make_config, scope=ValidationScope.NODE, selected=SELECTED, **arguments):
    config = make_config(kubeletArguments=arguments)
    return [
        (problem.severity, problem.render())
        for problem in nodehost_validate_config(config=config, scope=scope, selected=selected)
    ]


def test_origins_failing_kubelet_args_test_gives_exactly_two_errors(make_config) -> None:
    """Origin's ``TestFailingKubeletArgs`` (:ref:`origin-validation-tests`): paths are not prefixed
    with kubeletArguments."""
    config = make_config(kubeletArguments={"port": ["invalid-value"], "missing-key": ["value"]})
    problems = nodehost_validate_config(
        config=config, scope=ValidationScope.NODE, selected=SELECTED
    )
    assert [(p.path, p.value, p.detail, p.is_error) for p in problems] == [
        ("flag", "missing-key", "is not a valid flag", True),
        (
            "port",
            "invalid-value",
            'could not be set: strconv.ParseInt: parsing "invalid-value": invalid syntax',
            True,
        ),
    ]
    assert [p.render() for p in problems] == [
        'flag: Invalid value: "missing-key": is not a valid flag',
        'port: Invalid value: "invalid-value": could not be set: strconv.ParseInt: '
        'parsing "invalid-value": invalid syntax',
    ]


def test_only_the_first_bad_value_of_a_key_is_reported(make_config) -> None:
    assert rendered(make_config, **{"max-pods": ["1", "x", "y"]}) == [
        (
            Severity.ERROR,
            'max-pods: Invalid value: "x": could not be set: '
            'strconv.ParseInt: parsing "x": invalid syntax',
        ),
    ]


def test_valid_arguments_give_no_problems(make_config) -> None:
    assert rendered(make_config, **{"max-pods": ["110"], "node-labels": ["a=b"]}) == []


def test_in_cluster_scope_checks_kubelet_arguments_too(make_config) -> None:
    problems = rendered(make_config, scope=ValidationScope.IN_CLUSTER, nope=["1"])
    assert problems == [(Severity.ERROR, 'flag: Invalid value: "nope": is not a valid flag')]


def test_network_scope_does_not_check_kubelet_arguments(make_config) -> None:
    problems = rendered(
        make_config, scope=ValidationScope.NETWORK, selected=frozenset({"proxy"}), nope=["1"]
    )
    assert problems == []


def test_a_removed_flag_is_a_warning_not_an_error(make_config) -> None:
    assert rendered(make_config, **{"allow-privileged": ["true"]}) == [
        (
            Severity.WARNING,
            "kubeletArguments.allow-privileged: Forbidden: removed in v1.15 (privileged pods are "
            "governed by Pod Security admission); nodehost drops it",
        )
    ]


def test_a_renamed_flag_is_checked_under_its_new_name(make_config) -> None:
    problems = rendered(make_config, **{"resource-container": ["/a"]})
    assert problems == [
        (
            Severity.WARNING,
            "kubeletArguments.resource-container: Forbidden: removed in v1.16 (renamed); "
            "nodehost passes its values as kubelet-cgroups",
        )
    ]


def test_overriding_authorization_mode_is_an_error_when_the_kubelet_runs(make_config) -> None:
    assert rendered(make_config, **{"authorization-mode": ["AlwaysAllow"]}) == [
        (
            Severity.ERROR,
            'kubeletArguments.authorization-mode: Invalid value: "AlwaysAllow": must be Webhook: '
            "nodehost requires it",
        )
    ]


def test_removing_a_required_tls_setting_is_an_error(make_config) -> None:
    assert rendered(make_config, **{"tls-cipher-suites": []}) == [
        (
            Severity.ERROR,
            "kubeletArguments.tls-cipher-suites: Forbidden: cannot be removed: the kubelet must "
            "run with it",
        )
    ]


def test_an_unparseable_webhook_setting_is_reported_once_by_rule_13(make_config) -> None:
    problems = rendered(make_config, **{"authentication-token-webhook": ["maybe"]})
    assert [text for _, text in problems] == [
        'authentication-token-webhook: Invalid value: "maybe": could not be set: '
        'strconv.ParseBool: parsing "maybe": invalid syntax'
    ]


def test_security_settings_are_not_checked_when_the_kubelet_is_not_selected(make_config) -> None:
    problems = rendered(
        make_config,
        scope=ValidationScope.IN_CLUSTER,
        selected=frozenset({"proxy", "dns"}),
        **{"authorization-mode": ["AlwaysAllow"]},
    )
    assert problems == []


def test_the_config_key_is_owned_by_nodehost(make_config) -> None:
    ((severity, text),) = rendered(make_config, config=["/etc/kubelet.yaml"])
    assert severity is Severity.ERROR
    assert text.startswith("kubeletArguments.config: Forbidden: is written by nodehost")


def test_file_arguments_must_name_readable_regular_files(make_config, tmp_path) -> None:
    import os

    pem = tmp_path / "ok.crt"
    pem.write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    problems = rendered(
        make_config,
        **{
            "tls-cert-file": [str(tmp_path / "missing.crt")],
            "tls-private-key-file": [str(fifo)],
            "client-ca-file": [str(tmp_path / "missing"), str(pem)],  # the last one wins
        },
    )
    assert [text for _, text in problems] == [
        f'kubeletArguments.tls-cert-file: Invalid value: "{tmp_path}/missing.crt": could not '
        f"read file: stat {tmp_path}/missing.crt: no such file or directory",
        f'kubeletArguments.tls-private-key-file: Invalid value: "{fifo}": could not read file: '
        f"{fifo}: not a regular file (a named pipe)",
    ]
    not_selected = rendered(
        make_config, selected=frozenset(), **{"tls-cert-file": [str(tmp_path / "x")]}
    )
    assert not_selected == []


def test_a_numeric_port_argument_must_be_a_port(make_config) -> None:
    assert rendered(make_config, selected=frozenset(), **{"read-only-port": ["65536"]}) == [
        (
            Severity.ERROR,
            'kubeletArguments.read-only-port[0]: Invalid value: "65536": '
            "must be between 0 and 65535, inclusive",
        )
    ]


def test_the_port_rule_is_not_one_of_the_network_scope(make_config) -> None:
    scope = ValidationScope.NETWORK
    assert rendered(make_config, scope, frozenset(), **{"read-only-port": ["65536"]}) == []
