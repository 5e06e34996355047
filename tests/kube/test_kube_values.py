"""pflag value types: what each accepts, what it stores, and Go's exact error text."""

from __future__ import annotations

import pytest

from nodehost.kube.goparse import (
    FlagError,
)
from nodehost.kube.values import (
    BoolValue,
    ColonMultimapValue,
    ConfigurationMapValue,
    DurationValue,
    Float32Value,
    Int32Value,
    Int64Value,
    IPPortValue,
    IPValue,
    MapStringBoolValue,
    MapStringStringValue,
    QuantityValue,
    ReservedMemoryValue,
    StringSliceValue,
    TaintsValue,
    UintValue,
    VerbosityValue,
    VersionValue,
    VModuleValue,
    text_value,
)


def set_all(value, *texts):
    for text in texts:
        value.set(text)
    return value.config()


def error_of(value, text: str) -> str:
    with pytest.raises(FlagError) as caught:
        value.set(text)
    return str(caught.value)


# --- strconv ---------------------------------------------------------------------------


def test_int32_rejects_the_origin_test_value_with_go_message() -> None:
    assert (
        error_of(Int32Value(), "invalid-value")
        == 'strconv.ParseInt: parsing "invalid-value": invalid syntax'
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10250", 10250),
        ("-5", -5),
        ("+7", 7),
        ("0x10", 16),
        ("0o17", 15),
        ("017", 15),
        ("0b101", 5),
        ("1_000", 1000),
        ("0", 0),
        ("2147483647", 2147483647),
        ("-2147483648", -2147483648),
    ],
)
def test_int32_parses_go_integer_literals(text: str, expected: int) -> None:
    assert set_all(Int32Value(), text) == expected


@pytest.mark.parametrize("text", ["", " 1", "1.0", "08", "1__0", "_1", "1_", "0x", "--1", "1e3"])
def test_int32_rejects_malformed_numbers_as_invalid_syntax(text: str) -> None:
    assert error_of(Int32Value(), text) == f'strconv.ParseInt: parsing "{text}": invalid syntax'


@pytest.mark.parametrize("text", ["2147483648", "-2147483649", "99999999999999999999999"])
def test_int32_rejects_out_of_range_values(text: str) -> None:
    assert error_of(Int32Value(), text) == f'strconv.ParseInt: parsing "{text}": value out of range'


def test_int64_holds_values_beyond_int32() -> None:
    assert set_all(Int64Value(), "9223372036854775807") == 2**63 - 1
    assert "value out of range" in error_of(Int64Value(), "9223372036854775808")


def test_uint_rejects_a_sign_with_parse_uint_message() -> None:
    assert error_of(UintValue(), "-1") == 'strconv.ParseUint: parsing "-1": invalid syntax'


def test_float32_rejects_values_beyond_float32_range() -> None:
    assert (
        error_of(Float32Value(), "1e39") == 'strconv.ParseFloat: parsing "1e39": value out of range'
    )


@pytest.mark.parametrize("text", ["abc", "", "1.2.3", " 1"])
def test_float_rejects_malformed_numbers(text: str) -> None:
    assert error_of(Float32Value(), text) == f'strconv.ParseFloat: parsing "{text}": invalid syntax'


def test_go_quote_in_messages_escapes_like_strconv_quote() -> None:
    assert error_of(Int32Value(), 'a"b\n') == 'strconv.ParseInt: parsing "a\\"b\\n": invalid syntax'


# --- durations, quantities, IPs ------------------------------------------------------------


def test_duration_keeps_the_text_for_the_config_file() -> None:
    assert set_all(DurationValue(), "2h45m") == "2h45m"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("5", 'time: missing unit in duration "5"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("", 'time: invalid duration ""'),
    ],
)
def test_duration_rejects_with_go_message(text: str, message: str) -> None:
    assert error_of(DurationValue(), text) == message


def test_quantity_rejects_with_kubernetes_message() -> None:
    assert error_of(QuantityValue(), "1Q").startswith(
        "quantities must match the regular expression"
    )


@pytest.mark.parametrize("text", ["10.0.0.1", "::1", "010.001.0.1", ""])
def test_ip_accepts_sloppy_ips_and_empty(text: str) -> None:
    assert set_all(IPValue(), text) == text


@pytest.mark.parametrize("text", ["1.2.3", "256.1.1.1", "host", "fe80::1%eth0"])
def test_ip_rejects_non_ips(text: str) -> None:
    assert error_of(IPValue(), text) == f'"{text}" is not a valid IP address'


@pytest.mark.parametrize("text", ["0.0.0.0:10256", "127.0.0.1", "[::1]:80", ""])
def test_ipport_accepts_ip_or_ip_port(text: str) -> None:
    assert set_all(IPPortValue(), text) == text


def test_ipport_names_a_missing_port_like_go() -> None:
    message = error_of(IPPortValue(), "host")
    assert message == (
        '"host" is not in a valid format (ip or ip:port): address host: missing port in address'
    )


def test_ipport_rejects_a_hostname_host() -> None:
    assert error_of(IPPortValue(), "localhost:80") == '"localhost" is not a valid IP address'


# --- lists and maps ------------------------------------------------------------------


def test_string_slice_reads_csv_and_appends_later_values() -> None:
    assert set_all(StringSliceValue(), "a,b", '"c,d",e') == ["a", "b", "c,d", "e"]


def test_string_slice_of_empty_text_is_empty() -> None:
    assert set_all(StringSliceValue(), "") == []


def test_string_slice_rejects_a_bare_quote_like_encoding_csv() -> None:
    assert error_of(StringSliceValue(), 'a"b') == (
        'parse error on line 1, column 2: bare " in non-quoted-field'
    )


def test_map_string_bool_merges_pairs_and_trims_spaces() -> None:
    assert set_all(MapStringBoolValue(), "A=true, B=false", "A=false") == {"A": False, "B": False}


def test_map_string_bool_names_the_bad_entry() -> None:
    assert error_of(MapStringBoolValue(), "A=maybe") == (
        'invalid value of A: maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax'
    )


def test_map_string_bool_rejects_a_pair_without_equals() -> None:
    assert error_of(MapStringBoolValue(), "A") == "malformed pair, expect string=bool"


def test_map_string_string_splits_on_commas() -> None:
    assert set_all(MapStringStringValue(), "cpu=1,memory=2Gi") == {"cpu": "1", "memory": "2Gi"}


def test_map_string_string_no_split_keeps_commas_in_the_value() -> None:
    value = MapStringStringValue(no_split=True)
    assert set_all(value, "full-pcpus-only=a,b") == {"full-pcpus-only": "a,b"}


def test_langle_map_reads_eviction_thresholds() -> None:
    value = MapStringStringValue(separator="<")
    assert set_all(value, "memory.available<100Mi,nodefs.available<10%") == {
        "memory.available": "100Mi",
        "nodefs.available": "10%",
    }
    assert (
        error_of(MapStringStringValue(separator="<"), "x") == "malformed pair, expect string<string"
    )


def test_configuration_map_allows_keys_without_values() -> None:
    assert set_all(ConfigurationMapValue(), "role=infra,gpu") == {"role": "infra", "gpu": ""}


def test_colon_multimap_appends_repeated_keys() -> None:
    assert set_all(ColonMultimapValue(), "a:1,b:2", "a:3") == {"a": ["1", "3"], "b": ["2"]}
    assert error_of(ColonMultimapValue(), "a") == "malformed pair, expect string:string"


def test_taints_parse_key_value_effect() -> None:
    assert set_all(TaintsValue(), "dedicated=infra:NoSchedule,gpu:NoExecute") == [
        {"key": "dedicated", "effect": "NoSchedule", "value": "infra"},
        {"key": "gpu", "effect": "NoExecute"},
    ]


def test_taints_reject_an_unknown_effect() -> None:
    assert error_of(TaintsValue(), "a=b:Sometimes") == (
        "invalid taint effect: Sometimes, unsupported taint effect"
    )


def test_reserved_memory_reads_numa_reservations() -> None:
    assert set_all(ReservedMemoryValue(), "0:memory=1Gi,hugepages-2Mi=2Gi;1:memory=2Gi") == [
        {"numaNode": 0, "limits": {"memory": "1Gi", "hugepages-2Mi": "2Gi"}},
        {"numaNode": 1, "limits": {"memory": "2Gi"}},
    ]


def test_reserved_memory_rejects_an_unknown_memory_type() -> None:
    assert error_of(ReservedMemoryValue(), "0:cpu=1") == (
        'memory type conversion error, unknown type: "cpu"'
    )


# --- logging and version -------------------------------------------------------------------


def test_verbosity_is_a_base_ten_unsigned_level() -> None:
    assert set_all(VerbosityValue(), "4") == 4
    assert error_of(VerbosityValue(), "-1") == 'strconv.ParseUint: parsing "-1": invalid syntax'


def test_vmodule_collects_pattern_levels() -> None:
    assert set_all(VModuleValue(), "kubelet*=4,,server=2") == [
        {"filePattern": "kubelet*", "verbosity": 4},
        {"filePattern": "server", "verbosity": 2},
    ]
    assert error_of(VModuleValue(), "x") == '"x" does not have the pattern=N format'


def test_version_accepts_bool_raw_and_semver() -> None:
    assert set_all(VersionValue(), "raw") == "raw"
    assert set_all(VersionValue(), "v1.33.1") == "v1.33.1"
    assert set_all(VersionValue(), "false") == "false"
    assert VersionValue.is_bool


def test_text_values_accept_anything_and_name_their_go_type() -> None:
    proxy_mode = text_value("ProxyMode")
    assert proxy_mode.type_name == "ProxyMode"
    assert set_all(proxy_mode(), "userspace") == "userspace"


def test_bool_value_may_be_given_bare() -> None:
    assert BoolValue.is_bool and not Int32Value.is_bool
