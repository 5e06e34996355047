"""Link types proved by making one, in a network namespace that exists only for the probe.

A missing kernel module is the usual surprise of a network provider: the
module list says little (built-ins, auto-loading), so :func:`probe_link_types`
asks the kernel itself: ``unshare --net`` gives a fresh network namespace
that ends with the probe's process, where ``ip link add`` makes one link of
each type (``macvlan`` and ``ipvlan`` on a veth made first).  The host's own
links are never touched.  Needs root (``CAP_SYS_ADMIN`` for the namespace).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence

from nodehost.binaries import which

#: ``ip link add`` arguments after the new link's name, per type.
LINK_ARGUMENTS = {
    "bridge": "type bridge",
    "veth": "type veth peer name nhpeer",
    "vxlan": "type vxlan id 4242 dstport 0",
    "macvlan": "link nhparent type macvlan mode bridge",
    "ipvlan": "link nhparent type ipvlan mode l2",
    "vlan": "link nhparent type vlan id 42",
    "dummy": "type dummy",
}
PARENT = "ip link add nhparent type veth peer name nhparent1"
TIMEOUT = 10.0


class ProbeUnavailable(Exception):
    """The probe cannot run here (not root, no ``unshare`` or ``ip``); the message says which."""


def probe_link_types(kinds: Sequence[str]) -> dict[str, str | None]:
    """``{kind: None}`` for each link type the kernel made, ``{kind: error}`` otherwise.

    Raises :class:`ProbeUnavailable` when no namespace can be made, and
    ``ValueError`` for a kind :data:`LINK_ARGUMENTS` does not know.
    """
    unknown = [kind for kind in kinds if kind not in LINK_ARGUMENTS]
    if unknown:
        raise ValueError(f"unknown link types: {', '.join(unknown)}")
    unshare, ip = which("unshare"), which("ip")
    if os.geteuid() != 0:
        raise ProbeUnavailable("needs root (a network namespace of its own)")
    if unshare is None or ip is None:
        raise ProbeUnavailable("needs unshare (util-linux) and ip (iproute2)")
    lines = [f"{shlex.quote(ip)} {PARENT.removeprefix('ip ')} >/dev/null 2>&1"]
    for index, kind in enumerate(kinds):
        command = f"{shlex.quote(ip)} link add nhprobe{index} {LINK_ARGUMENTS[kind]}"
        lines.append(
            f'if out=$({command} 2>&1); then echo "{kind} ok"; '
            f'else echo "{kind} $(echo $out | tr -s "\\n" " ")"; fi'
        )
    done = subprocess.run(
        [unshare, "--net", "--", "sh", "-c", "\n".join(lines)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    if done.returncode != 0 and not done.stdout:
        raise ProbeUnavailable(f"unshare --net failed: {done.stderr.strip()}")
    return _results(done.stdout, kinds)


def _results(output: str, kinds: Sequence[str]) -> dict[str, str | None]:
    results: dict[str, str | None] = dict.fromkeys(kinds, "no answer from the probe")
    for line in output.splitlines():
        kind, _, rest = line.partition(" ")
        if kind in results:
            results[kind] = None if rest == "ok" else rest.strip()
    return results
