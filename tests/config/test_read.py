"""Reading node-config.yaml: every hostile file ends in one clear ConfigError, fast."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from nodehost.config.load import read_config_file
from nodehost.errors import ConfigError


def load_error(path: Path | str) -> str:
    with pytest.raises(ConfigError) as error:
        read_config_file(str(path))
    message = str(error.value)
    assert message.startswith(f'could not load config file "{path}" due to an error: ')
    assert "\n" not in message
    return message.split(" due to an error: ", 1)[1]


def load_error_and_peak(path: Path) -> tuple[str, int]:
    """:func:`load_error`, and the most memory Python allocated while reading (bytes)."""
    tracemalloc.start()
    try:
        message = load_error(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return message, peak


def test_mapping_with_positions(write_yaml: Callable[..., Path]) -> None:
    path = write_yaml(
        """\
        apiVersion: v1
        servingInfo:
          namedCertificates:
          - names: [a, b]
        """
    )
    doc = read_config_file(str(path))
    assert doc.data["servingInfo"]["namedCertificates"][0]["names"] == ["a", "b"]
    assert doc.where("apiVersion") == (1, 13)
    assert doc.where("servingInfo.namedCertificates[0].names[1]") == (4, 16)
    assert doc.where("servingInfo.namedCertificates", key=True) == (3, 3)
    assert doc.base_dir == str(path.parent)
    assert doc.source == str(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    assert load_error(path) == f"open {path}: no such file or directory"


def test_directory_instead_of_file(tmp_path: Path) -> None:
    assert load_error(tmp_path) == f"read {tmp_path}: is a directory"


def test_path_through_a_file(write_yaml: Callable[..., Path]) -> None:
    path = write_yaml("a: 1\n")
    assert load_error(f"{path}/x") == f"open {path}/x: not a directory"


_READ_IN_A_CHILD = """
import sys
from nodehost.config.load import read_config_file
from nodehost.errors import ConfigError
try:
    read_config_file(sys.argv[1])
except ConfigError as error:
    print(error)
"""


def test_unreadable_file(write_yaml: Callable[..., Path], unprivileged: list[str]) -> None:
    """Read by a process that cannot override file modes (root only through setpriv)."""
    path = write_yaml("a: 1\n")
    path.chmod(0)
    child = [*unprivileged, sys.executable, "-c", _READ_IN_A_CHILD, str(path)]
    done = subprocess.run(child, capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.strip() == (
        f'could not load config file "{path}" due to an error: open {path}: permission denied'
    ), done.stderr


def test_empty_file(write_yaml: Callable[..., Path]) -> None:
    assert load_error(write_yaml("")) == "the file is empty"


def test_only_comments(write_yaml: Callable[..., Path]) -> None:
    assert load_error(write_yaml("# nothing here\n\n")) == "the file is empty"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("- a\n- b\n", "a list"),
        ("just a string\n", "a string"),
        ("42\n", "an integer"),
        ("null\n", "null"),
    ],
)
def test_top_level_must_be_a_mapping(
    write_yaml: Callable[..., Path], text: str, found: str
) -> None:
    assert load_error(write_yaml(text)) == (
        f"line 1, column 1: expected a mapping at the top level, found {found}"
    )


def test_invalid_utf8_names_line_column_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "garbage.yaml"
    path.write_bytes(b"nodeName: x\n\xc3\x28garbage")
    assert load_error(path) == "yaml: line 2, column 1: invalid UTF-8 (byte offset 12)"


@pytest.mark.parametrize("seed", range(5))
def test_binary_garbage(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "garbage.yaml"
    path.write_bytes(random.Random(seed).randbytes(65536))
    assert load_error(path).startswith("yaml: line ")


def test_nul_bytes(tmp_path: Path) -> None:
    path = tmp_path / "nul.yaml"
    path.write_bytes(b"nodeName: a\x00b\n")
    assert load_error(path) == (
        "yaml: line 1, column 12: control characters are not allowed (found #x0000)"
    )


def test_utf16_with_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "utf16.yaml"
    path.write_bytes("nodeName: n\u00f6de\n".encode("utf-16"))
    assert read_config_file(str(path)).data == {"nodeName": "n\u00f6de"}


def test_utf8_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes(b"\xef\xbb\xbfnodeName: n\n")
    assert read_config_file(str(path)).data == {"nodeName": "n"}


def test_file_over_the_size_limit(tmp_path: Path) -> None:
    """Refused without reading it: memory stays far below the file's 100 MB."""
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(100 * 1024 * 1024)  # sparse: 100 MB without writing them
    message, peak = load_error_and_peak(path)
    assert message == "the file is larger than the limit of 4 MiB (4194304 bytes)"
    assert peak < 8 * 1024 * 1024


def test_endless_device_is_refused_unread() -> None:
    assert load_error("/dev/zero") == "open /dev/zero: not a regular file (a character device)"


def test_fifo_without_writer_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    assert load_error(fifo) == f"open {fifo}: not a regular file (a named pipe)"


def test_fifo_with_a_silent_writer_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer that never writes
    try:
        assert load_error(fifo) == f"open {fifo}: not a regular file (a named pipe)"
    finally:
        os.close(writer)


def test_syntax_error_names_line_and_column(write_yaml: Callable[..., Path]) -> None:
    path = write_yaml("nodeName: a\nservingInfo:\n  bindAddress: [unclosed\n")
    assert load_error(path).startswith("yaml: line 4, column 1: ")


def test_tab_indentation_error(write_yaml: Callable[..., Path]) -> None:
    message = load_error(write_yaml("servingInfo:\n\tbindAddress: x\n"))
    assert message.startswith("yaml: line 2, column 1: ")


def test_several_documents(write_yaml: Callable[..., Path]) -> None:
    message = load_error(write_yaml("a: 1\n---\nb: 2\n"))
    assert message == (
        "yaml: line 2, column 1: expected a single document in the stream, "
        "but found another document"
    )


def test_duplicate_top_level_key(write_yaml: Callable[..., Path]) -> None:
    path = write_yaml("nodeName: a\nnodeIP: 1.2.3.4\nnodeName: b\n")
    assert load_error(path) == (
        "yaml: line 3, column 1: mapping key 'nodeName' already defined at line 1"
    )


def test_duplicate_nested_key(write_yaml: Callable[..., Path]) -> None:
    path = write_yaml("servingInfo:\n  certFile: a\n  certFile: b\n")
    assert load_error(path) == (
        "yaml: line 3, column 3: mapping key 'certFile' already defined at line 2"
    )


def test_merge_keys_may_be_overridden(write_yaml: Callable[..., Path]) -> None:
    path = write_yaml(
        """\
        base: &base {certFile: a, keyFile: k}
        servingInfo:
          <<: *base
          certFile: b
        """
    )
    doc = read_config_file(str(path))
    assert doc.data["servingInfo"] == {"certFile": "b", "keyFile": "k"}
    assert doc.where("servingInfo.certFile") == (4, 13)
    assert doc.where("servingInfo.keyFile") == (1, 36)


def test_deep_flow_nesting(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 500 + "]" * 500 + "\n")
    assert load_error(path) == "yaml: line 1, column 67: nested deeper than 64 levels"


def test_extremely_deep_flow_nesting(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 1_000_000 + "]" * 1_000_000 + "\n")
    message = load_error(path)
    assert "nested deeper than 64 levels" in message or "maximum nesting depth" in message


def test_deep_block_nesting(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("".join(f"{' ' * level}k{level}:\n" for level in range(200)))
    assert "nested deeper than 64 levels" in load_error(path)


def test_nesting_within_the_limit_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("a: " + "[" * 60 + "]" * 60 + "\n")
    value = read_config_file(str(path)).data["a"]
    for _ in range(59):
        value = value[0]
    assert value == []


def _billion_laughs() -> str:
    lines = ['a0: &a0 "lol"']
    for level in range(1, 10):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    lines.append("nodeName: *a9")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_rejected_fast_and_small(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_billion_laughs())
    message, peak = load_error_and_peak(path)
    assert "more than 100000 nodes after alias expansion" in message
    assert peak < 20 * 1024 * 1024


def test_deep_nesting_through_aliases(tmp_path: Path) -> None:
    lines = ["a0: &a0 " + "[" * 40 + "]" * 40]
    lines += [f"a{n}: &a{n} " + "[" * 40 + f"*a{n - 1}" + "]" * 40 for n in range(1, 4)]
    path = tmp_path / "aliases.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert "nested deeper than 64 levels (through aliases)" in load_error(path)


def test_recursive_alias(write_yaml: Callable[..., Path]) -> None:
    assert load_error(write_yaml("a: &a [*a]\n")) == "yaml: line 1, column 4: recursive alias"


def test_aliases_become_independent_copies(write_yaml: Callable[..., Path]) -> None:
    doc = read_config_file(str(write_yaml("a: &x {k: v}\nb: *x\n")))
    doc.data["a"]["k"] = "changed"
    assert doc.data["b"] == {"k": "v"}


def test_undefined_alias(write_yaml: Callable[..., Path]) -> None:
    assert "found undefined alias" in load_error(write_yaml("a: *nothing\n"))


def test_python_tags_are_refused_not_executed(write_yaml: Callable[..., Path]) -> None:
    path = write_yaml("a: !!python/object/apply:os.system ['touch /tmp/nodehost-pwned']\n")
    assert "could not determine a constructor" in load_error(path)
    assert not Path("/tmp/nodehost-pwned").exists()


def test_unconstructable_timestamp(write_yaml: Callable[..., Path]) -> None:
    assert load_error(write_yaml("a: 2001-13-45\n")).startswith("yaml: cannot construct a value: ")


def test_integer_with_too_many_digits(write_yaml: Callable[..., Path]) -> None:
    message = load_error(write_yaml("mtu: 1" + "0" * 5000 + "\n"))
    assert message.startswith("yaml: cannot construct a value: ")


def test_unhashable_key(write_yaml: Callable[..., Path]) -> None:
    assert "found unhashable key" in load_error(write_yaml("? [a, b]\n: c\n"))


def test_keys_of_every_yaml_type_load_as_the_strings_go_makes_of_them(
    write_yaml: Callable[..., Path],
) -> None:
    path = write_yaml("1: a\nnull: b\ntrue: c\nname: d\n")
    document = read_config_file(str(path))
    assert document.data == {"1": "a", "null": "b", "true": "c", "name": "d"}
    assert document.where("true", key=True) == (3, 1)


def test_keys_that_load_to_the_same_string_are_duplicates(write_yaml: Callable[..., Path]) -> None:
    message = load_error(write_yaml("1: a\n'1': b\n"))
    assert message == "yaml: line 2, column 1: mapping key '1' already defined at line 1"


def test_a_lone_surrogate_escape_is_refused_with_its_place() -> None:
    from nodehost.config.yamlsafe import YAMLFileError, parse_yaml_bytes

    with pytest.raises(YAMLFileError, match=r"line 2, column \d+: .*(surrogate|Unicode)"):
        parse_yaml_bytes(b'a: 1\nb: "\\ud800"\n')


def test_a_document_from_elsewhere_has_the_files_size_limit() -> None:
    from nodehost.config.yamlsafe import MAX_FILE_BYTES, YAMLFileError, parse_yaml_bytes

    with pytest.raises(YAMLFileError, match="larger than the limit of 4 MiB"):
        parse_yaml_bytes(b"a: " + b"x" * MAX_FILE_BYTES)


def test_a_kubeconfig_goes_through_the_same_loader() -> None:
    from nodehost.pki.kubeconfig import load_document
    from nodehost.testing.hostile import alias_bomb

    with pytest.raises(ValueError, match="after alias expansion"):
        load_document(alias_bomb(9, 9).encode())


def test_the_same_kubeconfig_bytes_are_parsed_once_into_documents_of_their_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nodehost.config import yamlsafe
    from nodehost.pki import kubeconfig

    parsed: list[bytes] = []
    parse = yamlsafe.parse_yaml_bytes

    def counted(data: bytes, *limits: int) -> yamlsafe.ParsedYAML:
        parsed.append(data)
        return parse(data, *limits)

    monkeypatch.setattr(yamlsafe, "parse_yaml_bytes", counted)
    kubeconfig._parsed.cache_clear()
    data = b"clusters:\n- name: c\n  cluster: {server: 'https://10.0.0.1:6443'}\n"
    first = kubeconfig.load_document(data)
    first["clusters"][0]["cluster"]["server"] = "changed by its caller"
    second = kubeconfig.load_document(data)
    assert parsed == [data]
    assert second["clusters"][0]["cluster"]["server"] == "https://10.0.0.1:6443"
    assert kubeconfig.load_document(data + b"users: []\n")["users"] == []
    assert len(parsed) == 2


def test_a_kubeconfig_that_does_not_load_fails_each_time_it_is_read() -> None:
    from nodehost.pki.kubeconfig import load_document

    for _ in range(2):
        with pytest.raises(ValueError, match="did not find expected"):
            load_document(b"clusters: [unclosed\n")
