"""Random flag combinations never crash ``nodehost start``: success or a documented exit code."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DOCUMENTED = {0, 1, 2, 255}
NAMES = st.sampled_from(
    ["kubelet", "proxy", "sdn", "plugins", "dns", "bootstrap", "network", "all", "bogus", ""]
)
LISTS = st.lists(NAMES, max_size=4).map(",".join)
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20
)

FLAG = st.one_of(
    LISTS.map(lambda v: f"--components={v}"),
    LISTS.map(lambda v: f"--enable={v}"),
    LISTS.map(lambda v: f"--disable={v}"),
    st.integers(-5, 5000).map(lambda v: f"--expire-days={v}"),
    TEXT.map(lambda v: f"--listen={v}"),
    TEXT.map(lambda v: f"--hostname={v}"),
    TEXT.map(lambda v: f"--network-plugin={v}"),
    TEXT.map(lambda v: f"--binary={v}"),
    st.sampled_from(
        ["--write-flags", "--strict-config", "--latest-images", "--no-plugins", "--json"]
    ),
    st.sampled_from(
        ["--standins=never", "--standins=missing", "--standins=always", "--standins=x"]
    ),
    TEXT.map(lambda v: f"--disable-plugin={v}"),
    TEXT,
)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(flags=st.lists(FLAG, max_size=6))
def test_random_start_flags_end_in_a_documented_exit(
    nodehost, node_dir: Path, flags: list[str]
) -> None:
    args = ["start", "--config", str(node_dir / "node-config.yaml"), "--dry-run", *flags]
    result = nodehost(*args)
    assert result.code in DOCUMENTED, (args, result.err)
    assert "Traceback" not in result.err, (args, result.err)
