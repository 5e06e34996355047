"""``config validate`` and ``start --dry-run`` judge every NodeConfig alike, and never crash.

Hypothesis generates documents from the schema itself (every field of
:class:`~nodehost.config.schema.NodeConfig`, nested objects included): values
of the right kind and of wrong ones, unicode, NUL bytes, huge numbers,
hostile host:port strings and paths, plus the DNS plugin's section.  Each is
laid over a real, valid node folder's config.  Both commands must exit 0 or
255 (never 1, never a traceback) and print the same problems.  The budget is
fixed and the run derandomized, so CI sees the same examples every time.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nodehost.config.schema import FieldSpec, Kind, NodeConfig, field_specs

COMPONENTS = "--components=kubelet,proxy,dns"

INTERESTING = st.sampled_from(
    [
        "", "\x00", "a\x00b", "127.0.0.1:99999", "127.0.0.1:0", "0.0.0.0", "::", "[::1]:53",
        "a:b:c", "99999", "-1", "1e400", "/dev/zero", "/dev/null", "/", "node.kubeconfig",
        "server.crt", "ca.crt", "\u00e9\u4e2d", "${component}", "5m", "-5m", "10Gi", "tcp6",
    ]
)  # fmt: skip
TEXT = st.one_of(INTERESTING, INTERESTING, st.text(max_size=12))
NUMBER = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, 65535, 65536, 2**31, 2**63, -(2**63) - 1]),
    st.floats(allow_nan=True, allow_infinity=True),
)
SCALAR = st.one_of(TEXT, NUMBER, st.booleans(), st.none())
WRONG = st.one_of(SCALAR, st.lists(SCALAR, max_size=3), st.dictionaries(TEXT, SCALAR, max_size=2))
ARGUMENT_NAMES = st.sampled_from(
    ["port", "read-only-port", "healthz-port", "metrics-port", "healthz-bind-address",
     "hostname-override", "cert-dir", "max-pods", "bootstrap-kubeconfig", "no-such-flag"]
)  # fmt: skip


def _right(spec: FieldSpec, depth: int) -> st.SearchStrategy[Any]:
    kind = spec.kind
    if kind is Kind.STRING:
        return TEXT
    if kind is Kind.BOOL:
        return st.booleans()
    if kind in (Kind.INT, Kind.UINT32, Kind.FLOAT):
        return NUMBER
    if kind is Kind.QUANTITY:
        return st.one_of(TEXT, NUMBER)
    if kind is Kind.STRING_LIST:
        return st.lists(TEXT, max_size=3)
    if kind is Kind.ARGUMENTS:
        return st.dictionaries(ARGUMENT_NAMES, st.lists(TEXT, max_size=2), max_size=3)
    if depth > 2:
        return st.none()
    if kind is Kind.OBJECT_LIST:
        return st.lists(_object(spec.nested, depth + 1), max_size=2)
    return _object(spec.nested, depth + 1)


def _value(spec: FieldSpec, depth: int) -> st.SearchStrategy[Any]:
    right = _right(spec, depth)
    return st.one_of(right, right, right, WRONG)  # mostly the right kind: deeper stages


def _object(cls: Any, depth: int, least: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """A few (``least`` to 2) fields of ``cls``: small changes reach the later stages."""
    one_field = st.one_of(
        [st.fixed_dictionaries({spec.key: _value(spec, depth)}) for _, spec in field_specs(cls)]
    )
    return st.lists(one_field, min_size=least, max_size=2).map(
        lambda parts: {key: value for part in parts for key, value in part.items()}
    )


def _merge(base: Any, changes: Any) -> Any:
    """``changes`` laid over ``base``: mappings merge key by key, anything else replaces."""
    if not (isinstance(base, dict) and isinstance(changes, dict)):
        return changes
    return {**base, **{key: _merge(base.get(key), value) for key, value in changes.items()}}


SOURCES = st.lists(st.sampled_from(["file", "kubernetes", "x"]), max_size=2)
RECORDS = st.one_of(st.just("records.yaml"), TEXT)
DNS_SECTION = st.fixed_dictionaries(
    {},
    optional={
        "recordSources": st.one_of(SOURCES, SOURCES, SOURCES, WRONG),
        "recordsFile": st.one_of(RECORDS, RECORDS, RECORDS, WRONG),
    },
)
CHANGES = st.tuples(_object(NodeConfig, 0), st.one_of(st.none(), DNS_SECTION, DNS_SECTION))


@pytest.fixture(scope="module")
def base_config(
    tmp_path_factory: pytest.TempPathFactory, make_real_node_folder: Callable[[Path], Path]
) -> dict[str, Any]:
    node = make_real_node_folder(tmp_path_factory.mktemp("fuzz"))
    document = yaml.safe_load((node / "node-config.yaml").read_text())
    document["dnsBindAddress"] = "127.0.0.1:0"
    return {"document": document, "folder": node, "state": str(node.parent / "state")}


def _verdict(result: Any) -> list[str]:
    """The error block (from ``Invalid NodeConfig`` or ``error:`` on), to compare."""
    lines = result.err.splitlines()
    starts = [
        i for i, line in enumerate(lines) if line.startswith(("Invalid NodeConfig", "error:"))
    ]
    return lines[starts[0] :] if starts else []


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(changes=CHANGES)
# The hostile-input run's finds, always tried first:
@example(changes=({"dnsBindAddress": "127.0.0.1:99999"}, None))
@example(changes=({}, {"recordSources": ["x"]}))
@example(changes=({}, {"recordSources": ["file"]}))
@example(changes=({"proxyArguments": {"healthz-port": ["99999"]}}, None))
@example(changes=({"kubeletArguments": {"port": ["99999"]}}, None))
@example(changes=({"nodeName": "n1\x00", "volumeDirectory": "v\x00"}, None))
def test_validate_and_dry_run_agree(
    nodehost: Callable[..., Any], base_config: dict[str, Any], changes: tuple[Any, Any]
) -> None:
    fields, dns_section = changes
    document = _merge(base_config["document"], fields)
    if dns_section is not None:
        document["dnsServerConfig"] = dns_section
    path: Path = base_config["folder"] / "fuzz.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    validated = nodehost("config", "validate", str(path), COMPONENTS)
    planned = nodehost(
        "start", "--config", str(path), "--dry-run", "--standins=always", COMPONENTS,
        "--state-dir", base_config["state"],
    )  # fmt: skip
    assert validated.code in (0, 255), validated.err
    assert "Traceback" not in validated.err + planned.err
    assert (validated.code, _verdict(validated)) == (planned.code, _verdict(planned))
