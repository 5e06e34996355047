"""Repository-name rewrites of registry mirrors (``mirrors.HOST.rewrite``), as k3s applies them.

k3s' containerd applies a mirror's ``rewrite: {REGEX: REPLACEMENT}`` to the
repository path of each pull through that mirror's endpoints (never through
the registry itself): ``docker.io/rancher/coredns:1.6`` with
``"^rancher/(.*)": "mirrorproject/rancher-images/$1"`` is fetched from an
endpoint as ``mirrorproject/rancher-images/coredns:1.6`` and stored under its
original name.  The regular expressions are Go's (RE2) and the replacement is
Go's ``Regexp.ReplaceAllString`` template.  Here:

* :func:`translate` turns an RE2 pattern into Python's ``re`` syntax, or says
  why it cannot: constructs RE2 lacks (backreferences, lookaround, atomic
  groups, conditionals, ``\\Z``) are refused as k3s' containerd refuses them;
  RE2 spellings Python lacks are translated (``\\z``, ``(?<name>...)``,
  ``\\Q...\\E``, ``[[:alpha:]]`` classes); Unicode classes (``\\pL``) and the
  ungreedy flag ``(?U)`` are refused as unsupported by nodehost.
* :func:`expand` is Go's template expansion: ``$1``, ``${1}``, ``$name``,
  ``${name}`` (a name as long as possible: ``$1x`` is group ``1x``), ``$$``
  for ``$``; a group that does not exist expands to nothing.
* :func:`rewrite_repository` applies the rules in the order the config gives
  them; the first that changes the name wins (k3s iterates a Go map, in no
  defined order; a config whose rules overlap means one of them, here always
  the first).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from nodehost.frozen import frozen

#: RE2's POSIX classes, as the characters of a Python ``[...]`` set.
POSIX_CLASSES = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_REFUSED_GROUPS = {
    "(?=": "lookahead (?=...)",
    "(?!": "negative lookahead (?!...)",
    "(?<=": "lookbehind (?<=...)",
    "(?<!": "negative lookbehind (?<!...)",
    "(?>": "atomic group (?>...)",
    "(?(": "conditional (?(...)...)",
    "(?#": "comment group (?#...)",
}
_FLAGS = re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?[:)]")
_TEMPLATE_NAME = re.compile(r"[A-Za-z0-9_]+")


class NotRe2(ValueError):
    """A pattern that is not RE2, or uses what nodehost cannot translate; the message says which."""


@frozen
class Rule:
    """One rewrite: the RE2 pattern as written, its Python translation, the replacement."""

    pattern: str
    compiled: re.Pattern[str]
    replacement: str


def compile_rule(pattern: str, replacement: str) -> Rule:
    """A :class:`Rule`; raises :class:`NotRe2` saying why ``pattern`` cannot be one."""
    translated = translate(pattern)
    try:
        compiled = re.compile(translated)
    except re.error as error:
        raise NotRe2(f"not a valid regular expression: {error}") from None
    return Rule(pattern, compiled, replacement)


def rewrite_repository(rules: tuple[Rule, ...], repository: str) -> str:
    """``repository`` rewritten by the first rule that changes it (each replaces all matches,
    as Go's ``ReplaceAllString``); unchanged when none does."""
    for rule in rules:
        rewritten = rule.compiled.sub(_expander(rule.replacement), repository)
        if rewritten != repository:
            return rewritten
    return repository


def _expander(template: str) -> Callable[[re.Match[str]], str]:
    return lambda match: expand(template, match)


def expand(template: str, match: re.Match[str]) -> str:
    """Go's ``Regexp.Expand`` of ``template`` for ``match`` (module docstring)."""
    out, index = [], 0
    while index < len(template):
        char = template[index]
        if char != "$" or index + 1 == len(template):
            out.append(char)
            index += 1
            continue
        name, after = _template_name(template, index + 1)
        if name is None:  # malformed: the $ is text (Go does the same)
            out.append("$")
            index += 1
            continue
        if name == "$":
            out.append("$")
        else:
            out.append(_group(match, name))
        index = after
    return "".join(out)


def _template_name(template: str, start: int) -> tuple[str | None, int]:
    """The name after a ``$`` at ``start`` and where the text goes on; (None, start) if none."""
    if template[start] == "$":
        return "$", start + 1
    if template[start] == "{":
        end = template.find("}", start)
        name = template[start + 1 : end] if end > 0 else ""
        if not name or not _TEMPLATE_NAME.fullmatch(name):
            return None, start
        return name, end + 1
    found = _TEMPLATE_NAME.match(template, start)
    return (found.group(), found.end()) if found else (None, start)


def _group(match: re.Match[str], name: str) -> str:
    """Group ``name`` (a number, or a group's name) of ``match``; "" when there is none."""
    try:
        value = match.group(int(name) if name.isdigit() else name)
    except IndexError:  # no such group: Go expands it to nothing
        return ""
    return value or ""


def translate(pattern: str) -> str:
    """``pattern`` (RE2) in Python's ``re`` syntax; raises :class:`NotRe2` (module docstring)."""
    out: list[str] = []
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            piece, index = _escape(pattern, index, in_class)
            out.append(piece)
            continue
        if in_class:
            if pattern.startswith("[:", index):
                piece, index = _posix_class(pattern, index)
                out.append(piece)
                continue
            in_class = char != "]" or out[-1] in ("[", "[^")
            out.append(char)
            index += 1
            continue
        if char == "[":
            in_class = True
            negated = pattern.startswith("[^", index)
            out.append("[^" if negated else "[")
            index += 2 if negated else 1
            continue
        if char == "(" and pattern.startswith("(?", index):
            piece, index = _group_start(pattern, index)
            out.append(piece)
            continue
        out.append(char)
        index += 1
    if in_class:
        raise NotRe2("missing closing ]")
    return "".join(out)


def _escape(pattern: str, index: int, in_class: bool) -> tuple[str, int]:
    """The translation of the escape at ``index`` and the index after it."""
    if index + 1 == len(pattern):
        raise NotRe2("trailing backslash")
    char = pattern[index + 1]
    if char.isdigit() and char != "0":
        raise NotRe2(f"backreference \\{char}: RE2 has none")
    if char == "Z":
        raise NotRe2("\\Z: RE2 has none (its end of text is \\z)")
    if char == "z" and not in_class:
        return "\\Z", index + 2
    if char in "pP":
        raise NotRe2(f"Unicode class \\{char}: not supported by nodehost (names are ASCII)")
    if char == "Q":
        end = pattern.find("\\E", index + 2)
        literal = pattern[index + 2 :] if end < 0 else pattern[index + 2 : end]
        return re.escape(literal), len(pattern) if end < 0 else end + 2
    if char == "C":
        return ".", index + 2
    return pattern[index : index + 2], index + 2


def _posix_class(pattern: str, index: int) -> tuple[str, int]:
    """``[:alpha:]`` (or ``[:^alpha:]``) inside a set, as Python set characters."""
    end = pattern.find(":]", index + 2)
    name = pattern[index + 2 : end] if end > 0 else ""
    negated = name.startswith("^")
    characters = POSIX_CLASSES.get(name.lstrip("^"))
    if characters is None:
        raise NotRe2(f"unknown POSIX class [:{name}:]")
    if negated:
        raise NotRe2(f"negated POSIX class [:{name}:]: not supported by nodehost")
    return characters, end + 2


def _group_start(pattern: str, index: int) -> tuple[str, int]:
    """The translation of a ``(?`` group opening or flag group at ``index``."""
    for opening, what in _REFUSED_GROUPS.items():
        if pattern.startswith(opening, index):
            raise NotRe2(f"{what}: RE2 has none")
    if pattern.startswith("(?P<", index):
        return "(?P<", index + 4
    if pattern.startswith("(?<", index):
        return "(?P<", index + 3
    if pattern.startswith("(?:", index):
        return "(?:", index + 3
    flags = _FLAGS.match(pattern, index)
    if flags is None:
        raise NotRe2(f"unknown group {pattern[index : index + 4]!r}...")
    if set(flags.group(1) + (flags.group(2) or "")) - set("imsU"):
        raise NotRe2(f"flags {flags.group()!r}: RE2 knows i, m, s and U")
    if "U" in flags.group(1) + (flags.group(2) or ""):
        raise NotRe2("ungreedy flag U: not supported by nodehost")
    return flags.group(), flags.end()
