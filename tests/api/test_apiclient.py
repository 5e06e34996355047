"""The API client: retries with backoff, Retry-After, final errors, TLS checks, resuming watches."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from nodehost.api.client import (
    ClusterClient,
    ClusterError,
    ClusterRefused,
    ClusterTLSError,
    ClusterUnreachable,
)
from nodehost.backoff import Backoff
from nodehost.pki.kubeconfig import dump_kubeconfig
from nodehost.testing.apiserver import TestApiServer, TestCA

FAST = Backoff(initial=0.05, maximum=0.2)


def client(api: TestApiServer, deadline: float = 10, **kwargs) -> ClusterClient:
    return ClusterClient(
        str(api.admin_kubeconfig), deadline=time.monotonic() + deadline, backoff=FAST, **kwargs
    )


async def read_config_map(c: ClusterClient) -> dict:
    async with c:
        return await c.get("ConfigMap", "node-config", "openshift-node")


def test_a_429_is_retried_after_the_servers_retry_after(api) -> None:
    api.fail_next(1, 429, retry_after=1)
    retries: list[str] = []
    got = asyncio.run(read_config_map(client(api, on_retry=retries.append)))
    assert got["metadata"]["name"] == "node-config"
    [retry] = retries
    assert retry.endswith("retrying in 1.0s")  # the server's delay; FAST backs off <= 0.2s


def test_5xx_answers_are_retried_until_one_succeeds(api) -> None:
    api.fail_next(3, 503)
    retries: list[str] = []
    got = asyncio.run(read_config_map(client(api, on_retry=retries.append)))
    assert got["kind"] == "ConfigMap"
    assert len(retries) == 3 and "503" in retries[0]


def test_a_403_is_final_and_not_retried(api) -> None:
    api.fail_next(1, 403)  # injected codes other than 429 come back as given
    with pytest.raises(ClusterRefused) as caught:
        asyncio.run(read_config_map(client(api)))
    assert caught.value.code == 403
    assert len(api.requests) == 1


def test_a_404_is_final_and_names_the_object(api) -> None:
    async def missing() -> None:
        async with client(api) as c:
            await c.get("ConfigMap", "nope", "openshift-node")

    with pytest.raises(ClusterRefused, match='"nope" not found') as caught:
        asyncio.run(missing())
    assert caught.value.code == 404


def test_an_unreachable_server_gives_up_at_the_deadline(api) -> None:
    """Retries stop where the next delay would pass the deadline, and the count is reported."""
    api.go_down()
    retries: list[str] = []
    with pytest.raises(ClusterUnreachable, match=r"gave up after (\d+) attempt") as caught:
        asyncio.run(read_config_map(client(api, deadline=2, on_retry=retries.append)))
    delays = [float(r.rsplit("retrying in ", 1)[1].rstrip("s")) for r in retries]
    assert sum(delays) <= 2.0
    assert f"gave up after {len(retries) + 1} attempt(s)" in str(caught.value)


def test_a_server_that_comes_up_late_is_reached(api) -> None:
    api.go_down()
    retries: list[str] = []

    def retried(message: str) -> None:
        retries.append(message)
        if len(retries) == 2:
            api.come_up()  # after two failed attempts

    assert asyncio.run(read_config_map(client(api, on_retry=retried)))["kind"] == "ConfigMap"
    assert len(retries) == 2


def test_a_certificate_from_another_ca_fails_at_once(api, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "wrong.kubeconfig"
    kubeconfig.write_bytes(
        dump_kubeconfig(api.token_kubeconfig("abcdef.0123456789abcdef", TestCA().pem))
    )
    retries: list[str] = []
    wrong = ClusterClient(
        str(kubeconfig), deadline=time.monotonic() + 10, backoff=FAST, on_retry=retries.append
    )
    with pytest.raises(ClusterTLSError, match="not trusted"):
        asyncio.run(read_config_map(wrong))
    assert retries == []  # no second attempt: retrying cannot fix a wrong CA


def test_a_kubeconfig_that_does_not_load_is_one_clear_error(tmp_path: Path) -> None:
    from nodehost.api.client import ClusterError

    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("clusters: [\n")
    with pytest.raises(ClusterError, match=f"cannot load kubeconfig {broken}"):
        ClusterClient(str(broken))


def test_wait_for_resumes_after_the_watch_is_dropped(api) -> None:
    def later() -> None:
        api.wait_for_watches(1)
        api.drop_watches()
        api.wait_for_watches(2)  # the client watches again
        api.put_config_map("openshift-node", "node-config", {"ready": "yes"})

    async def wait() -> dict:
        async with client(api) as c:
            return await c.wait_for(
                "ConfigMap",
                "node-config",
                lambda obj: (obj.get("data") or {}).get("ready") == "yes",
                "openshift-node",
            )

    threading.Thread(target=later).start()
    assert asyncio.run(wait())["data"] == {"ready": "yes"}


CONFIG_MAPS = "/api/v1/namespaces/openshift-node/configmaps"


async def follow_until(api: TestApiServer, wanted: str, **kwargs) -> list[dict]:
    """Follow the config map until its ``data.v`` is ``wanted``; every version seen."""
    seen: list[dict] = []
    async with client(api) as c:
        versions = c.follow("ConfigMap", "node-config", "openshift-node", **kwargs)
        async with contextlib.aclosing(versions):
            async for obj in versions:
                seen.append(obj)
                if (obj.get("data") or {}).get("v") == wanted:
                    return seen
    raise AssertionError("follow ended")


def drop_then_change(api: TestApiServer) -> None:
    """Once the watch follows the store (so the drop ends it): drop it, then change the
    config map twice."""
    api.wait_for_watches(1)
    api.drop_watches()
    change(api, "1", "2")


def change(api: TestApiServer, *values: str) -> None:
    for value in values:
        api.put_config_map("openshift-node", "node-config", {"v": value})


def test_follow_yields_each_version_and_resumes_a_dropped_watch_from_the_last_one(api) -> None:
    first = api.store.get("configmaps", "openshift-node", "node-config")["metadata"]
    threading.Thread(target=drop_then_change, args=(api,)).start()
    seen = asyncio.run(follow_until(api, "2"))
    assert [(o.get("data") or {}).get("v") for o in seen] == [None, "1", "2"]
    watches = [p for _, p, _ in api.requests if p.startswith(CONFIG_MAPS) and "watch" in p]
    assert len(watches) >= 2
    assert all(f"resourceVersion={first['resourceVersion']}" in path for path in watches)
    reads = [p for m, p, _ in api.requests if m == "GET" and p.startswith(f"{CONFIG_MAPS}/")]
    assert len(reads) == 1  # resumed from the version, not read again


def test_follow_since_a_version_yields_only_later_ones(api) -> None:
    version = api.store.get("configmaps", "openshift-node", "node-config")["metadata"]
    change(api, "1", "2")
    seen = asyncio.run(follow_until(api, "2", since=version["resourceVersion"]))
    assert [(o.get("data") or {}).get("v") for o in seen] == ["1", "2"]
    assert not [p for m, p, _ in api.requests if m == "GET" and p.startswith(f"{CONFIG_MAPS}/")]


def test_follow_gives_up_after_the_failures_it_was_allowed(api) -> None:
    async def follow() -> None:
        async with client(api) as c:
            async for _ in c.follow("ConfigMap", "node-config", "openshift-node", give_up_after=2):
                api.go_down()

    with pytest.raises(ClusterUnreachable, match="watch ConfigMap node-config"):
        asyncio.run(follow())


# --- credentials, TLS and timeouts, as the kubeconfig gives them ----------------------------


def write_kubeconfig(path: Path, api: TestApiServer, user: dict) -> Path:
    """A one-context kubeconfig for ``api`` (verified against its CA) with ``user``."""
    document = api.token_kubeconfig("unused")
    document["users"][0]["user"] = user
    path.write_bytes(dump_kubeconfig(document))
    return path


def test_the_in_cluster_token_file_is_read_again_after_a_401(
    api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kubelet rotates a service account's token: a 401 means read the file again."""
    folder = api.service_account(tmp_path / "sa")
    monkeypatch.setenv("NODEHOST_SERVICE_ACCOUNT_DIR", str(folder))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", api.host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(api.port))
    (folder / "token").write_text("revoked")

    async def twice() -> dict:
        async with ClusterClient("", deadline=time.monotonic() + 10, backoff=FAST) as c:
            with pytest.raises(ClusterRefused) as refused:
                await c.get("ConfigMap", "node-config", "openshift-node")
            assert refused.value.code == 401
            api.service_account(folder)  # a new token in the same file
            return await c.get("ConfigMap", "node-config", "openshift-node")

    assert asyncio.run(twice())["metadata"]["name"] == "node-config"


def test_without_a_ca_the_system_cas_are_used_and_the_test_ca_is_not_one(
    api, tmp_path: Path
) -> None:
    sa = api.service_account(tmp_path / "sa")
    user = {"tokenFile": str(sa / "token")}
    kubeconfig = write_kubeconfig(tmp_path / "no-ca.kubeconfig", api, user)
    document = yaml.safe_load(kubeconfig.read_text())
    del document["clusters"][0]["cluster"]["certificate-authority-data"]
    kubeconfig.write_text(yaml.safe_dump(document))
    with pytest.raises(ClusterTLSError, match="not trusted"):
        asyncio.run(read_config_map(ClusterClient(str(kubeconfig), backoff=FAST)))
    document["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    kubeconfig.write_text(yaml.safe_dump(document))
    insecure = ClusterClient(str(kubeconfig), backoff=FAST)  # turned off by name: no check
    assert asyncio.run(read_config_map(insecure))["metadata"]["name"] == "node-config"


def test_insecure_skip_tls_verify_beside_a_ca_still_verifies(api, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "wrong-ca.kubeconfig"
    document = api.token_kubeconfig("abcdef.0123456789abcdef", TestCA().pem)
    document["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    kubeconfig.write_bytes(dump_kubeconfig(document))
    with pytest.raises(ClusterTLSError, match="not trusted"):
        asyncio.run(read_config_map(ClusterClient(str(kubeconfig), backoff=FAST)))


def test_a_server_that_never_answers_times_out_and_is_retried(api, tmp_path: Path) -> None:
    """Each request has its timeout: a server that accepts and says nothing is a retried
    failure, until the deadline."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        document = api.token_kubeconfig("abcdef.0123456789abcdef")
        document["clusters"][0]["cluster"]["server"] = (
            f"https://127.0.0.1:{silent.getsockname()[1]}"
        )
        kubeconfig = tmp_path / "silent.kubeconfig"
        kubeconfig.write_bytes(dump_kubeconfig(document))
        retries: list[str] = []
        c = ClusterClient(
            str(kubeconfig), timeout=0.2, deadline=time.monotonic() + 1.5, backoff=FAST,
            on_retry=retries.append,
        )  # fmt: skip
        with pytest.raises(ClusterUnreachable, match="no complete answer"):
            asyncio.run(read_config_map(c))
    assert retries and all("no complete answer within 0.2s" in retry for retry in retries)


def test_rotated_client_certificate_files_are_read_again(api, tmp_path: Path) -> None:
    """Certificate rotation swaps the files a kubeconfig names: the next connection uses the
    new pair, as client-go reloads them (here the first pair is from a CA the server does not
    trust, so the server refuses it until the files are swapped)."""
    cert, key = tmp_path / "client.crt", tmp_path / "client.key"

    def install(pair: tuple[bytes, bytes]) -> None:
        for path, pem in zip((cert, key), pair, strict=True):
            path.with_suffix(".new").write_bytes(pem)
            path.with_suffix(".new").replace(path)

    install(TestCA().client_pair("admin", ["system:masters"]))
    user = {"client-certificate": cert.name, "client-key": key.name}
    kubeconfig = write_kubeconfig(tmp_path / "files.kubeconfig", api, user)
    retries: list[str] = []

    def rotated(message: str) -> None:
        retries.append(message)
        install(api.ca.client_pair("admin", ["system:masters"]))

    c = ClusterClient(
        str(kubeconfig), deadline=time.monotonic() + 10, backoff=FAST, on_retry=rotated
    )
    assert asyncio.run(read_config_map(c))["metadata"]["name"] == "node-config"
    assert len(retries) == 1


# --- credentials that cannot be sent, and answers that cannot be trusted ---------------------


@pytest.mark.parametrize("token", ["secret-abc\nX-Evil: 1", "sécret", "two words", ""])
def test_a_token_no_header_may_carry_is_one_final_error_that_does_not_show_it(
    api, tmp_path: Path, token: str
) -> None:
    """A token file with a newline, a non-ASCII character or a space: one final error naming
    the file, no retry, no traceback, and the token in no message (retry messages go to the
    log and to systemd's STATUS=)."""
    (tmp_path / "token").write_text(f"{token}\n" if token else "\n")
    kubeconfig = write_kubeconfig(tmp_path / "t.kubeconfig", api, {"tokenFile": "token"})
    retries: list[str] = []
    c = ClusterClient(str(kubeconfig), deadline=time.monotonic() + 10, backoff=FAST,
                      on_retry=retries.append)  # fmt: skip
    with pytest.raises(ClusterError) as caught:
        asyncio.run(read_config_map(c))
    assert not isinstance(caught.value, ClusterUnreachable) and retries == []
    assert "token file token is not a bearer token" in str(caught.value)
    assert (token.split()[0] if token.strip() else "\n") not in str(caught.value)


def test_a_bad_inline_token_is_a_kubeconfig_error(api, tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "t.kubeconfig", api, {"token": "sécret"})
    with pytest.raises(
        ClusterError, match=r"cannot load kubeconfig .*not a bearer token"
    ) as caught:
        ClusterClient(str(kubeconfig))
    assert "sécret" not in str(caught.value)


@pytest.mark.parametrize("value", ["false", "yes", 1])
def test_insecure_skip_tls_verify_must_be_a_boolean(api, tmp_path: Path, value: object) -> None:
    """``insecure-skip-tls-verify: "false"`` must not turn verification off (a non-empty string
    is truthy); client-go refuses anything but a boolean there."""
    sa = api.service_account(tmp_path / "sa")
    kubeconfig = write_kubeconfig(tmp_path / "i.kubeconfig", api, {"tokenFile": str(sa / "token")})
    document = yaml.safe_load(kubeconfig.read_text())
    del document["clusters"][0]["cluster"]["certificate-authority-data"]
    document["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = value
    kubeconfig.write_text(yaml.safe_dump(document))
    with pytest.raises(ClusterError, match=r"insecure-skip-tls-verify is .*not true or false"):
        ClusterClient(str(kubeconfig))


@pytest.mark.parametrize("version", ["v1", "v1beta1"])
def test_exec_plugins_of_the_ga_and_beta_versions_give_the_token(
    api, tmp_path: Path, version: str
) -> None:
    token = (api.service_account(tmp_path / "sa") / "token").read_text()
    plugin = {
        "apiVersion": f"client.authentication.k8s.io/{version}",
        "command": sys.executable,
        "args": ["-c", f"print({json.dumps(json.dumps({'status': {'token': token}}))})"],
    }
    kubeconfig = write_kubeconfig(tmp_path / "exec.kubeconfig", api, {"exec": plugin})
    c = ClusterClient(str(kubeconfig), deadline=time.monotonic() + 10, backoff=FAST)
    assert asyncio.run(read_config_map(c))["metadata"]["name"] == "node-config"


def test_an_exec_plugin_that_hangs_is_ended_at_its_timeout(
    api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nodehost.api.client as apiclient

    monkeypatch.setattr(apiclient, "EXEC_TIMEOUT", 2.0)
    pid_file = tmp_path / "plugin.pid"
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": "sh",
        "args": ["-c", f"echo $$ > {pid_file}; exec sleep 600"],
    }
    kubeconfig = write_kubeconfig(tmp_path / "exec.kubeconfig", api, {"exec": plugin})
    retries: list[str] = []
    c = ClusterClient(
        str(kubeconfig), deadline=time.monotonic() + 3, backoff=FAST, on_retry=retries.append
    )
    with pytest.raises(ClusterUnreachable):  # the second try is cut by the deadline
        asyncio.run(read_config_map(c))
    assert "gave no token within 2s" in retries[0]
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # killed and reaped, not left running
        os.kill(pid, 0)


class RawServer:
    """A plain-HTTP server on a free loopback port that answers each connection's requests
    with the bytes ``answers(connection_number, request_number)`` gives (None: close)."""

    def __init__(self, answers, close_after_answer: bool = False) -> None:
        self.answers = answers
        self.close_after_answer = close_after_answer
        self.requests: list[bytes] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        for number in range(1000):
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn, number), daemon=True).start()

    def _connection(self, conn: socket.socket, number: int) -> None:
        with conn:
            for request_number in range(100):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                self.requests.append(data)
                answer = self.answers(number, request_number)
                if answer is None:
                    return
                conn.sendall(answer)
                if self.close_after_answer:
                    return

    def kubeconfig(self, path: Path) -> Path:
        document = {
            "apiVersion": "v1", "kind": "Config", "current-context": "c",
            "clusters": [{"name": "c", "cluster": {"server": self.url}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "users": [{"name": "u", "user": {}}],
        }  # fmt: skip
        path.write_bytes(dump_kubeconfig(document))
        return path


def answer(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def test_bytes_after_an_answer_are_never_read_as_the_next_answer(tmp_path: Path) -> None:
    """A server that sends more than its Content-Length: the extra bytes could pass for the
    answer to the next request on that connection; the connection is not kept."""
    forged = answer(b'{"a": "forged"}')
    server = RawServer(lambda conn, n: answer(b'{"a": "%d"}' % conn) + forged)

    async def twice() -> list:
        async with ClusterClient(str(server.kubeconfig(tmp_path / "raw"))) as c:
            return [await c.request("GET", "/one"), await c.request("GET", "/two")]

    assert asyncio.run(twice()) == [{"a": "0"}, {"a": "1"}]


def test_a_post_on_a_kept_connection_the_server_closed_is_not_sent_again(tmp_path: Path) -> None:
    """The server read the POST and closed without answering: it may have acted on it, so
    the request is not replayed on a new connection (a GET would be)."""
    server = RawServer(lambda conn, n: answer(b"{}") if (conn, n) == (0, 0) or conn > 0 else None)

    async def get_then_post() -> None:
        async with ClusterClient(str(server.kubeconfig(tmp_path / "raw"))) as c:
            await c.request("GET", "/keep")
            await c.request("POST", "/create", {"kind": "Event"})

    with pytest.raises(Exception, match="closed the connection without answering"):
        asyncio.run(get_then_post())
    assert [r.split(b" ")[0] for r in server.requests] == [b"GET", b"POST"]


def test_a_kept_connection_the_server_closed_while_idle_is_not_used(tmp_path: Path) -> None:
    """The server closed the kept connection after answering: the POST goes out once, on a
    new connection, and succeeds (a POST is never replayed, so it must not meet a dead one)."""
    server = RawServer(lambda conn, n: answer(b"{}"), close_after_answer=True)

    async def get_then_post() -> object:
        async with ClusterClient(str(server.kubeconfig(tmp_path / "raw"))) as c:
            await c.request("GET", "/keep")
            while not c._http._idle[-1].reader.at_eof():  # the client has seen the close
                await asyncio.sleep(0.01)
            return await c.request("POST", "/create", {"kind": "Event"})

    assert asyncio.run(get_then_post()) == {}
    assert [r.split(b" ")[0] for r in server.requests] == [b"GET", b"POST"]


def test_a_cancelled_request_does_not_leave_its_connection_open(tmp_path: Path) -> None:
    server = RawServer(lambda conn, n: (time.sleep(30), None)[1])  # reads, never answers

    async def cancelled() -> tuple[int, int]:
        async with ClusterClient(str(server.kubeconfig(tmp_path / "raw"))) as c:
            task = asyncio.create_task(c.request("GET", "/slow"))
            while not server.requests:
                await asyncio.sleep(0.01)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return len(_open_transports(server.port)), len(c._http._idle)

    assert asyncio.run(cancelled()) == (0, 0)


def _open_transports(port: int) -> list:
    """The asyncio transports still open to ``port`` on loopback."""
    import gc

    return [o for o in gc.get_objects()
            if isinstance(o, asyncio.Transport) and not o.is_closing()
            and (o.get_extra_info("peername") or ("", 0))[1] == port]  # fmt: skip


# --- proxies ---------------------------------------------------------------------------------


class ConnectProxy:
    """An HTTP proxy on a free loopback port that opens ``CONNECT`` tunnels (or refuses them
    with ``refuse``) and records each request head."""

    def __init__(self, refuse: bytes = b"") -> None:
        self.refuse = refuse
        self.heads: list[bytes] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start()

    def _tunnel(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk:
                conn.close()
                return
            head += chunk
        self.heads.append(head)
        if self.refuse:
            conn.sendall(self.refuse)
            conn.close()
            return
        host, _, port = head.split(b" ")[1].decode().rpartition(":")
        upstream = socket.create_connection((host, int(port)))
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for source, sink in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def proxied_kubeconfig(api: TestApiServer, tmp_path: Path, proxy_url: str) -> Path:
    sa = api.service_account(tmp_path / "sa")
    kubeconfig = write_kubeconfig(tmp_path / "p.kubeconfig", api, {"tokenFile": str(sa / "token")})
    document = yaml.safe_load(kubeconfig.read_text())
    document["clusters"][0]["cluster"]["proxy-url"] = proxy_url
    kubeconfig.write_text(yaml.safe_dump(document))
    return kubeconfig


def test_a_proxy_url_tunnels_the_verified_connection_through_the_proxy(api, tmp_path: Path) -> None:
    proxy = ConnectProxy()
    user_url = proxy.url.replace("http://", "http://node%40x:s%3Acret@")
    c = ClusterClient(str(proxied_kubeconfig(api, tmp_path, user_url)), backoff=FAST)
    assert asyncio.run(read_config_map(c))["metadata"]["name"] == "node-config"
    [head] = proxy.heads
    assert head.startswith(f"CONNECT {api.host}:{api.port} HTTP/1.1\r\n".encode())
    assert b"Proxy-Authorization: Basic bm9kZUB4OnM6Y3JldA==\r\n" in head  # node@x:s:cret


def test_a_proxy_that_refuses_the_tunnel_is_named_in_the_error(api, tmp_path: Path) -> None:
    proxy = ConnectProxy(refuse=b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
    kubeconfig = proxied_kubeconfig(api, tmp_path, proxy.url)
    c = ClusterClient(str(kubeconfig), deadline=time.monotonic() + 0.3, backoff=FAST)
    with pytest.raises(ClusterUnreachable, match=r"refused CONNECT .*407 Proxy Authentication"):
        asyncio.run(read_config_map(c))


@pytest.mark.parametrize(
    ("server", "environment", "expected"),
    [
        ("https://api.example.com:6443", {"HTTPS_PROXY": "proxy:3128"}, "proxy:3128"),
        ("https://api.example.com:6443", {"https_proxy": "http://p:8080"}, "p:8080"),
        ("http://api.example.com", {"HTTPS_PROXY": "p:1"}, None),  # http uses HTTP_PROXY
        ("http://api.example.com", {"HTTP_PROXY": "p:1"}, "p:1"),
        ("https://api.example.com", {"HTTPS_PROXY": "p:1", "NO_PROXY": "example.com"}, None),
        ("https://api.example.com", {"HTTPS_PROXY": "p:1", "NO_PROXY": ".example.com"}, None),
        ("https://api.example.com", {"HTTPS_PROXY": "p:1", "NO_PROXY": "ample.com"}, "p:1"),
        ("https://api.example.com", {"HTTPS_PROXY": "p:1", "NO_PROXY": "*"}, None),
        (
            "https://api.example.com:6443",
            {"HTTPS_PROXY": "p:1", "no_proxy": "x,api.example.com:6443"},
            None,
        ),
        (
            "https://api.example.com:6443",
            {"HTTPS_PROXY": "p:1", "NO_PROXY": "api.example.com:443"},
            "p:1",
        ),
        ("https://10.1.2.3", {"HTTPS_PROXY": "p:1", "NO_PROXY": "10.0.0.0/8"}, None),
        ("https://10.1.2.3", {"HTTPS_PROXY": "p:1", "NO_PROXY": "192.168.0.0/16"}, "p:1"),
        ("https://127.0.0.1:6443", {"HTTPS_PROXY": "p:1"}, None),  # loopback goes direct
        ("https://[::1]:6443", {"HTTPS_PROXY": "p:1"}, None),
        ("https://localhost:6443", {"HTTPS_PROXY": "p:1"}, None),
        ("https://api.example.com", {}, None),
    ],
)
def test_the_proxy_comes_from_the_environment_as_go_reads_it(
    monkeypatch: pytest.MonkeyPatch, server: str, environment: dict, expected: str | None
) -> None:
    from nodehost.api.client import _proxy_for

    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    proxy = _proxy_for(server, None)
    assert (proxy.name if proxy else None) == expected


def test_a_socks_proxy_is_one_clear_kubeconfig_error(api, tmp_path: Path) -> None:
    kubeconfig = proxied_kubeconfig(api, tmp_path, "socks5://127.0.0.1:1080")
    with pytest.raises(ClusterError, match="not an http:// proxy"):
        ClusterClient(str(kubeconfig))


def test_tls_server_name_is_the_name_the_certificate_is_checked_against(
    api, tmp_path: Path
) -> None:
    """``tls-server-name`` (client-go's ServerName): the server is reached at its address, its
    certificate checked for that name instead."""
    sa = api.service_account(tmp_path / "sa")
    kubeconfig = write_kubeconfig(tmp_path / "n.kubeconfig", api, {"tokenFile": str(sa / "token")})
    document = yaml.safe_load(kubeconfig.read_text())
    document["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{api.port}"
    document["clusters"][0]["cluster"]["tls-server-name"] = "localhost"
    kubeconfig.write_text(yaml.safe_dump(document))
    c = ClusterClient(str(kubeconfig), backoff=FAST)
    assert asyncio.run(read_config_map(c))["metadata"]["name"] == "node-config"
    document["clusters"][0]["cluster"]["tls-server-name"] = "api.elsewhere.example"
    kubeconfig.write_text(yaml.safe_dump(document))
    with pytest.raises(ClusterTLSError) as refused:
        asyncio.run(read_config_map(ClusterClient(str(kubeconfig), backoff=FAST)))
    assert "valid for localhost, 127.0.0.1, not for api.elsewhere.example" in str(refused.value)
    assert "certificate authority" not in str(refused.value)  # the CA is right: say the names


def test_connections_keep_tcp_keepalive_as_go_does(tmp_path: Path) -> None:
    """A watch waits without a read timeout: TCP keep-alive is what ends one whose peer
    vanished.  Go's dialer turns it on (15 s idle, 15 s interval, 9 probes); so does this."""
    server = RawServer(lambda conn, n: answer(b"{}"))

    async def options() -> tuple[int, ...]:
        async with ClusterClient(str(server.kubeconfig(tmp_path / "raw"))) as c:
            await c.request("GET", "/keep")
            sock = c._http._idle[-1].writer.get_extra_info("socket")
            return (
                sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
            )

    assert asyncio.run(options()) == (1, 15, 15, 9)


def test_a_servers_retry_after_is_honoured_up_to_a_minute(api) -> None:
    """``Retry-After: 3600`` from a confused server does not park the node for an hour."""
    from nodehost.api.client import RETRY_AFTER_LIMIT, _StatusError

    c = client(api)
    assert c._retry_after("get", _StatusError(429, b"", "2"))[0] == 2.0
    assert c._retry_after("get", _StatusError(429, b"", "3600"))[0] == RETRY_AFTER_LIMIT == 60.0


def test_connections_kept_with_a_rotated_certificate_are_closed(api, tmp_path: Path) -> None:
    """After the client certificate files change, the next request does not reuse a kept
    connection that presents the old pair (client-go closes them too)."""
    cert, key = tmp_path / "client.crt", tmp_path / "client.key"

    def install(pair: tuple[bytes, bytes]) -> None:
        for path, pem in zip((cert, key), pair, strict=True):
            path.with_suffix(".new").write_bytes(pem)
            path.with_suffix(".new").replace(path)

    install(api.ca.client_pair("admin", ["system:masters"]))
    user = {"client-certificate": cert.name, "client-key": key.name}
    kubeconfig = write_kubeconfig(tmp_path / "files.kubeconfig", api, user)

    async def across_a_rotation() -> tuple[bool, bool]:
        async with ClusterClient(str(kubeconfig), backoff=FAST) as c:
            await c.get("ConfigMap", "node-config", "openshift-node")
            before = c._http._idle[-1]
            install(api.ca.client_pair("admin", ["system:masters"]))
            await c.get("ConfigMap", "node-config", "openshift-node")
            return c._http._idle[-1] is before, before.writer.is_closing()

    assert asyncio.run(across_a_rotation()) == (False, True)


def test_a_watch_line_nested_past_the_limit_ends_the_watch_not_the_node() -> None:
    """The one JSON loader: a RecursionError of the parser would escape every handler."""
    from nodehost.api.client import WatchEnded, _watch_event

    deep = b'{"type": "ADDED", "object": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(WatchEnded, match="not a watch event"):
        _watch_event(deep, "watch ConfigMap x")


def test_a_lone_surrogate_in_an_object_decodes_as_go_does() -> None:
    from nodehost.api.client import _watch_event

    line = b'{"type": "ADDED", "object": {"data": {"k": "a\\ud800b"}}}'
    assert _watch_event(line, "watch ConfigMap x") == ("ADDED", {"data": {"k": "a\ufffdb"}})


def test_an_inline_client_certificate_is_loaded_without_a_temporary_file(api) -> None:
    """The kubeconfig's ``client-key-data`` reaches OpenSSL through a memory file: no
    ``tempfile`` (nor the ``shutil`` and compressors it imports) in a running node."""
    assert "client-key-data" in Path(api.admin_kubeconfig).read_text()
    probe = (
        "import sys; from nodehost.api.client import ClusterClient; "
        f"ClusterClient({str(api.admin_kubeconfig)!r}); "
        "print(sorted({'tempfile', 'shutil'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    assert asyncio.run(read_config_map(client(api)))["kind"] == "ConfigMap"


@pytest.mark.parametrize("failure", ["no memfd_create", "no /proc"])
def test_an_inline_client_certificate_loads_without_memfd_or_proc(
    api, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    """A seccomp filter or an old kernel refusing ``memfd_create``, or a missing ``/proc``:
    the key reaches OpenSSL through a private temporary file instead, and the client
    connects."""
    import errno
    import ssl

    if failure == "no memfd_create":

        def refused(*args: object) -> int:
            raise OSError(errno.ENOSYS, "Function not implemented")

        monkeypatch.setattr(os, "memfd_create", refused)
    else:
        load = ssl.SSLContext.load_cert_chain

        def without_proc(self: ssl.SSLContext, certfile: str, *args: object) -> None:
            if str(certfile).startswith("/proc/"):
                raise FileNotFoundError(errno.ENOENT, "No such file or directory")
            load(self, certfile, *args)  # type: ignore[arg-type]

        monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", without_proc)
    assert asyncio.run(read_config_map(client(api)))["kind"] == "ConfigMap"
