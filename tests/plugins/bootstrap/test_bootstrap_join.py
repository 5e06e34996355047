"""``nodehost start --bootstrap-config-name``: a node joins from a bootstrap kubeconfig and a config map."""

from __future__ import annotations

import contextlib
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from clusterrun import CONFIG_MAP, NAMESPACE, NODE_NAME, error_lines, run_start, wait_until

from nodehost.testing.notify import NotifyReceiver

CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"


def openssl_subject(path: Path) -> str:
    done = subprocess.run(
        ["openssl", "x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def client_csrs(api) -> list[dict]:
    return [c for c in api.csrs() if c["spec"]["signerName"] == CLIENT_SIGNER]


def test_a_node_joins_from_a_bootstrap_kubeconfig_and_a_config_map(
    api, start_args, start_env, node_dir: Path
) -> None:
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 0, done.stderr
    assert "node ready after" in done.stdout
    current = node_dir / "certificates" / "kubelet-client-current.pem"
    assert openssl_subject(current) == f"subject=CN=system:node:{NODE_NAME},O=system:nodes"
    assert stat.S_IMODE(current.resolve().stat().st_mode) == 0o600
    assert (node_dir / "extra.conf").read_text() == "hello\n"
    assert stat.S_IMODE((node_dir / "extra.conf").stat().st_mode) == 0o600
    assert (node_dir / "node-client-ca.crt").read_bytes() == api.ca.pem
    [csr] = client_csrs(api)
    assert csr["metadata"]["name"].startswith("node-csr-")
    assert csr["spec"]["usages"] == ["digital signature", "key encipherment", "client auth"]
    assert csr["spec"]["username"] == "system:bootstrap:abcdef"


def test_the_downloaded_config_gets_the_bootstrap_overrides(
    api, start_args, start_env, node_dir: Path
) -> None:
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load((node_dir / "node-config.yaml").read_text())
    assert config["nodeName"] == NODE_NAME
    assert config["servingInfo"]["clientCA"] == "node-client-ca.crt"
    assert config["kubeletArguments"]["bootstrap-kubeconfig"] == [str(api.bootstrap_kubeconfig)]
    assert config["kubeletArguments"]["cert-dir"] == ["./certificates"]
    assert config["kubeletArguments"]["fail-swap-on"] == ["false"]


def test_the_overridden_allow_disabled_docker_is_left_out_not_warned_about(tmp_path) -> None:
    from nodehost.options import StartOptions
    from nodehost.plugins.bootstrap.join import merge_cli_overrides, settings_from_options

    settings = settings_from_options(StartOptions(kubeconfig="k", config_dir=str(tmp_path)))
    raw = {"allowDisabledDocker": True, "nodeName": "x"}
    merge_cli_overrides(raw, settings)
    assert "allowDisabledDocker" not in raw


def test_the_written_kubeconfig_works_for_kubectl(
    api, start_args, start_env, node_dir: Path, kubectl
) -> None:
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 0, done.stderr
    node_kubeconfig = str(node_dir / "node.kubeconfig")
    got = kubectl(
        "--kubeconfig",
        node_kubeconfig,
        "get",
        "configmap",
        CONFIG_MAP,
        "-n",
        NAMESPACE,
        "-o",
        "yaml",
    )
    assert got.returncode == 0, got.stderr
    assert yaml.safe_load(got.stdout)["data"]["extra.conf"] == "hello\n"
    assert (
        "GET",
        f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIG_MAP}",
        f"system:node:{NODE_NAME}",
    ) in api.requests


def test_a_rerun_with_a_valid_certificate_files_no_new_request(api, start_args, start_env) -> None:
    assert run_start(start_args("--exit-on-ready"), start_env).returncode == 0
    again = run_start(start_args("--exit-on-ready"), start_env)
    assert again.returncode == 0, again.stderr
    assert len(client_csrs(api)) == 1


def test_the_serving_certificate_is_requested_and_its_missing_approver_named(
    api, start_args, start_env, node_dir: Path
) -> None:
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 0, done.stderr
    [serving] = [
        c for c in api.csrs() if c["spec"]["signerName"] == "kubernetes.io/kubelet-serving"
    ]
    assert serving["spec"]["usages"] == ["digital signature", "key encipherment", "server auth"]
    assert "no approver for serving certificates" in done.stderr
    assert (
        yaml.safe_load((node_dir / "node-config.yaml").read_text())["servingInfo"]["certFile"] == ""
    )


def test_an_unsigned_serving_certificate_is_not_fatal_when_bootstrap_time_runs_out(
    api, start_args, start_env
) -> None:
    done = run_start(
        start_args("--exit-on-ready", "--bootstrap-timeout=3s", "--serving-cert-wait=30s"),
        start_env,
    )
    assert done.returncode == 0, done.stderr
    assert "no approver for serving certificates" in done.stderr


def test_a_signed_serving_certificate_is_used_for_serving(
    api, start_args, start_env, node_dir: Path
) -> None:
    api.set_approver("approve", "kubernetes.io/kubelet-serving")
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load((node_dir / "node-config.yaml").read_text())
    assert config["servingInfo"]["certFile"] == "certificates/kubelet-server-current.pem"
    served = node_dir / "certificates" / "kubelet-server-current.pem"
    sans = subprocess.run(
        ["openssl", "x509", "-noout", "-ext", "subjectAltName", "-in", str(served)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"DNS:{NODE_NAME}" in sans and "IP Address:127.0.0.1" in sans


@contextlib.contextmanager
def started_with_receiver(
    args: list[str], env: dict[str, str], tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], NotifyReceiver]]:
    """``args`` started with a notify socket of the test's own; on leaving, the socket is
    closed (its lines stay readable) and the process killed if it still runs."""
    receiver = NotifyReceiver(str(tmp_path / "notify.sock"))
    process = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "NOTIFY_SOCKET": receiver.address},
    )
    try:
        yield process, receiver
    finally:
        receiver.close()
        if process.poll() is None:
            process.kill()


def test_an_api_server_down_at_start_is_waited_for(
    api, start_args, start_env, tmp_path: Path
) -> None:
    api.go_down()
    args = start_args("--exit-on-ready")
    with started_with_receiver(args, start_env, tmp_path) as (process, receiver):
        wait_until(
            lambda: any("retrying in" in line for line in receiver.lines()),
            "a retry while the API server is down",
        )
        api.come_up()
        out, err = process.communicate(timeout=40)
    assert process.returncode == 0, err
    assert "node ready after" in out
    assert len(client_csrs(api)) == 1


def test_a_watch_dropped_mid_approval_still_joins(
    api, start_args, start_env, tmp_path: Path
) -> None:
    api.set_approver("never")
    args = start_args("--exit-on-ready")
    with started_with_receiver(args, start_env, tmp_path) as (process, receiver):
        wait_until(lambda: client_csrs(api), "the client certificate signing request", 120)
        [csr] = client_csrs(api)
        name = csr["metadata"]["name"]
        api.wait_for_watches(1)  # the node watches its request
        api.drop_watches()
        api.wait_for_watches(2)  # and watches it again
        api.approve(name)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "node ready after" in out
    reads = [r for r in api.requests if r[1].endswith(f"/certificatesigningrequests/{name}")]
    assert len(reads) >= 2  # read again after the dropped watch
    waiting = f"STATUS=bootstrap: waiting for certificate signing request {name}"
    assert any(line.startswith(waiting) for line in receiver.lines())


def test_a_denied_request_fails_with_its_reason_and_writes_nothing(
    api, start_args, start_env, node_dir: Path
) -> None:
    api.set_approver("deny")
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert "was denied (AutoTestDenied)" in line
    assert "Traceback" not in done.stderr
    assert not (node_dir / "node.kubeconfig").exists()
    assert not (node_dir / "node-config.yaml").exists()


def test_a_forbidden_config_map_deletes_the_node_kubeconfig(
    api, start_args, start_env, node_dir: Path
) -> None:
    api.forbid("configmaps")
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert "not authorised to read config map openshift-node/node-config (403 Forbidden)" in line
    assert not (node_dir / "node.kubeconfig").exists()
    assert not (node_dir / "node-config.yaml").exists()


def test_a_missing_config_map_fails_naming_it(api, start_args, start_env, node_dir: Path) -> None:
    api.store.delete("configmaps", NAMESPACE, CONFIG_MAP)
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert "config map openshift-node/node-config not found" in line
    assert not (node_dir / "node-config.yaml").exists()


@pytest.mark.parametrize(
    ("data", "problem"),
    [(["node-config.yaml"], "data is a list"), ({"node-config.yaml": 5}, "data.node-config.yaml")],
)
def test_a_config_map_of_the_wrong_shape_fails_naming_the_field(
    api, start_args, start_env, node_dir: Path, data, problem
) -> None:
    """``data`` a list or a value not a string (a proxy can say anything): one line, exit 1."""
    api.store.put("configmaps", {"metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
                                 "data": data})  # fmt: skip
    done = run_start(start_args("--exit-on-ready"), start_env)
    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert "config map openshift-node/node-config is not the shape of a ConfigMap" in line
    assert problem in line and "Traceback" not in done.stderr
    assert not (node_dir / "node-config.yaml").exists()


def test_the_bootstrap_timeout_bounds_a_server_trickling_a_byte_a_second(
    api, start_args, start_env, node_dir: Path
) -> None:
    """``--bootstrap-timeout 5s`` against a server sending one byte a second ran past 90 s
    (the timeout was per read): the deadline ends the request in flight, exit 1, one line.
    (``run_start``'s 40 s bounds a failure only.)"""
    api.misbehave("trickle", "/apis/certificates.k8s.io", interval=1.0)
    done = run_start(start_args("--exit-on-ready", "--bootstrap-timeout=3s"), start_env)
    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert "no complete answer" in line and "Traceback" not in done.stderr


def test_a_wrong_certificate_authority_fails_at_once(
    api, start_args, start_env, node_dir: Path, tmp_path: Path
) -> None:
    from nodehost.pki.kubeconfig import dump_kubeconfig
    from nodehost.testing.apiserver import TestCA

    wrong = tmp_path / "wrong-ca.kubeconfig"
    wrong.write_bytes(
        dump_kubeconfig(api.token_kubeconfig("abcdef.0123456789abcdef", TestCA().pem))
    )
    args = [
        a if not a.startswith("--kubeconfig=") else f"--kubeconfig={wrong}" for a in start_args()
    ]
    done = run_start([*args, "--exit-on-ready"], start_env)
    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert "certificate is not trusted" in line and str(wrong) in line
    assert len(api.handshake_errors) == 1  # one attempt: retrying cannot fix a wrong CA
    assert not (node_dir / "node.kubeconfig").exists()


def test_an_unreachable_api_server_fails_after_the_timeout(
    api, start_args, start_env, node_dir: Path
) -> None:
    api.go_down()
    done = run_start(start_args("--exit-on-ready", "--bootstrap-timeout=2s"), start_env)
    assert done.returncode == 1
    [line] = error_lines(done.stderr)
    assert api.url in line and "gave up" in line
    assert not (node_dir / "node.kubeconfig").exists()


def test_bootstrap_without_a_kubeconfig_is_a_usage_error(
    nodehost, node_dir: Path, start_env
) -> None:
    done = run_start(
        [nodehost, "start", "--bootstrap-config-name=node-config", f"--config-dir={node_dir}"],
        start_env,
    )
    assert done.returncode == 2
    [line] = error_lines(done.stderr)
    assert "--kubeconfig" in line


def test_a_missing_bootstrap_kubeconfig_is_one_line(
    start_args, start_env, node_dir: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "absent.kubeconfig"
    args = [
        a if not a.startswith("--kubeconfig=") else f"--kubeconfig={missing}" for a in start_args()
    ]
    done = run_start(args, start_env)
    assert done.returncode == 1
    assert error_lines(done.stderr) == [
        f"error: unable to load bootstrap kubeconfig: {missing} does not exist"
    ]


def test_hostile_map_content_at_start_is_an_invalid_config_not_a_plugin_failure(
    api, start_args, start_env, node_dir: Path
) -> None:
    from clusterrun import node_config

    from nodehost.testing.hostile import refused_documents
    from nodehost.testing.ports import free_port

    base = node_config(free_port(), free_port())
    for name in ("sequence 400 deep", "1 and '1' as keys"):
        api.put_config_map(
            NAMESPACE, CONFIG_MAP, {"node-config.yaml": refused_documents(base)[name]}
        )
        done = run_start(start_args("--exit-on-ready"), start_env)
        assert done.returncode == 255, (name, done.stderr)
        assert "could not load config file" in done.stderr, (name, done.stderr)
        assert "Traceback" not in done.stderr and "failed in hook" not in done.stderr


def test_keys_of_any_yaml_type_are_loaded_as_strings_not_a_crash(api, node_dir: Path) -> None:
    from nodehost.plugins.bootstrap.join import BootstrapSettings, rewrite_node_config

    settings = BootstrapSettings(
        node_dir, node_dir / "bootstrap.kubeconfig", CONFIG_MAP, NAMESPACE, NODE_NAME, (),
        False, "", None, 1.0, 1.0,
    )  # fmt: skip
    content = b"apiVersion: v1\nkind: NodeConfig\n1: a\nnull: b\ntrue: c\nnodeIP: 10.0.0.1\n"
    rewritten = yaml.safe_load(rewrite_node_config(content, settings, None))
    assert [rewritten.get(key) for key in ("1", "null", "true")] == ["a", "b", "c"]


def test_a_sighup_during_the_bootstrap_wait_is_applied_once_started_not_fatal(
    api, start_args, start_env
) -> None:
    import signal

    api.set_approver("never")
    process = subprocess.Popen(
        start_args("--exit-on-ready"), env=start_env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_until(lambda: client_csrs(api), "the client certificate signing request", 120)
        process.send_signal(signal.SIGHUP)
        api.approve(client_csrs(api)[0]["metadata"]["name"])
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert "SIGHUP came while starting" in stderr
