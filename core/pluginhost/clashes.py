"""Name clashes between plugins' records, and which plugin pays for each.

Component names, aliases and group names share one namespace (the words
``--components`` accepts, ``all`` included); network-provider names and
aliases another, compared case-insensitively; ``start`` options (flags, value
names and ``NODEHOST_*`` variables, nodehost's own first) a third.  A word claimed by two
records -- other than a group that several components share, which is what
groups are for -- is a clash:

* with a built-in: the third-party plugin fails ("... taken by built-in
  plugin 'kubelet'");
* between third-party plugins: each of them fails, naming the other, since
  nothing says which one the user meant (``--disable-plugin`` one of them);
* between built-ins: a bug, raised as :class:`~nodehost.errors.PluginError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from nodehost.errors import PluginError
from nodehost.frozen import frozen
from nodehost.pluginhost.manager import PluginHost, Provided
from nodehost.pluginhost.selection import ALL_GROUP


@frozen
class Claim:
    """One record's claim on a word: ``role`` is ``component name``, ``alias``, ``group``..."""

    word: str
    role: str
    item: Provided[Any] | None  # None: the core's own ``all``


@frozen
class Clash:
    """``plugin`` fails because of ``message`` (raised in ``hook``)."""

    plugin: str
    hook: str
    message: str


def component_claims(provided: Iterable[Provided[Any]]) -> Iterator[Claim]:
    yield Claim(ALL_GROUP, "group of every component", None)
    for item in provided:
        yield Claim(item.record.name, "component name", item)
        yield from (Claim(alias, "component alias", item) for alias in item.record.aliases)
        yield from (Claim(group, "group", item) for group in item.record.groups)


def provider_claims(provided: Iterable[Provided[Any]]) -> Iterator[Claim]:
    for item in provided:
        yield Claim(item.record.name.lower(), "network provider name", item)
        for alias in item.record.aliases:
            yield Claim(alias.lower(), "network provider alias", item)


def section_claims(
    components: Iterable[Provided[Any]],
    providers: Iterable[Provided[Any]],
    host: PluginHost,
    origin_keys: Iterable[str],
) -> Iterator[Claim]:
    """Claims on top-level NodeConfig keys: every record's config sections, and Origin's
    own keys for nodehost unless a built-in owns one (``kubeletArguments``)."""
    owned: list[Claim] = []
    for item in components:
        owned += [Claim(section, "config section", item) for section in item.record.config_sections]
    for item in providers:
        if item.record.config_section:
            owned.append(Claim(item.record.config_section, "config section", item))
    builtin_owned = {claim.word for claim in owned if _builtin(claim, host)}
    yield from owned
    for key in origin_keys:
        if key not in builtin_owned:
            yield Claim(key, "NodeConfig key", None)


def option_claims(provided: Iterable[Provided[Any]], host_words: Iterable[str]) -> Iterator[Claim]:
    """Claims on ``start``'s option words: each declared option's flag, value name
    (``dest``) and variable, after the host's own (``host_words``: nodehost's) -- those
    of them a declared option claims too: a word claimed once clashes with nothing."""
    declared = [
        claim
        for item in provided
        for claim in (
            Claim(item.record.name, "start option", item),
            Claim(item.record.dest, "start option value name", item),
            Claim(item.record.variable, "environment variable", item),
        )
    ]
    words = {claim.word for claim in declared}
    yield from (Claim(word, "start option", None) for word in sorted(host_words) if word in words)
    yield from declared


def find_clashes(claims: Iterable[Claim], hook: str, host: PluginHost) -> list[Clash]:
    """The plugins that fail for the clashes among ``claims`` (see the module docstring)."""
    by_word: dict[str, list[Claim]] = {}
    for claim in claims:
        by_word.setdefault(claim.word, []).append(claim)
    clashes: dict[str, Clash] = {}
    for word, found in by_word.items():
        for claim, other in _clashing_pairs(found):
            if _builtin(claim, host):
                if _builtin(other, host):
                    raise PluginError(f"built-in plugins clash on {word!r}")
                continue  # the other side fails, in the pair the other way round
            assert claim.item is not None
            message = f"{claim.role} {word!r} is already taken by {_describe(other, host)}"
            if other.role != claim.role:
                message += f" (as a {other.role})"
            if not _builtin(other, host):
                message += "; disable one of them with --disable-plugin"
            clashes.setdefault(claim.item.plugin, Clash(claim.item.plugin, hook, message))
    return list(clashes.values())


def _clashing_pairs(claims: list[Claim]) -> Iterator[tuple[Claim, Claim]]:
    """Both orders of every pair of claims on one word by different records, but for
    two groups (several components share a group)."""
    for index, claim in enumerate(claims):
        for other in claims[index + 1 :]:
            records = (claim.item and claim.item.record, other.item and other.item.record)
            if records[0] is not None and records[0] is records[1]:
                continue
            if claim.role == other.role == "group":
                continue
            if _same_plugin(claim, other):
                continue
            yield claim, other
            yield other, claim


def _same_plugin(claim: Claim, other: Claim) -> bool:
    """A plugin's component and its provider may share a config section."""
    return (
        claim.item is not None
        and other.item is not None
        and claim.role == other.role == "config section"
        and claim.item.plugin == other.item.plugin
    )


def _builtin(claim: Claim, host: PluginHost) -> bool:
    return claim.item is None or host.is_builtin(claim.item.plugin)


def _describe(claim: Claim, host: PluginHost) -> str:
    if claim.item is None:
        return "nodehost"
    plugin = claim.item.plugin
    return f"built-in plugin {plugin!r}" if host.is_builtin(plugin) else claim.item.source()


def unknown_references(components: list[Provided[Any]], host: PluginHost) -> list[Clash]:
    """The third-party plugins whose records name a component (or group, or ``all``) that no
    loaded record provides.

    ``requires`` is always checked: such a component could never be selected.  ``after``
    and ``before`` order only what is selected, so they are checked only while every
    plugin is loaded: with one blocked or failed, an unknown name may be that plugin's
    component, not a typo.  Built-ins are not checked (a user may block the one they
    order themselves after).  Run it again after failing the plugins it returns: their
    components are gone, which may leave another plugin's requirement unknown in turn.
    """
    known = {claim.word for claim in component_claims(components)}
    everything_loaded = all(info.status == "active" for info in host.infos.values())
    fields = ("requires", "after", "before") if everything_loaded else ("requires",)
    clashes: dict[str, Clash] = {}
    for item in components:
        if host.is_builtin(item.plugin):
            continue
        for field_name in fields:
            missing = [word for word in getattr(item.record, field_name) if word not in known]
            if missing and item.plugin not in clashes:
                message = (
                    f"component {item.record.name!r} names unknown component(s) in "
                    f"{field_name}: {', '.join(repr(word) for word in missing)}"
                )
                clashes[item.plugin] = Clash(item.plugin, "nodehost_components", message)
    return list(clashes.values())
