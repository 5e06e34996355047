"""``containerRuntime.registries``: read and checked with field paths, rendered into containerd's
registry hosts folder and credentials, and proven with a real registry on loopback: an image
pushed there is pulled through the node's containerd (CRI) by its original name via the mirror."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from realregistry import Registry, cri_pull, push
from realruntime import oci_image, oci_image_tar, wait_for

from nodehost.plugins.runtime import RUNTIME, nodehost_validate_config
from nodehost.plugins.runtime.registries import probe_mirrors
from nodehost.plugins.runtime.settings import read_settings
from nodehost.testing.noderun import NodeRun
from nodehost.testing.ports import free_port

SELECTED = frozenset({"runtime", "kubelet"})
UPSTREAM = "registry.nodehost.invalid"  # never resolves: only the mirror can serve it


def problems(make_config, registries: object) -> list[str]:
    config = make_config(containerRuntime={"registries": registries})
    return [p.render() for p in nodehost_validate_config(config=config, selected=SELECTED)]


def test_a_mirror_with_credentials_and_tls_renders_hosts_files_and_a_private_config(
    make_config, make_context, tmp_path: Path
) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("placeholder\n")
    config = make_config(
        containerRuntime={
            "registries": {
                "mirrors": {"docker.io": {"endpoint": ["https://mirror.example:5000"]}},
                "configs": {
                    "mirror.example:5000": {
                        "auth": {"username": "puller", "password": "s3cret"},
                        "tls": {"ca_file": str(ca)},
                    }
                },
            }
        }
    )
    plan = RUNTIME.plan(make_context(config))
    files = {os.path.relpath(f.path, tmp_path / "state" / "runtime"): f for f in plan.files}
    [hosts] = [name for name in files if name.endswith("docker.io/hosts.toml")]
    assert files[hosts].content.decode().splitlines()[1:] == [
        'server = "https://registry-1.docker.io"',
        "",
        '[host."https://mirror.example:5000"]',
        '  capabilities = ["pull", "resolve"]',
        f'  ca = "{ca}"',
    ]
    containerd_toml = files["containerd.toml"]
    assert containerd_toml.mode == 0o600  # it holds the credentials
    text = containerd_toml.content.decode()
    assert (
        f'config_path = "{tmp_path / "state" / "runtime" / os.path.dirname(os.path.dirname(hosts))}"'
        in text
    )
    assert (
        '[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.example:5000".auth]' in text
    )
    assert 'password = "s3cret"' in text
    assert not any("s3cret" in note for note in plan.notes)
    assert "s3cret" not in repr(read_settings(config)[0])


def test_without_registries_nothing_changes(make_config, make_context) -> None:
    plan = RUNTIME.plan(make_context(make_config()))
    [config] = [f for f in plan.files if f.path.endswith("containerd.toml")]
    assert config.mode == 0o644 and b"registry" not in config.content


def test_bad_registries_are_problems_with_their_field_paths(make_config, tmp_path: Path) -> None:
    found = problems(
        make_config,
        {
            "mirrors": {
                "docker.io": {
                    "endpoint": ["ftp://x", "https://ok.example"],
                    "rewrite": {"(a)\\1": "b", "^ok/(.*)": "fine/$1", "(?=x)": "y"},
                },
                "bad host!": {"endpoint": []},
                "quay.io": {},
            },
            "configs": {
                "a.example": {"auth": {"username": "u"}, "tls": {"ca_file": "relative.pem"}},
                "b.example": {"auth": {"auth": "bm90LWJhc2ljCg==", "identitytoken": "t"}},
                "c.example": {"tls": {"cert_file": str(tmp_path / "missing.pem")}, "extra": 1},
            },
            "mirror": {},
        },
    )
    registries = "containerRuntime.registries"
    assert found == [
        f'{registries}.mirrors.bad host!: Invalid value: "bad host!": must be a registry host: '
        "host[:port]",
        f'{registries}.mirrors.docker.io.endpoint[0]: Invalid value: "ftp://x": must be an '
        "http:// or https:// URL",
        f'{registries}.mirrors.docker.io.rewrite.(a)\\1: Invalid value: "(a)\\\\1": '
        "backreference \\1: RE2 has none",
        f'{registries}.mirrors.docker.io.rewrite.(?=x): Invalid value: "(?=x)": '
        "lookahead (?=...): RE2 has none",
        f"{registries}.mirrors.quay.io.endpoint: Required value",
        f"{registries}.configs.a.example.auth.password: Required value",
        f'{registries}.configs.a.example.tls.ca_file: Invalid value: "relative.pem": must be an '
        "absolute path",
        f"{registries}.configs.b.example.auth: Forbidden: give exactly one of: username and "
        "password, auth, identitytoken",
        f'{registries}.configs.c.example.tls.cert_file: Invalid value: "{tmp_path}/missing.pem": '
        f"could not read file: stat {tmp_path}/missing.pem: no such file or directory",
        f"{registries}.configs.c.example.tls: Forbidden: cert_file needs key_file",
        f"{registries}.configs.c.example.extra: Forbidden: unknown field",
        f'{registries}.mirror: Forbidden: unknown field; did you mean "mirrors"?',
        f"{registries}.mirrors.docker.io.rewrite: Forbidden: needs the mirror-rewrite component "
        "(its loopback proxy rewrites the names): select it, or pull without rewrite",
    ]


def test_an_auth_that_is_not_base64_of_a_pair_is_refused_without_showing_it(make_config) -> None:
    found = problems(make_config, {"configs": {"r.example": {"auth": {"auth": "c2VjcmV0"}}}})
    assert found == [
        'containerRuntime.registries.configs.r.example.auth.auth: Invalid value: "(hidden)": '
        "must be base64 of username:password"
    ]


# --- a real registry -------------------------------------------------------------------------


def mirror_config(registry: Registry, endpoints: list[str], rewrite: str = "") -> str:
    """The registries section: ``UPSTREAM`` mirrored at ``endpoints`` (``rewrite``: its rules,
    one ``"REGEX": "REPLACEMENT"`` per line), ``registry``'s credentials."""
    rules = "".join(f"\n                  {rule}" for rule in rewrite.splitlines())
    rules = "\n                rewrite:" + rules if rules else ""
    return f"""\
        containerRuntime:
          registries:
            mirrors:
              {UPSTREAM}:
                endpoint: {json.dumps(endpoints)}{rules}
            configs:
              127.0.0.1:{registry.port}:
                auth: {{username: puller, password: pull-s3cret}}
        """


def start_with_pod_archive(config: Path, short_dir: Path, plugin_env, components: str):
    """A node of ``components`` whose pod image comes from an archive (no pull needed);
    (the node, containerd's socket)."""
    state = short_dir / "state"
    (state / "images").mkdir(parents=True)
    oci_image_tar(state / "images", "docker.io/openshift/origin-pod:v3.11.0", "pod.tar")
    node = NodeRun.start(config, components=components, state_dir=state, env=plugin_env)
    return node, state / "runtime" / "containerd.sock"


def images_in_k8s(socket: Path) -> list[str]:
    """``ctr -n k8s.io images ls -q``: the names the kubelet's namespace holds."""
    listed = subprocess.run(
        ["ctr", "--address", str(socket), "--namespace", "k8s.io", "images", "ls", "-q"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return listed.stdout.split()


@pytest.fixture
def registry(short_dir: Path):
    server = Registry(short_dir / "registry", credentials=("puller", "pull-s3cret"))
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.needs("root", "containerd", "busybox", "docker-registry", "nodehost-script")
@pytest.mark.usefixtures("outside_guard")
def test_an_image_is_pulled_by_its_original_name_through_the_mirror(
    registry: Registry, node_folder, short_dir: Path, plugin_env
) -> None:
    push(registry, "team/busybox", "1", oci_image())
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    config = node_folder(mirror_config(registry, [registry.url, dead]))
    node, socket = start_with_pod_archive(config, short_dir, plugin_env, "runtime,images")
    try:
        node.ready()
        mirrors = wait_for(  # asked once, beside the import: may come after ready
            lambda: node.component("images")["details"].get("mirrors"), "the mirrors' answers"
        )
        assert [(m["endpoint"], m["ok"]) for m in mirrors] == [(registry.url, True), (dead, False)]
        [silent] = [e for e in node.logs() if e["event"] == "registry mirror does not answer"]
        assert silent["endpoint"] == dead
        reference = cri_pull(socket, f"{UPSTREAM}/team/busybox:1")
        assert reference.startswith("sha256:")
        assert f"{UPSTREAM}/team/busybox:1" in images_in_k8s(socket)
        assert f"/v2/team/busybox/manifests/1?ns={UPSTREAM} " in registry.requests()
        assert stat.S_IMODE((socket.parent / "containerd.toml").stat().st_mode) == 0o600
    finally:
        assert node.stop() == 0
    assert "pull-s3cret" not in node.stderr()


def test_probe_mirrors_says_which_endpoints_answer(registry: Registry, make_config) -> None:
    dead = f"http://127.0.0.1:{registry.port + 1 if registry.port < 65535 else 1}"
    config = make_config(
        containerRuntime={"registries": {"mirrors": {UPSTREAM: {"endpoint": [registry.url, dead]}}}}
    )
    answers = probe_mirrors(read_settings(config)[0].registries, timeout=5)
    first = answers[0]
    assert (first.endpoint, first.ok, first.detail) == (
        registry.url,
        True,
        "answers /v2/ (HTTP 401)",
    )
    assert answers[1].ok is False and answers[1].detail.startswith("does not answer /v2/: ")


def pod_image_node(registry: Registry, node_folder, short_dir: Path, plugin_env, configs: str):
    """A node (runtime, images, the kubelet stand-in as its program: it needs the pod image)
    whose pod infrastructure image lives only in ``registry``."""
    import sys

    config = node_folder(configs)
    image_format = f"127.0.0.1:{registry.port}/origin-${{component}}:${{version}}"
    config.write_text(
        config.read_text().replace("openshift/origin-${component}:${version}", image_format)
    )
    standin = Path(sys.executable).parent / "nodehost-standin-kubelet"
    return NodeRun.start(
        config,
        components="runtime,images,kubelet",
        state_dir=short_dir / "state",
        env=plugin_env,
        standins="never",
        args=[f"--binary=kubelet={standin}"],
    )


@pytest.mark.needs("root", "containerd", "busybox", "docker-registry", "nodehost-script")
@pytest.mark.usefixtures("outside_guard")
def test_the_pod_image_is_pullable_only_with_the_registry_credentials(
    registry: Registry, node_folder, short_dir: Path, plugin_env
) -> None:
    push(registry, "origin-pod", "v3.11.0", oci_image())
    image = f"127.0.0.1:{registry.port}/origin-pod:v3.11.0"
    without = pod_image_node(registry, node_folder, short_dir, plugin_env, "")
    try:

        def reason() -> str | None:
            found = without.component("images").get("reason") or ""
            return found if "cannot be pulled" in found else None

        reason_of = wait_for(reason, "the images component to say what is missing", 60)
        assert reason_of.startswith(f"pod infrastructure image {image} is not in containerd ")
        assert without.component("kubelet")["pid"] in (None, 0)
    finally:
        assert without.stop() == 0
    credentials = f"""\
        containerRuntime:
          registries:
            configs:
              127.0.0.1:{registry.port}:
                auth: {{username: puller, password: pull-s3cret}}
        """
    node = pod_image_node(registry, node_folder, short_dir, plugin_env, credentials)
    try:
        node.ready(timeout=90)
        assert image in images_in_k8s(short_dir / "state" / "runtime" / "containerd.sock")
        answered = r'"(HEAD|GET) /v2/origin-pod/manifests/v3\.11\.0 HTTP/1\.1" 200 '
        assert re.search(answered, registry.requests())  # htpasswd let the pull in
    finally:
        assert node.stop() == 0
    assert "pull-s3cret" not in node.stderr()


def test_a_mirror_that_refuses_the_credentials_is_a_warning_naming_it(
    registry: Registry, make_config
) -> None:
    from nodehost.plugins.runtime.checks import mirror_checks

    def check(password: str) -> tuple[str, str]:
        config = make_config(
            containerRuntime={
                "registries": {
                    "mirrors": {UPSTREAM: {"endpoint": [registry.url]}},
                    "configs": {
                        f"127.0.0.1:{registry.port}": {
                            "auth": {"username": "puller", "password": password}
                        }
                    },
                }
            }
        )
        [line] = mirror_checks(read_settings(config)[0].registries)
        assert line.name == f"runtime.mirror.{UPSTREAM}"
        return line.result.value, line.found

    assert check("pull-s3cret") == ("ok", f"{registry.url} answers /v2/ (HTTP 200)")
    assert check("wrong") == (
        "warning",
        f"{registry.url} refuses the credentials of configs.127.0.0.1:{registry.port} (HTTP 401)",
    )


@pytest.mark.needs("containerd", "docker-registry", "nodehost-script")
def test_nodehost_check_says_whether_each_mirror_answers(
    registry: Registry, node_folder, short_dir: Path, plugin_env
) -> None:
    import json
    import sys

    dead = f"http://127.0.0.1:{free_port()}"
    config = node_folder(
        f"""\
        containerRuntime:
          registries:
            mirrors:
              {UPSTREAM}:
                endpoint: ["{registry.url}", "{dead}"]
              quay.io:
                endpoint: ["{registry.url}"]
            configs:
              127.0.0.1:{registry.port}:
                auth: {{username: puller, password: pull-s3cret}}
        """
    )
    done = subprocess.run(
        [str(Path(sys.executable).parent / "nodehost"), "check", f"--config={config}",
         f"--state-dir={short_dir / 'state'}", "--components=runtime", "--json"],
        capture_output=True, text=True, env=plugin_env, timeout=120,
    )  # fmt: skip
    checks = {row["name"]: row for row in json.loads(done.stdout)["checks"]}
    down = checks[f"runtime.mirror.{UPSTREAM}"]
    assert (down["result"], down["found"]) == (
        "warning",
        f"{registry.url} answers /v2/ (HTTP 200); {dead} does not answer /v2/: "
        "[Errno 111] Connection refused",
    )
    assert dead in down["fix"] and registry.url not in down["fix"]
    assert checks["runtime.mirror.quay.io"]["result"] == "ok"
    assert "pull-s3cret" not in done.stdout + done.stderr


@pytest.mark.needs("root", "containerd", "busybox", "docker-registry", "nodehost-script")
@pytest.mark.usefixtures("outside_guard")
def test_an_image_pushed_under_a_rewritten_name_is_pulled_by_its_original_name(
    registry: Registry, node_folder, short_dir: Path, plugin_env
) -> None:
    push(registry, "mirrorproject/team/busybox", "1", oci_image())
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there: the next one is tried
    rule = '"^team/(?P<rest>.*)$": "mirrorproject/team/${rest}"'
    config = node_folder(mirror_config(registry, [dead, registry.url], rule))
    components = "mirror-rewrite,runtime,images"
    node, socket = start_with_pod_archive(config, short_dir, plugin_env, components)
    try:
        node.ready()
        assert cri_pull(socket, f"{UPSTREAM}/team/busybox:1").startswith("sha256:")
        assert f"{UPSTREAM}/team/busybox:1" in images_in_k8s(socket)
        assert "/v2/mirrorproject/team/busybox/manifests/1 " in registry.requests()
        [line] = [e for e in node.logs() if e["event"] == "mirror rewrite"]
        assert (line["name"], line["rewritten"], line["endpoint"]) == (
            "team/busybox", "mirrorproject/team/busybox", registry.url,
        )  # fmt: skip
    finally:
        assert node.stop() == 0
    assert "pull-s3cret" not in node.stderr()


class Redirector:
    """An endpoint that answers every request with a 307 to ``target`` (as a registry whose
    blobs and manifests live in other storage does), on a free loopback port."""

    def __init__(self, target: str) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.seen: list[tuple[str, str | None]] = []
        seen = self.seen

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((self.path, self.headers.get("Authorization")))
                self.send_response(307)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_HEAD = do_GET  # noqa: N815 - http.server's name

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.needs("root", "containerd", "busybox", "docker-registry", "nodehost-script")
@pytest.mark.usefixtures("outside_guard")
def test_the_rewriting_proxy_follows_redirects_and_asks_tokens_for_the_rewritten_scope(
    node_folder, short_dir: Path, plugin_env
) -> None:
    from realregistry import TokenIssuer

    issuer = TokenIssuer(("puller", "pull-s3cret"))
    registry = Registry(short_dir / "token-registry", tokens=issuer)
    front = Redirector(registry.url)
    try:
        push(registry, "mirrorproject/team/busybox", "1", oci_image())
        issuer.scopes.clear()
        rule = '"^team/(.*)": "mirrorproject/team/$1"'
        config = node_folder(mirror_config(registry, [front.url], rule))
        config.write_text(
            config.read_text().replace(
                f"127.0.0.1:{registry.port}:", f"127.0.0.1:{front.url.rsplit(':', 1)[1]}:"
            )
        )
        components = "mirror-rewrite,runtime,images"
        node, socket = start_with_pod_archive(config, short_dir, plugin_env, components)
        try:
            node.ready()
            assert cri_pull(socket, f"{UPSTREAM}/team/busybox:1").startswith("sha256:")
            assert f"{UPSTREAM}/team/busybox:1" in images_in_k8s(socket)
        finally:
            assert node.stop() == 0
        assert issuer.scopes and set(issuer.scopes) == {
            "repository:mirrorproject/team/busybox:pull"
        }
        pulls = [(path, auth) for path, auth in front.seen if path != "/v2/"]  # not the probe
        assert pulls[0][0] == "/v2/mirrorproject/team/busybox/manifests/1"
        assert {auth for _, auth in pulls} == {"Basic cHVsbGVyOnB1bGwtczNjcmV0"}
        assert "pull-s3cret" not in node.stderr()
    finally:
        front.stop()
        registry.stop()
        issuer.stop()
