"""The host-port chains the ``portmap`` plugin shares among all its users, removed once idle.

``portmap`` makes three chains in the ``nat`` table the first time any pod
gets a host port -- ``CNI-HOSTPORT-DNAT`` (jumped to from ``PREROUTING`` and
``OUTPUT``), ``CNI-HOSTPORT-SETMARK`` and ``CNI-HOSTPORT-MASQ`` (from
``POSTROUTING``) -- and its DEL leaves them, as other pods may still use them.
Once teardown has deleted every pod of nodehost's networks
(:mod:`nodehost.cni.attachments`), :func:`remove_idle_chains` removes them and
their jumps, but only while they are idle: ``CNI-HOSTPORT-DNAT`` holds no rule
(no pod of anyone's has a host port), the other two hold only the one rule
``portmap`` puts there, and no attachment left in libcni's cache was made
with a list that uses ``portmap``.  An idle chain changes no packet, and
``portmap`` makes it again at its next ADD.  Both ``iptables`` and
``ip6tables``; a missing program is skipped.
"""

from __future__ import annotations

import shlex
import subprocess

from nodehost.binaries import which

DNAT, SETMARK, MASQ = "CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-SETMARK", "CNI-HOSTPORT-MASQ"
#: How many rules each chain holds when idle.
_IDLE_RULES = {DNAT: 0, SETMARK: 1, MASQ: 1}
_TIMEOUT = 30.0
_SEARCH = "/usr/local/sbin:/usr/sbin:/sbin:/usr/local/bin:/usr/bin:/bin"


def remove_idle_chains() -> tuple[list[str], list[str]]:
    """Remove the idle host-port chains and their jumps: (lines done, lines that failed)."""
    done: list[str] = []
    failed: list[str] = []
    for program in ("iptables", "ip6tables"):
        tool, save = (which(p, path=_SEARCH) for p in (program, f"{program}-save"))
        if tool is None or save is None:
            continue
        try:
            if _remove_in(tool, save):
                done.append(f"removed portmap's idle chains {', '.join(_IDLE_RULES)} ({program})")
        except (OSError, subprocess.SubprocessError, ValueError) as error:
            failed.append(f"{program}: portmap's host-port chains: {error}")
    return done, failed


def _remove_in(tool: str, save: str) -> bool:
    chains, rules = _parse(_run([save, "-t", "nat"]))
    if not set(_IDLE_RULES) <= chains:
        return False
    if any(len(rules.get(chain, [])) != count for chain, count in _IDLE_RULES.items()):
        return False
    for chain, spec in rules.get("__jumps__", []):
        _run([tool, "-t", "nat", "-D", chain, *spec])
    for chain in _IDLE_RULES:
        _run([tool, "-t", "nat", "-F", chain])
        _run([tool, "-t", "nat", "-X", chain])
    return True


def _parse(save: str) -> tuple[set[str], dict[str, list[tuple[str, list[str]]]]]:
    """The chains of an ``iptables-save -t nat``, the rules of portmap's chains, and (as
    ``__jumps__``) the rules elsewhere that jump to them."""
    chains: set[str] = set()
    rules: dict[str, list[tuple[str, list[str]]]] = {}
    for line in save.splitlines():
        if line.startswith(":"):
            chains.add(line[1:].split()[0])
        elif line.startswith("-A "):
            words = shlex.split(line)
            chain, spec = words[1], words[2:]
            target = spec[spec.index("-j") + 1] if "-j" in spec else ""
            if chain in _IDLE_RULES:
                rules.setdefault(chain, []).append((chain, spec))
            elif target in _IDLE_RULES:
                rules.setdefault("__jumps__", []).append((chain, spec))
    return chains, rules


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT, check=False)
    if done.returncode != 0:
        raise ValueError(f"{' '.join(argv[:5])}: {done.stderr.strip() or done.returncode}")
    return done.stdout
