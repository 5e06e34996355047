"""Helpers of the DNS tests: records files, the real server as a child process, dnsmasq, dig.

The test modules import ``dnsrun`` by name (``conftest`` puts this folder on ``sys.path``)."""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import pytest
import yaml

from nodehost.testing.parts import find_program

DIG = find_program("dig")
DNSMASQ = find_program("dnsmasq")
needs_dig = pytest.mark.needs("dig")
needs_dnsmasq = pytest.mark.needs("dnsmasq")

DOMAIN = "cluster.local"

#: The records every client test uses: one of each kind of service.
RECORDS: dict[str, Any] = {
    "services": [
        {
            "name": "web",
            "namespace": "default",
            "clusterIP": "172.30.0.10",
            "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}],
        },
        {
            "name": "kubernetes",
            "namespace": "default",
            "clusterIP": "172.30.0.1",
            "ports": [{"name": "https", "port": 443}],
        },
        {
            "name": "db",
            "namespace": "prod",
            "clusterIP": "None",
            "ports": [{"name": "pg", "port": 5432}],
        },
        {"name": "search", "namespace": "default", "externalName": "www.example.com"},
        {"name": "v6", "namespace": "default", "clusterIP": "fd00::10"},
        {"name": "many", "namespace": "default", "clusterIP": "None"},
    ],
    "endpoints": [
        {
            "name": "db",
            "namespace": "prod",
            "subsets": [
                {
                    "addresses": [{"ip": "10.128.0.5", "hostname": "db-0"}, {"ip": "10.128.0.6"}],
                    "ports": [{"name": "pg", "port": 5432}],
                }
            ],
        },
        {
            "name": "web",
            "namespace": "default",
            "subsets": [
                {"addresses": [{"ip": "10.128.1.5"}], "ports": [{"name": "http", "port": 8080}]}
            ],
        },
        {
            "name": "kubernetes",
            "namespace": "default",
            "subsets": [{"addresses": [{"ip": "10.0.0.2"}]}],
        },
        {
            "name": "many",
            "namespace": "default",
            "subsets": [{"addresses": [{"ip": f"10.129.0.{i}"} for i in range(1, 61)]}],
        },
    ],
}


def write_records(path: Path, data: dict[str, Any]) -> Path:
    """Write a records file atomically (the server may be polling it)."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(yaml.safe_dump(data))
    os.replace(temporary, path)
    return path


def fqdn(name: str) -> str:
    return f"{name}.{DOMAIN}."


class ChildLog:
    """A child's stderr, read line by line as it comes (the pipe never fills)."""

    def __init__(self, stream: Any) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._follow, args=(stream,), daemon=True)
        self._reader.start()

    def _follow(self, stream: Any) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = 30.0) -> None:
        """Block until a line containing ``text`` was logged; fail after ``timeout`` s."""
        with self._changed:
            if not self._changed.wait_for(lambda: any(text in x for x in self.lines), timeout):
                pytest.fail(f"no log line with {text!r} after {timeout}s: {''.join(self.lines)}")

    def text(self) -> str:
        """Everything logged, once the child has ended."""
        self._reader.join(10)
        return "".join(self.lines)


def stop_child(process: subprocess.Popen[str]) -> None:
    """SIGTERM, up to 10 s to exit, then SIGKILL."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class RunningServer:
    """``python -m nodehost.plugins.dns.server`` as a child process; its log in ``log``."""

    def __init__(self, args: Sequence[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nodehost.plugins.dns.server", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log = ChildLog(self.process.stderr)
        line = _read_line(self.process, timeout=20)
        if not line.startswith("ready "):
            self.process.kill()
            self.process.wait()
            pytest.fail(f"DNS server did not start: {line!r} {self.log.text()}")
        host, _, port = line.split()[1].rpartition(":")
        self.host, self.port = host.strip("[]"), int(port)

    def stop(self) -> tuple[int, str]:
        stop_child(self.process)
        return self.process.returncode, self.log.text()


def _read_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    if not ready:
        return "(no output)"
    return process.stdout.readline().strip()


def ask(
    server: Any, name: str, rdtype: str = "A", *, tcp: bool = False, timeout: float = 5, **make: Any
) -> dns.message.Message:
    """One dnspython query to ``server`` (anything with ``host`` and ``port``)."""
    query = dns.message.make_query(name, rdtype, **make)
    send = dns.query.tcp if tcp else dns.query.udp
    return send(query, server.host, port=server.port, timeout=timeout)


def answer_set(response: dns.message.Message) -> set[tuple[str, str, str]]:
    """The answer section as (owner, type, rdata) text triples, lower-case."""
    return {
        (rrset.name.to_text().lower(), dns.rdatatype.to_text(rrset.rdtype), rdata.to_text().lower())
        for rrset in response.answer
        for rdata in rrset
    }


def rcode(response: dns.message.Message) -> str:
    return dns.rcode.to_text(response.rcode())


def dig(server: Any, *args: str) -> str:
    """Run ``dig`` against ``server``; its stdout."""
    assert DIG is not None
    command = [DIG, f"@{server.host}", "-p", str(server.port), "+time=5", "+tries=1", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=True).stdout


class Dnsmasq:
    """A dnsmasq on loopback that forwards nothing (``--no-resolv``, ``--conf-file=/dev/null``)."""

    def __init__(self, port: int, args: Sequence[str], address: str = "127.0.0.1") -> None:
        assert DNSMASQ is not None
        self.host, self.port = address, port
        command = [
            DNSMASQ, "--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
            "--no-poll", "--bind-interfaces", f"--listen-address={address}", f"--port={port}",
            "--pid-file=", "--log-facility=-", *args,
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"dnsmasq exited: {self.process.communicate()[1].decode()}")
            try:
                query = dns.message.make_query("ready.invalid.", "A")
                dns.query.udp(query, self.host, port=self.port, timeout=0.2)
                return
            except (dns.exception.Timeout, OSError):
                continue
        pytest.fail("dnsmasq did not answer")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        self.process.communicate(timeout=10)


def free_udp_port(host: str = "127.0.0.1") -> int:
    """A port free for both UDP and TCP a moment ago (tries again when only UDP is free)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind((host, 0))
            port = udp.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp:
                try:
                    tcp.bind((host, port))
                except OSError:
                    continue
            return port
    raise OSError(f"no port on {host} is free for both UDP and TCP")


def _bound_pair(host: str) -> tuple[socket.socket, socket.socket]:
    """A UDP socket and a listening TCP socket bound to one free port of ``host``.

    Binds both halves while holding them, so another process cannot take the
    TCP half in between (a UDP-free port whose TCP half is taken is skipped).
    """
    for _ in range(100):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind((host, 0))
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tcp.bind((host, udp.getsockname()[1]))
        except OSError:
            udp.close()
            tcp.close()
            continue
        tcp.listen(16)
        return udp, tcp
    raise OSError(f"no port on {host} is free for both UDP and TCP")


class ScriptedUpstream:
    """An upstream resolver on loopback (UDP and TCP, in a thread) whose answers tests choose.

    By the question's first label: ``slow-*`` never answered; ``tc-*`` truncated
    over UDP and 40 A records over TCP; ``nx-*`` NXDOMAIN with an SOA (TTL 300,
    MINIMUM 60); ``short-*`` an A record with TTL 1; ``fail-*`` SERVFAIL;
    anything else an A record ``192.0.2.1`` with TTL 300.  ``asked`` counts the
    questions per (lower-case name, transport).
    """

    def __init__(self) -> None:
        import threading

        self.host = "127.0.0.1"
        self.udp, self.tcp = _bound_pair(self.host)
        self.port = self.udp.getsockname()[1]
        self.asked: dict[tuple[str, str], int] = {}
        self._stop = False
        self._threads = [
            threading.Thread(target=self._serve_udp, daemon=True),
            threading.Thread(target=self._serve_tcp, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def count(self, name: str, transport: str = "udp") -> int:
        return self.asked.get((name.lower(), transport), 0)

    def _answer(self, wire: bytes, transport: str) -> bytes | None:
        import dns.rrset

        query = dns.message.from_wire(wire)
        name = query.question[0].name.to_text().lower()
        self.asked[(name, transport)] = self.asked.get((name, transport), 0) + 1
        response = dns.message.make_response(query, recursion_available=True)
        label = name.split(".")[0]
        if label.startswith("slow"):
            return None
        if label.startswith("tc") and transport == "udp":
            response.flags |= dns.flags.TC
        elif label.startswith("tc"):
            addresses = [f"192.0.2.{i}" for i in range(1, 41)]
            response.answer.append(dns.rrset.from_text(name, 300, "IN", "A", *addresses))
        elif label.startswith("nx"):
            response.set_rcode(dns.rcode.NXDOMAIN)
            soa = "ns.example. host.example. 1 7200 900 1209600 60"
            response.authority.append(dns.rrset.from_text("example.", 300, "IN", "SOA", soa))
        elif label.startswith("fail"):
            response.set_rcode(dns.rcode.SERVFAIL)
        else:
            ttl = 1 if label.startswith("short") else 300
            response.answer.append(dns.rrset.from_text(name, ttl, "IN", "A", "192.0.2.1"))
        return response.to_wire()

    def _serve_udp(self) -> None:
        while not self._stop:
            try:
                wire, peer = self.udp.recvfrom(4096)
            except OSError:
                return
            reply = self._answer(wire, "udp")
            if reply is not None:
                self.udp.sendto(reply, peer)

    def _serve_tcp(self) -> None:
        while not self._stop:
            try:
                connection, _ = self.tcp.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(5)
                try:
                    (length,) = struct.unpack("!H", connection.recv(2))
                    reply = self._answer(connection.recv(length), "tcp")
                except (OSError, struct.error):
                    continue
                if reply is not None:
                    connection.sendall(struct.pack("!H", len(reply)) + reply)

    def close(self) -> None:
        self._stop = True
        self.udp.close()
        self.tcp.close()
