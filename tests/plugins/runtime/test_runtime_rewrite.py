"""Repository-name rewrites as k3s' containerd applies them: RE2 patterns (translated to Python's
``re`` or refused with the reason), Go replacement templates, the first changing rule wins."""

from __future__ import annotations

import pytest

from nodehost.plugins.runtime.registries import hosts_files, hosts_toml, read_registries
from nodehost.plugins.runtime.rewrite import NotRe2, compile_rule, rewrite_repository, translate


def rewrite(pattern: str, replacement: str, name: str) -> str:
    return rewrite_repository((compile_rule(pattern, replacement),), name)


def test_the_k3s_example_rewrites_the_organisation() -> None:
    assert (
        rewrite("^rancher/(.*)", "mirrorproject/rancher-images/$1", "rancher/coredns-coredns")
        == "mirrorproject/rancher-images/coredns-coredns"
    )
    assert rewrite("^rancher/(.*)", "x/$1", "library/nginx") == "library/nginx"


@pytest.mark.parametrize(
    ("replacement", "expected"),
    [
        ("$2/$1", "nginx/library"),
        ("${2}x", "nginxx"),
        ("$2x", ""),  # Go reads the longest name: group "2x", which does not exist
        ("${org}-$$-${nope}", "library-$-"),
        ("a$", "a$"),  # a $ with no name is text
        ("${1", "${1"),
    ],
)
def test_replacements_expand_as_go_expands_them(replacement: str, expected: str) -> None:
    assert rewrite("^(?P<org>[^/]+)/(.+)$", replacement, "library/nginx") == expected


def test_every_match_is_replaced_and_the_first_changing_rule_wins() -> None:
    rules = (
        compile_rule("^nothing/", "never/"),
        compile_rule("a", "b"),
        compile_rule("^", "ignored/"),
    )
    assert rewrite_repository(rules, "team/alpha") == "tebm/blphb"


@pytest.mark.parametrize(
    ("pattern", "python"),
    [
        (r"^a\z", r"^a\Z"),
        (r"(?<name>x)", r"(?P<name>x)"),
        (r"\Qa.b\E+", r"a\.b+"),
        (r"[[:alpha:]_]+", r"[A-Za-z_]+"),
        (r"[]a]", r"[]a]"),
        (r"(?i)Team", r"(?i)Team"),
        (r"(?s:.)", r"(?s:.)"),
    ],
)
def test_re2_spellings_python_lacks_are_translated(pattern: str, python: str) -> None:
    assert translate(pattern) == python


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a)\1", r"backreference \1: RE2 has none"),
        (r"a(?=b)", "lookahead (?=...): RE2 has none"),
        (r"(?<!a)b", "negative lookbehind (?<!...): RE2 has none"),
        (r"(?>a)", "atomic group (?>...): RE2 has none"),
        (r"a\Z", r"\Z: RE2 has none (its end of text is \z)"),
        (r"\pL", r"Unicode class \p: not supported by nodehost (names are ASCII)"),
        ("(?U)a*", "ungreedy flag U: not supported by nodehost"),
        ("(?x)a", "flags '(?x)': RE2 knows i, m, s and U"),
        ("[[:nope:]]", "unknown POSIX class [:nope:]"),
        ("[a", "missing closing ]"),
        ("a(", "not a valid regular expression: missing ), unterminated subpattern at position 1"),
    ],
)
def test_what_re2_refuses_or_nodehost_cannot_translate_is_named(pattern: str, why: str) -> None:
    with pytest.raises(NotRe2) as raised:
        compile_rule(pattern, "x")
    assert str(raised.value) == why


def test_a_rewritten_registry_gets_its_hosts_file_from_the_proxy_not_the_plan(tmp_path) -> None:
    from nodehost.config.sections import SectionReader

    reader = SectionReader(
        "containerRuntime",
        {
            "registries": {
                "mirrors": {
                    "docker.io": {"endpoint": ["https://m.example"], "rewrite": {"^a/": "b/"}},
                    "quay.io": {"endpoint": ["https://q.example"]},
                }
            }
        },
    )
    registries = read_registries(reader)
    assert reader.problems == []
    assert [path.split("/")[-2] for path, _ in hosts_files(registries, str(tmp_path))] == [
        "quay.io"
    ]
    through = hosts_toml(registries, "docker.io", "http://127.0.0.1:1234/docker.io/v2")
    assert through.decode().splitlines()[1:] == [
        'server = "https://registry-1.docker.io"',
        "",
        '[host."http://127.0.0.1:1234/docker.io/v2"]',
        '  capabilities = ["pull", "resolve"]',
        "  override_path = true",
    ]
