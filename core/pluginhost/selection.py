"""Component selection: Origin's ``--enable``/``--disable`` algebra over component records.

Origin's ``ComponentFlag`` (:ref:`origin-component-selection`), generalised from a fixed list to the
records plugins register:

* names are component names or aliases; group names (a record's ``groups``,
  plus ``all``) expand to their members;
* the selection is ``expand(enabled) - expand(disabled)``; ``--components``
  is ``--enable`` under a clearer name (giving both is an error);
* the default ``enabled`` set is every record with ``default=True``, plus every
  record whose ``enable_if(options)`` is true;
* unknown names, a name both enabled and disabled (only when enable was given
  explicitly) and an empty result are errors with Origin's messages; an
  unknown name close to a known one gets a did-you-mean; a selection whose
  components would all be inactive is Origin's empty-selection error too, once
  planned (:func:`nodehost.plan.check_active`);
* a selected component whose ``requires`` are not selected is an error;
* the start order is topological over ``after``, ``requires`` and ``before``
  (restricted to selected components), ties broken by name; a cycle is an error.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from nodehost.errors import PluginError, UsageError
from nodehost.frozen import frozen
from nodehost.pluginhost.records import ComponentRecord

ALL_GROUP = "all"


@frozen
class SelectionRequest:
    """The selection flags as given; ``None`` means the flag was not given."""

    components: str | None = None
    enable: str | None = None
    disable: str = ""


class Selection(frozenset[str]):
    """The selected components' names, and which known components run network providers.

    A frozenset of names (what :func:`select` returns and hooks get as ``selected``)
    that also carries ``network_runners``: every known component whose record has
    ``runs_network_providers``, selected or not, so a provider's rules can ask whether
    the pod network runs (:func:`nodehost.cni.selects_provider`) without naming the
    component that runs it.  Set operations give plain frozensets.
    """

    network_runners: frozenset[str]

    def __new__(cls, names: Iterable[str] = (), network_runners: Iterable[str] = ()) -> Selection:
        selection = super().__new__(cls, names)
        selection.network_runners = frozenset(network_runners)
        return selection

    @property
    def runs_network_providers(self) -> bool:
        """Whether a selected component runs the configured network provider."""
        return not self.network_runners.isdisjoint(self)


@frozen
class Catalog:
    """The known components, their aliases and groups."""

    records: Mapping[str, ComponentRecord]

    @property
    def names(self) -> list[str]:
        return sorted(self.records)

    @property
    def network_runners(self) -> frozenset[str]:
        """The components whose record says they run network providers."""
        return frozenset(
            name for name, record in self.records.items() if record.runs_network_providers
        )

    def mappings(self) -> dict[str, set[str]]:
        """Group and alias names mapped to the component names they stand for."""
        mapping: dict[str, set[str]] = {ALL_GROUP: set(self.records)}
        for record in self.records.values():
            for alias in record.aliases:
                mapping.setdefault(alias, set()).add(record.name)
            for group in record.groups:
                mapping.setdefault(group, set()).add(record.name)
        return mapping

    def expand(self, value: str) -> set[str]:
        """Origin's ``Expand``: split on commas, replace groups/aliases; unknown names survive."""
        mapping = self.mappings()
        result: set[str] = set()
        for item in (part.strip() for part in value.split(",")):
            if item:
                result |= mapping.get(item, {item})
        return result

    def starts_after(self, name: str) -> set[str]:
        """Every component ``name`` waits for: its record's ``after`` and ``requires``,
        and each component whose ``before`` names it or a group it belongs to (unless that
        component itself starts after ``name``)."""
        record = self.records[name]
        waits = {*record.after, *record.requires}
        for other, candidate in self.records.items():
            if not candidate.before or name in {*candidate.after, *candidate.requires}:
                continue  # what a component starts after is never also started after it
            if name in self.expand(",".join(candidate.before)):
                waits.add(other)
        waits.discard(name)
        return waits

    def default_enabled(self, options: Any) -> set[str]:
        return {
            name
            for name, record in self.records.items()
            if record.default or (record.enable_if is not None and record.enable_if(options))
        }


def select(
    catalog: Catalog,
    request: SelectionRequest,
    options: Any = None,
    *,
    unknown_hint: Any = None,
) -> Selection:
    """Return the selected component names, or raise ``UsageError`` with Origin's message.

    ``unknown_hint(name) -> str`` may explain an unknown name (e.g. a plugin that
    failed to load and would have provided it).
    """
    if request.components is not None and request.enable is not None:
        raise UsageError("--components and --enable mean the same; give one", "--components")
    explicit = request.components if request.components is not None else request.enable
    flag = "--components" if request.components is not None else "--enable"
    enabled = catalog.expand(explicit) if explicit is not None else catalog.default_enabled(options)
    disabled = catalog.expand(request.disable)
    _check_known(catalog, enabled, flag, unknown_hint)
    _check_known(catalog, disabled, "--disable", unknown_hint)
    if explicit is not None and enabled & disabled:
        both = ", ".join(sorted(enabled & disabled))
        raise UsageError(f"the following components can't be both disabled and enabled: {both}")
    selected = Selection(enabled - disabled, catalog.network_runners)
    if not selected:
        allowed = ", ".join(catalog.names)
        raise UsageError(f"at least one node component must be enabled ({allowed})")
    _check_requirements(catalog, selected)
    return selected


def _check_known(catalog: Catalog, names: set[str], flag: str, unknown_hint: Any) -> None:
    unknown = sorted(names - set(catalog.records))
    if not unknown:
        return
    message = "the following components are not recognized: " + ", ".join(unknown)
    message += f" (known: {', '.join(catalog.names)})"
    message += _did_you_mean(catalog, unknown)
    hints = [unknown_hint(name) for name in unknown] if unknown_hint else []
    hints = [hint for hint in hints if hint]
    if hints:
        message += "; " + "; ".join(dict.fromkeys(hints))
    raise UsageError(message, flag)


def _did_you_mean(catalog: Catalog, unknown: list[str]) -> str:
    """``; did you mean kubelet?`` for the unknown names close to a known name, alias or group."""
    from nodehost.suggest import closest

    words = [*catalog.records, *catalog.mappings()]
    spaced = [name for name in unknown if all(word in words for word in name.split())]
    if spaced and len(spaced[0].split()) > 1:  # 'kubelet proxy': two names, a space for a comma
        return f"; separate names with commas: {','.join(spaced[0].split())}"
    found = {name: closest(name, words) for name in unknown}
    guesses = {name: guess for name, guess in found.items() if guess is not None}
    if not guesses:
        return ""
    if len(unknown) == 1:
        return f"; did you mean {next(iter(guesses.values()))}?"
    return "; did you mean " + ", ".join(f"{g} (for {n})" for n, g in guesses.items()) + "?"


def _check_requirements(catalog: Catalog, selected: Collection[str]) -> None:
    for name in sorted(selected):
        missing = [dep for dep in catalog.records[name].requires if dep not in selected]
        if missing:
            raise UsageError(
                f"component {name!r} requires {', '.join(missing)}, which is not selected",
                "--components",
            )


def start_order(catalog: Catalog, selected: Iterable[str]) -> list[tuple[str, tuple[str, ...]]]:
    """The selected components in start order, each with the selected ones it waits for."""
    chosen = set(selected)
    waits = {
        name: tuple(sorted(dep for dep in catalog.starts_after(name) if dep in chosen))
        for name in chosen
    }
    order: list[tuple[str, tuple[str, ...]]] = []
    done: set[str] = set()
    while len(done) < len(chosen):
        ready = sorted(n for n in chosen - done if all(dep in done for dep in waits[n]))
        if not ready:
            cycle = ", ".join(sorted(chosen - done))
            raise PluginError(f"the components {cycle} wait for each other (a dependency cycle)")
        for name in ready:
            order.append((name, waits[name]))
            done.add(name)
    return order
