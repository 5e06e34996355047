"""The Origin compatibility page (docs/origin.rst) is what the project cites, and it stays true.

The page states what Origin 3.x did for each flag and key, with the upstream
source file of each fact, under stable labels.  The code, the tests, the README
and the other docs pages cite it by label (``:ref:`origin-...```) or, where no
Sphinx role works (README.rst, which the package index renders with docutils
alone), by the page's path, a comma and a section title in single quotes.
Numbered sections of a document the project does not hold ("reference", the
section sign and a number) must not come back; RFC sections are public
standards and stay allowed.  The page names every NodeConfig key, every
``start node`` and ``create-node-config`` flag, and says "no effect" for exactly
the keys nodehost warns about.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ORIGIN_PAGE = ROOT / "docs" / "origin.rst"
SEARCHED = ("core", "plugins", "tests", "contrib", "bench", "docs")
TEXT_SUFFIXES = {".py", ".rst", ".md", ".txt", ".cfg", ".toml", ".yaml", ".yml", ".ini", ".sh"}
SKIPPED_PARTS = {"_build", "__pycache__", ".venv", ".git"}

SECTION_SIGN = "\u00a7"
RFC_SECTION = re.compile(r"\bRFC \d+ " + SECTION_SIGN + r"[\d.]*\d")
OUTSIDE_SECTION = re.compile(SECTION_SIGN + r"|\breference \d+(?:\.\d+)*\b")

LABEL = re.compile(r"^\.\. _(origin[a-z0-9-]*):\s*$", re.MULTILINE)
LABEL_REFERENCE = re.compile(r":ref:`(?:[^`<]*<)?(origin[a-z0-9-]*)>?`")
TITLE_REFERENCE = re.compile(r"docs/origin\.rst,\s+'([^']+)'")
UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1*$")


def project_texts() -> Iterator[tuple[str, str]]:
    """(path relative to the root, text) of README.rst and every text file searched."""
    paths = [ROOT / "README.rst"]
    for folder in SEARCHED:
        paths += sorted((ROOT / folder).rglob("*"))
    for path in paths:
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
            continue
        relative = path.relative_to(ROOT)
        if SKIPPED_PARTS.intersection(relative.parts) or relative.parts[0].endswith(".egg-info"):
            continue
        yield str(relative), path.read_text(errors="replace")


def outside_citations(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each citation of a numbered section of an outside document."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), 1)
        if OUTSIDE_SECTION.search(RFC_SECTION.sub("", line))
    ]


def page_labels() -> set[str]:
    return set(LABEL.findall(ORIGIN_PAGE.read_text()))


def page_titles() -> set[str]:
    """Section titles of the page, as written (inline literals kept)."""
    lines = ORIGIN_PAGE.read_text().splitlines()
    return {
        title.strip()
        for title, below in pairwise(lines)
        if title.strip() and UNDERLINE.match(below) and len(below) >= len(title.strip())
    }


def test_the_page_labels_its_topics() -> None:
    labels = page_labels()
    assert {"origin-validation", "origin-kubelet-arguments", "origin-run-node"} <= labels


def test_no_numbered_section_of_an_outside_document_is_cited() -> None:
    found = [
        f"{path}:{number}: {line}"
        for path, text in project_texts()
        for number, line in outside_citations(text)
    ]
    assert found == [], "cite docs/origin.rst by label or the upstream source file instead"


def test_rfc_sections_stay_allowed_and_the_check_sees_the_others() -> None:
    assert outside_citations("never lock clients out (RFC 7766 " + SECTION_SIGN + "6.2.2)") == []
    assert outside_citations("Origin's rule (" + SECTION_SIGN + "7.2)") == [
        (1, "Origin's rule (" + SECTION_SIGN + "7.2)")
    ]
    numbered = "defaults (reference " + "4.3)"
    assert outside_citations(numbered) == [(1, numbered)]


def test_every_origin_label_cited_exists_on_the_page() -> None:
    labels = page_labels()
    cited = {
        (label, path) for path, text in project_texts() for label in LABEL_REFERENCE.findall(text)
    }
    assert len({label for label, _ in cited}) >= 20, "the code cites the page"
    assert sorted(f"{path}: {label}" for label, path in cited if label not in labels) == []


def test_every_page_title_cited_exists_on_the_page() -> None:
    titles = page_titles()
    cited = {
        (" ".join(title.split()), path)
        for path, text in project_texts()
        for title in TITLE_REFERENCE.findall(text)
    }
    assert "Which validation rules apply" in titles
    assert sorted(f"{path}: {title!r}" for title, path in cited if title not in titles) == []


def list_table_after(label: str) -> list[list[str]]:
    """The rows (cells as one-line text) of the first ``list-table`` after ``.. _label:``."""
    text = ORIGIN_PAGE.read_text().split(f".. _{label}:", 1)[1]
    options_and_rows = text.split(".. list-table::", 1)[1].split("\n\n", 2)
    rows: list[list[str]] = []
    for line in options_and_rows[1].splitlines():
        if line.startswith("   * - "):
            rows.append([line[len("   * - ") :]])
        elif line.startswith("     - "):
            rows[-1].append(line[len("     - ") :])
        else:
            rows[-1][-1] += " " + line.strip()
    return rows


def literal_keys(cell: str) -> set[str]:
    return set(re.findall(r"``([A-Za-z.]+)``", cell))


def test_every_nodeconfig_key_has_a_row_on_the_page() -> None:
    from nodehost.config.schema import NodeConfig, yaml_keys

    rows = list_table_after("origin-nodeconfig-keys")
    named = {key.split(".")[0] for row in rows for key in literal_keys(row[0])}
    assert sorted(set(yaml_keys(NodeConfig)) - named) == []


def test_the_page_says_no_effect_for_exactly_the_keys_nodehost_warns_about() -> None:
    from nodehost.config.noeffect import NO_EFFECT

    rows = list_table_after("origin-nodeconfig-keys")
    without_effect = {
        key
        for key_cell, _, nodehost in rows
        if nodehost.startswith("no effect")
        for key in literal_keys(key_cell)
    }
    assert without_effect == set(NO_EFFECT)


def start_node_flags() -> set[str]:
    rows = list_table_after("origin-start-node-flags")[1:]
    return {flag for row in rows for flag in re.findall(r"``(--[a-z-]+)", row[0])}


def nodehost_start(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "nodehost", "start", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_nodehost_start_takes_every_flag_of_origins_start_node() -> None:
    flags = start_node_flags()
    shown = set(re.findall(r"--[a-z][a-z-]*", nodehost_start("--help").stdout))
    assert len(flags) >= 15
    assert sorted(flags - shown - {"--kubernetes"}) == []


def test_the_removed_kubernetes_flag_is_the_usage_error_the_page_names() -> None:
    assert "--kubernetes" in start_node_flags()
    result = nodehost_start("--kubernetes", "https://master.example.com:8443")
    assert result.returncode == 2
    assert result.stderr == "error: --kubernetes is no longer allowed, try using --kubeconfig\n"


def section(label: str) -> str:
    """The page's text from ``.. _label:`` to the next label."""
    return ORIGIN_PAGE.read_text().split(f".. _{label}:", 1)[1].split("\n.. _", 1)[0]


def test_nodehost_config_create_takes_every_flag_of_origins_create_node_config() -> None:
    listed = section("origin-create-node-config").split("Flags:", 1)[1].split("\n\n", 1)[0]
    flags = set(re.findall(r"``(--[a-z][a-z-]*)``", listed))
    command = [sys.executable, "-m", "nodehost", "config", "create", "--help"]
    shown = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True).stdout
    assert len(flags) >= 20
    assert sorted(flags - set(re.findall(r"--[a-z][a-z-]*", shown))) == []
