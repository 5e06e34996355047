#!/usr/bin/env python3
"""Derive the kubelet's and kube-proxy's flag listing from pinned upstream Go sources.

nodehost's flag tables (``nodehost.plugins.kubelet.flags``,
``nodehost.plugins.proxy.flags``) must accept what the real programs accept.
This script reads the Go files that register those flags,
finds every pflag registration and deprecation, and writes a *derived* listing
(``tools/upstream-flags.json``: per program, each flag's pflag type,
deprecation message, hidden mark, and the file it comes from).  The upstream
files themselves are never committed; only the listing is.
``tests/kube/test_upstream_flag_listing.py`` compares the tables to it.

**The pinned sources** (:data:`PINS`).  The listing records, for each file,
the upstream commit it was read at.  They are not one commit: the copies
available when the listing was made (the stored-code index behind the
``search`` tool, which has no tag-to-commit map) hold one version of each
file, and the newest of ``cmd/kubelet/app/options/options.go`` there is of the
v1.28-v1.30 line (it registers ``--config-dir``, added in v1.28, and still
``--keep-terminated-pod-volumes``, removed in v1.31).  ``PINS`` says, per file,
what its content shows about its release.  To move to one release, fetch the
same paths at that release's tag and re-run with its commit::

    V=v1.34.0; B=https://raw.githubusercontent.com/kubernetes/kubernetes/$V
    mkdir -p /tmp/k8s && cd /tmp/k8s
    curl -fsSLO $B/cmd/kubelet/app/options/options.go
    curl -fsSL -o globalflags_linux.go $B/cmd/kubelet/app/options/globalflags_linux.go
    curl -fsSL -o logs_options.go $B/staging/src/k8s.io/component-base/logs/api/v1/options.go
    curl -fsSL -o proxy_options.go $B/cmd/kube-proxy/app/options.go
    python tools/kubeflags.py --commit-all $V --kubelet-options options.go \\
        --kubelet-cadvisor globalflags_linux.go --logs logs_options.go \\
        --kube-proxy-options proxy_options.go --out tools/upstream-flags.json

then make the tables agree (the test says where they differ).

**What the parser understands** -- calls on a flag set ``fs``:
``fs.<Type>Var(target, "name", default, help)`` (String, Bool, Duration,
Int32, Int64, Float32, StringSlice...), ``fs.Var(value, "name", help)`` and
``fs.VarP(value, "name", "short", help)`` (the pflag type of ``value`` comes
from :data:`VAR_TYPES`; an unknown value expression is an error, so a new
flag type is never guessed), ``fs.MarkDeprecated("name", "msg")``,
``fs.MarkHidden("name")``, cAdvisor's ``register``/``registerDeprecated``
(underscores become dashes; their Go types are cAdvisor's, not in these
files, so the listing has ``null``), names given as string constants, and the
kubelet's ``AddKubeletConfigFlags`` rule (every flag it registers, including
the logging flags ``logsapi.AddFlags`` adds there, is deprecated with its
``deprecated`` text unless ``notDeprecated`` names it).  Other ``X.AddFlags(fs)``
and ``addOSFlags`` calls are listed under ``not_expanded``: their flags are
not in the listing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: Upstream path -> (commit, what the file's content shows about its release).
PINS: dict[str, tuple[str, str]] = {
    "cmd/kubelet/app/options/options.go": (
        "6785e9ed401a526cfb4ae33d498b088e27237ad1",
        "v1.28-v1.30 line: registers --config-dir (added v1.28) and still "
        "--keep-terminated-pod-volumes and --iptables-masquerade-bit (removed v1.31)",
    ),
    "cmd/kubelet/app/options/globalflags_linux.go": (
        "f9cfc9d93491c42c0ee6b3705d4c46f7e173f356",
        "release not shown by its content: housekeeping_interval plus the 18 deprecated "
        "cAdvisor flags",
    ),
    "staging/src/k8s.io/component-base/logs/api/v1/options.go": (
        "3ef6ef3cfbd27321db8aac529077c7ef016f82c2",
        "older than the kubelet's: JSON split-stream flags only, no --log-text-* flags",
    ),
    "cmd/kube-proxy/app/options.go": (
        "c57e1156f58ee5dcdd1d06c31c372c3f5405a888",
        "v1.31+ line: options.go split out of server.go (2024) with the config.Linux section",
    ),
}

#: pflag ``Type()`` of each ``fs.<X>Var`` registration.
SCALAR_TYPES = {
    "StringVar": "string",
    "BoolVar": "bool",
    "DurationVar": "duration",
    "IntVar": "int",
    "Int32Var": "int32",
    "Int64Var": "int64",
    "UintVar": "uint",
    "Float32Var": "float32",
    "Float64Var": "float64",
    "StringSliceVar": "stringSlice",
}

#: pflag ``Type()`` of the value given to ``fs.Var``, by the head of its expression.
VAR_TYPES = {
    "cliflag.ConfigurationMap": "mapStringString",
    "cliflag.NewColonSeparatedMultimapStringString": "colonSeparatedMultimapStringString",
    "cliflag.NewMapStringBool": "mapStringBool",
    "cliflag.NewMapStringString": "mapStringString",
    "cliflag.NewMapStringStringNoSplit": "mapStringString",
    "cliflag.NewLangleSeparatedMapStringString": "mapStringString",
    "utilflag.IPVar": "ip",
    "utilflag.IPPortVar": "ipport",
    "utilflag.PortRangeVar": "port-range",
    "utilflag.ReservedMemoryVar": "reserved-memory",
    "utilflag.RegisterWithTaintsVar": "[]v1.Taint",
    "VerbosityLevelPflag": "Level",
    "VModuleConfigurationPflag": "pattern=N,...",
    "c.Options.JSON.InfoBufferSize": "quantity",
    "c.Options.Text.InfoBufferSize": "quantity",
    "o.config.Mode": "ProxyMode",
    "o.config.DetectLocalMode": "LocalMode",
}

_TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<string>"(?:[^"\\\n]|\\.)*"|`[^`]*`)
      | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<space>\s+)
      | (?P<punct>:=|.)""",
    re.VERBOSE | re.DOTALL,
)


class SourceError(Exception):
    """A registration the parser cannot read; the message names file and flag."""


@dataclass(frozen=True)
class Token:
    kind: str  # "string", "word" or "punct"
    text: str  # a string token's decoded value


def tokens(source: str) -> list[Token]:
    """Go source as tokens, comments and white space dropped, strings decoded."""
    result = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup
        if kind in ("comment", "space"):
            continue
        text = match.group()
        if kind == "string":
            text = text[1:-1] if text[0] == "`" else json.loads(_go_to_json(text))
        result.append(Token(kind or "punct", text))
    return result


def _go_to_json(literal: str) -> str:
    """A Go interpreted string literal as JSON (they share the common escapes)."""
    return literal.replace("\\'", "'")


@dataclass
class Flag:
    """One registered flag as the listing records it."""

    type: str | None
    deprecated: str = ""
    hidden: bool = False
    shorthand: str = ""
    source: str = ""


@dataclass
class Listing:
    """The flags of one program and the registrations the parser did not expand."""

    flags: dict[str, Flag] = field(default_factory=dict)
    not_expanded: list[str] = field(default_factory=list)


def _split_args(toks: list[Token], start: int) -> tuple[list[list[Token]], int]:
    """The top-level arguments of the call whose ``(`` is at ``start``, and the end index."""
    depth, args, current = 0, [], []
    for index in range(start, len(toks)):
        tok = toks[index]
        if tok.kind == "punct" and tok.text in "([{":
            depth += 1
            if depth == 1:
                continue
        elif tok.kind == "punct" and tok.text in ")]}":
            depth -= 1
            if depth == 0:
                args.append(current)
                return [a for a in args if a], index
        elif depth == 1 and tok.kind == "punct" and tok.text == ",":
            args.append(current)
            current = []
            continue
        current.append(tok)
    raise SourceError("unbalanced parentheses")


def _head(expr: list[Token]) -> str:
    """The dotted name leading an expression: ``utilflag.IPVar`` for ``&utilflag.IPVar{...}``."""
    parts = []
    for tok in expr:
        if tok.kind == "word" or (tok.kind == "punct" and tok.text == "."):
            parts.append(tok.text)
        elif tok.kind == "punct" and tok.text in "&*" and not parts:
            continue
        else:
            break
    return "".join(parts)


class GoFile:
    """One Go file's tokens, with its string constants and ``x := expr`` assignments."""

    def __init__(self, path: Path, upstream: str) -> None:
        self.upstream = upstream
        self.toks = tokens(path.read_text(encoding="utf-8"))
        self.strings: dict[str, str] = {}
        self.assigned: dict[str, list[Token]] = {}
        for i, tok in enumerate(self.toks[:-2]):
            nxt, value = self.toks[i + 1], self.toks[i + 2]
            if tok.kind == "word" and nxt.text in ("=", ":=") and value.kind == "string":
                self.strings[tok.text] = value.text
            elif tok.kind == "word" and nxt.text == ":=":
                end = next(
                    (j for j in range(i + 2, len(self.toks)) if self.toks[j].text == "("),
                    i + 2,
                )
                self.assigned[tok.text] = self.toks[i + 2 : end]

    def text(self, expr: list[Token], what: str) -> str:
        """The string an argument denotes: a literal or a string constant of this file."""
        if len(expr) == 1 and expr[0].kind == "string":
            return expr[0].text
        if len(expr) == 1 and expr[0].text in self.strings:
            return self.strings[expr[0].text]
        raise SourceError(f"{self.upstream}: {what} is not a string: {_show(expr)}")

    def calls(self) -> Iterator[tuple[int, str, str, list[list[Token]]]]:
        """``(index, receiver, method, args)`` for each ``recv.method(...)`` or ``func(...)``."""
        toks = self.toks
        for i, tok in enumerate(toks):
            if tok.kind != "word" or i + 1 >= len(toks) or toks[i + 1].text != "(":
                continue
            receiver = ""
            if i >= 2 and toks[i - 1].text == "." and toks[i - 2].kind == "word":
                receiver = toks[i - 2].text
            args, _ = _split_args(toks, i + 1)
            yield i, receiver, tok.text, args

    def function_spans(self) -> dict[str, tuple[int, int]]:
        """Token spans of each top-level function body, by ``Name`` or ``RecvType.Name``."""
        spans, toks, i = {}, self.toks, 0
        while i < len(toks):
            if toks[i].text == "func" and toks[i].kind == "word":
                j, owner = i + 1, ""
                if toks[j].text == "(":
                    receiver, j = _split_args(toks, j)
                    owner = [tok.text for tok in receiver[0] if tok.kind == "word"][-1] + "."
                    j += 1
                name = owner + toks[j].text
                while toks[j].text != "{":
                    j += 1
                depth, k = 0, j
                for k in range(j, len(toks)):
                    if toks[k].text == "{":
                        depth += 1
                    elif toks[k].text == "}":
                        depth -= 1
                        if depth == 0:
                            break
                spans[name] = (j, k)
                i = k
            i += 1
        return spans


def _show(expr: list[Token]) -> str:
    return " ".join(tok.text for tok in expr)


def read_registrations(go: GoFile, listing: Listing, within: tuple[int, int] | None = None) -> None:
    """Add the flags ``go`` registers on ``fs`` (inside token span ``within``) to ``listing``."""
    for index, receiver, method, args in go.calls():
        if within and not within[0] <= index <= within[1]:
            continue
        if receiver == "fs" and method in SCALAR_TYPES:
            name = go.text(args[1], "flag name")
            _add(listing, name, Flag(SCALAR_TYPES[method], source=go.upstream))
        elif receiver == "fs" and method in ("Var", "VarP"):
            name = go.text(args[1], "flag name")
            head = _head(args[0])
            head = _head(go.assigned.get(head, [])) or head
            if head not in VAR_TYPES:
                raise SourceError(f"{go.upstream}: --{name}: unknown value type {head!r}")
            short = go.text(args[2], "shorthand") if method == "VarP" else ""
            _add(listing, name, Flag(VAR_TYPES[head], shorthand=short, source=go.upstream))
        elif receiver == "fs" and method == "MarkDeprecated":
            _flag(listing, go, args[0]).deprecated = go.text(args[1], "deprecation")
        elif receiver == "fs" and method == "MarkHidden":
            _flag(listing, go, args[0]).hidden = True
        elif method in ("register", "registerDeprecated") and len(args) >= 3:
            name = go.text(args[2], "cAdvisor flag name").replace("_", "-")
            deprecated = go.text(args[3], "deprecation") if len(args) > 3 else ""
            _add(listing, name, Flag(None, deprecated=deprecated, source=go.upstream))
        elif method in ("AddFlags", "addOSFlags") and args and _show(args[-1]) == "fs":
            listing.not_expanded.append(f"{go.upstream}: {receiver or ''}.{method}".strip("."))


def _add(listing: Listing, name: str, flag: Flag) -> None:
    if name in listing.flags:
        raise SourceError(f"{flag.source}: --{name} registered twice")
    listing.flags[name] = flag


def _flag(listing: Listing, go: GoFile, expr: list[Token]) -> Flag:
    name = go.text(expr, "flag name")
    if name not in listing.flags:
        raise SourceError(f"{go.upstream}: --{name} is marked before it is registered")
    return listing.flags[name]


def kubelet_listing(options: GoFile, cadvisor: GoFile, logs: GoFile) -> Listing:
    """The kubelet's flags: KubeletFlags, KubeletConfiguration (with logging), cAdvisor."""
    listing = Listing()
    spans = options.function_spans()
    read_registrations(options, listing, spans["KubeletFlags.AddFlags"])
    config = Listing()
    start, end = spans["AddKubeletConfigFlags"]
    read_registrations(options, config, (start, end))
    if any(
        recv == "logsapi" and method == "AddFlags" and start <= i <= end
        for i, recv, method, _ in options.calls()
    ):
        read_registrations(logs, config)
        config.not_expanded = [n for n in config.not_expanded if "logsapi" not in n]
    message = options.strings["deprecated"]
    exempt = _not_deprecated(options, (start, end))
    for name, flag in config.flags.items():
        if name not in exempt:
            flag.deprecated = message
        _add(listing, name, flag)
    listing.not_expanded += config.not_expanded
    read_registrations(cadvisor, listing)
    return listing


def _not_deprecated(go: GoFile, span: tuple[int, int]) -> set[str]:
    """The keys of the ``notDeprecated := map[string]bool{...}`` literal inside ``span``."""
    toks = go.toks
    for i in range(*span):
        if toks[i].text == "notDeprecated" and toks[i + 1].text == ":=":
            j = next(k for k in range(i, span[1]) if toks[k].text == "{")
            args, _ = _split_args(toks, j)
            return {arg[0].text for arg in args if arg and arg[0].kind == "string"}
    return set()


def kube_proxy_listing(options: GoFile, logs: GoFile) -> Listing:
    """kube-proxy's flags: Options.AddFlags, with the logging flags it adds."""
    listing = Listing()
    read_registrations(options, listing)
    if any(r == "logsapi" and m == "AddFlags" for _, r, m, _ in options.calls()):
        read_registrations(logs, listing)
    listing.not_expanded = [n for n in listing.not_expanded if "logsapi" not in n]
    return listing


def render(listings: dict[str, Listing], commits: dict[str, str]) -> str:
    """The listing document as stable, diff-friendly JSON."""
    document = {
        "comment": "Derived by tools/kubeflags.py from the upstream files in 'sources'; "
        "do not edit by hand.",
        "sources": {
            path: {"commit": commits.get(path, commit), "release": release}
            for path, (commit, release) in PINS.items()
        },
        "programs": {
            program: {
                "not_expanded": sorted(listing.not_expanded),
                "flags": {
                    name: {
                        "type": flag.type,
                        "deprecated": flag.deprecated,
                        "hidden": flag.hidden,
                        "shorthand": flag.shorthand,
                        "source": flag.source,
                    }
                    for name, flag in sorted(listing.flags.items())
                },
            }
            for program, listing in listings.items()
        },
    }
    return json.dumps(document, indent=1, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubelet-options", type=Path, required=True)
    parser.add_argument("--kubelet-cadvisor", type=Path, required=True)
    parser.add_argument("--logs", type=Path, required=True)
    parser.add_argument("--kube-proxy-options", type=Path, required=True)
    parser.add_argument("--commit-all", default="", help="record this commit or tag for every file")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    paths = list(PINS)
    try:
        files = {
            "kubelet": GoFile(args.kubelet_options, paths[0]),
            "cadvisor": GoFile(args.kubelet_cadvisor, paths[1]),
            "logs": GoFile(args.logs, paths[2]),
            "proxy": GoFile(args.kube_proxy_options, paths[3]),
        }
        listings = {
            "kubelet": kubelet_listing(files["kubelet"], files["cadvisor"], files["logs"]),
            "kube-proxy": kube_proxy_listing(files["proxy"], files["logs"]),
        }
    except (OSError, SourceError, StopIteration, KeyError, IndexError) as error:
        print(f"kubeflags: {error!r}", file=sys.stderr)
        return 1
    commits = dict.fromkeys(PINS, args.commit_all) if args.commit_all else {}
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(render(listings, commits), encoding="utf-8")
    tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
