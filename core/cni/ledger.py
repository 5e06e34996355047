"""What nodehost created for the pod network, recorded in the state directory.

A provider's plan writes ``<component state dir>/cni-ledger.json`` next to its
configuration list: the files nodehost wrote and the host links its network
creates, each with whether it existed before nodehost first recorded it.
``nodehost network cleanup`` removes exactly that: the files that still carry
nodehost's marker and the links nodehost caused -- nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from nodehost.cni import hostnet
from nodehost.cni.conflist import is_marked, render
from nodehost.config.jsonsafe import parse_json
from nodehost.errors import RuntimeFailure
from nodehost.fileread import TEXT_LIMIT, read_file
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.cni.network import HostLink

_FORMAT = 1


@frozen
class LedgerLink:
    """A host link: ``created`` is False when it existed before nodehost recorded it."""

    name: str
    kind: str
    created: bool


@frozen
class LedgerNetwork:
    """A network nodehost configured: its CNI ``name``, the plugins' ``bin_dirs`` and the
    SHA-256 ``digests`` of every configuration list nodehost wrote for it.

    Teardown deletes (CNI DEL) every pod attachment a runtime cached with one of
    those lists (:mod:`nodehost.cni.attachments`): another nodehost's network of
    the same name on the same host is not this one.
    """

    name: str
    bin_dirs: tuple[str, ...]
    digests: tuple[str, ...] = ()

    def merged(self, other: LedgerNetwork) -> LedgerNetwork:
        """This network with ``other``'s digests too (same name and folders)."""
        return replace(self, digests=tuple(dict.fromkeys([*self.digests, *other.digests])))


@frozen
class Ledger:
    files: tuple[str, ...] = ()
    links: tuple[LedgerLink, ...] = ()
    networks: tuple[LedgerNetwork, ...] = ()

    def render(self) -> bytes:
        data = {
            "format": _FORMAT,
            "comment": "what nodehost created for the pod network; 'nodehost network cleanup' "
            "removes it",
            "files": list(self.files),
            "links": [vars(link) for link in self.links],
            "networks": [
                {"name": net.name, "bin_dirs": list(net.bin_dirs), "digests": list(net.digests)}
                for net in self.networks
            ],
        }
        return render(data)

    def with_network(
        self,
        conf_path: str,
        host_links: Iterable[HostLink],
        present: Mapping[str, str],
        network: LedgerNetwork | None = None,
    ) -> Ledger:
        """This ledger plus ``conf_path``, ``host_links`` and ``network``.

        A new link counts as created by nodehost when it is not ``present``
        (a name -> kind mapping of the host's links) now; entries already
        recorded keep what was recorded first.
        """
        files = self.files if conf_path in self.files else (*self.files, conf_path)
        known = {link.name for link in self.links}
        links = list(self.links)
        for link in host_links:
            if link.name not in known:
                links.append(LedgerLink(link.name, link.kind, link.name not in present))
        networks = self.networks
        if network is not None:
            same = [n for n in networks if (n.name, n.bin_dirs) == (network.name, network.bin_dirs)]
            others = tuple(n for n in networks if n not in same)
            networks = (*others, same[0].merged(network) if same else network)
        return replace(self, files=files, links=tuple(links), networks=networks)


def read_ledger(path: str) -> Ledger:
    """The ledger at ``path`` (empty if there is none); :class:`RuntimeFailure` if it is corrupt."""
    try:
        data = parse_json(read_file(path, TEXT_LIMIT), TEXT_LIMIT)
        links = tuple(
            LedgerLink(str(item["name"]), str(item["kind"]), bool(item["created"]))
            for item in data.get("links", ())
        )
        networks = tuple(
            LedgerNetwork(
                str(item["name"]),
                tuple(str(d) for d in item["bin_dirs"]),
                tuple(str(d) for d in item.get("digests", ())),
            )
            for item in data.get("networks", ())
        )
        return Ledger(tuple(str(file) for file in data.get("files", ())), links, networks)
    except FileNotFoundError:
        return Ledger()
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise RuntimeFailure(
            f"state file {path} is unreadable ({error}); remove it (nodehost then keeps any "
            "bridge it finds, as it cannot tell whether it created it)"
        ) from None


def clean_up(ledger_path: str, also_files: Iterable[str] = ()) -> list[str]:
    """Remove what the ledger records (and ``also_files`` if they carry nodehost's marker).

    Returns one line per thing removed or kept, and removes the ledger once
    nothing in it is left to do.  Raises :class:`RuntimeFailure` naming every
    removal that failed (after trying all of them).
    """
    ledger = read_ledger(ledger_path)
    report: list[str] = []
    failures: list[str] = []
    for path in dict.fromkeys([*ledger.files, *also_files]):
        _remove_file(path, report, failures)
    present = hostnet.links() if ledger.links else {}
    for link in ledger.links:
        _remove_link(link, present, report, failures)
    if failures:
        raise RuntimeFailure("network cleanup incomplete: " + "; ".join(failures))
    if os.path.exists(ledger_path):
        Path(ledger_path).unlink()
        report.append(f"removed {ledger_path} (nodehost's record of them)")
    return report


def _remove_file(path: str, report: list[str], failures: list[str]) -> None:
    if not os.path.exists(path):
        return
    if not is_marked(path):
        report.append(f"kept {path}: it does not carry nodehost's marker (not nodehost's)")
        return
    try:
        os.unlink(path)
    except OSError as error:
        failures.append(f"cannot remove {path}: {error.strerror or error}")
        return
    report.append(f"removed {path}")


def _remove_link(
    link: LedgerLink, present: Mapping[str, str], report: list[str], failures: list[str]
) -> None:
    if link.name not in present:
        return
    if not link.created:
        report.append(f"kept {link.kind} {link.name}: it existed before nodehost")
        return
    if present[link.name] != link.kind:
        report.append(f"kept {link.name}: it is a {present[link.name] or 'plain'} link now")
        return
    try:
        hostnet.delete_link(link.name)
    except RuntimeFailure as error:
        failures.append(str(error))
        return
    report.append(f"removed {link.kind} {link.name}")
