"""FlagSet: Origin's Resolve, pflag's command-line parsing, removed flags, config documents."""

from __future__ import annotations

import pytest

from nodehost.kube.flags import Flag, FlagSet, HelpRequested, RemovedFlag, flag_arguments
from nodehost.kube.goparse import FlagError
from nodehost.kube.values import (
    BoolValue,
    DurationValue,
    Int32Value,
    StringSliceValue,
    StringValue,
    VerbosityValue,
)

FLAGS = FlagSet(
    "prog",
    (
        Flag("port", Int32Value, config_field="port"),
        Flag("address", StringValue, config_field="address"),
        Flag("anonymous-auth", BoolValue, config_field="authentication.anonymous.enabled"),
        Flag("webhook", BoolValue, config_field="authentication.webhook.enabled"),
        Flag("names", StringSliceValue, config_field="names"),
        Flag("ttl", DurationValue, config_field="cache.ttl"),
        Flag("kubeconfig", StringValue),
        Flag("old-port", Int32Value, deprecated="use --port"),
        Flag("v", VerbosityValue, shorthand="v"),
        Flag("quiet", BoolValue, shorthand="q"),
    ),
    removed=(
        RemovedFlag("gone", "v1.10", "it was gone"),
        RemovedFlag("renamed-port", "v1.20", "renamed", "port"),
    ),
)


# --- resolve (Origin's Resolve) -------------------------------------------------------


def test_resolve_reports_unknown_key_as_not_a_valid_flag() -> None:
    (error,) = FLAGS.resolve({"missing-key": ["value"]}).errors
    assert (error.key, error.value, error.detail, error.unknown) == (
        "missing-key",
        "missing-key",
        "is not a valid flag",
        True,
    )


def test_resolve_reports_the_first_bad_value_with_could_not_be_set() -> None:
    (error,) = FLAGS.resolve({"port": ["1", "bad", "worse"]}).errors
    assert error.value == "bad"
    assert error.detail == 'could not be set: strconv.ParseInt: parsing "bad": invalid syntax'
    assert not error.unknown


def test_resolve_reports_every_key_in_sorted_order() -> None:
    errors = FLAGS.resolve({"zzz": ["1"], "port": ["x"], "aaa": ["1"]}).errors
    assert [error.key for error in errors] == ["aaa", "port", "zzz"]


def test_resolve_sets_values_in_order_with_the_last_scalar_winning() -> None:
    values = FLAGS.resolve({"port": ["1", "2"], "names": ["a", "b,c"]}).values
    assert values["port"].config() == 2
    assert values["names"].config() == ["a", "b", "c"]


def test_resolve_accepts_a_known_key_with_no_values_and_sets_nothing() -> None:
    resolution = FLAGS.resolve({"port": []})
    assert resolution.errors == [] and resolution.values == {}


def test_resolve_does_not_read_underscores_as_dashes() -> None:
    assert FLAGS.resolve({"anonymous_auth": ["true"]}).errors[0].unknown


# --- config documents ------------------------------------------------------------------


def test_config_document_nests_dotted_fields_and_skips_command_line_flags() -> None:
    values = FLAGS.resolve(
        {"port": ["10250"], "anonymous-auth": ["false"], "webhook": ["true"], "kubeconfig": ["k"]}
    ).values
    assert FLAGS.config_document(values) == {
        "port": 10250,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True}},
    }


def test_check_document_accepts_what_config_document_writes() -> None:
    values = FLAGS.resolve({"port": ["1"], "names": ["a"], "ttl": ["5m"]}).values
    document = {"apiVersion": "x/v1", "kind": "K", **FLAGS.config_document(values)}
    fields = frozenset({"port", "names", "cache"})
    assert FLAGS.check_document(document, api_version="x/v1", kind="K", fields=fields) == []


def test_check_document_names_wrong_type_unknown_field_and_type_meta() -> None:
    document = {
        "apiVersion": "x/v2",
        "kind": "K",
        "port": "10250",
        "extra": 1,
        "cache": {"ttl": "5"},
    }
    problems = FLAGS.check_document(
        document, api_version="x/v1", kind="K", fields=frozenset({"port", "cache"})
    )
    assert problems == [
        "apiVersion: expected 'x/v1', got 'x/v2'",
        "extra: unknown field",
        "port: expected integer, got '10250'",
        "cache.ttl: expected duration, got '5'",
    ]


def test_check_document_refuses_a_non_mapping() -> None:
    assert FLAGS.check_document(["a"], api_version="x/v1", kind="K", fields=frozenset()) == [
        "expected a K mapping, got list"
    ]


def test_launch_splits_settings_into_the_file_and_the_command_line() -> None:
    launch = FLAGS.launch(
        {"port": ["1"], "kubeconfig": ["/k"], "names": ["a", "b"]}, api_version="x/v1", kind="K"
    )
    assert launch.document == {"apiVersion": "x/v1", "kind": "K", "names": ["a", "b"], "port": 1}
    assert launch.flags == ("--kubeconfig=/k",)
    assert set(launch.values) == {"port", "kubeconfig", "names"}


def test_launch_refuses_arguments_the_program_would_reject_naming_each() -> None:
    with pytest.raises(FlagError) as caught:
        FLAGS.launch({"nope": ["1"], "port": ["x"]}, api_version="x/v1", kind="K")
    assert str(caught.value) == (
        "invalid prog arguments: nope is not a prog flag; "
        "port='x' could not be set: strconv.ParseInt: parsing \"x\": invalid syntax"
    )


def test_flag_arguments_are_sorted_by_key_with_values_in_order() -> None:
    assert flag_arguments({"b": ["2", "1"], "a": ["x"]}) == ["--a=x", "--b=2", "--b=1"]


# --- translate (removed flags) --------------------------------------------------------------


def test_translate_drops_a_removed_flag_without_replacement() -> None:
    arguments, (found,) = FLAGS.translate({"gone": ["x"], "port": ["1"]})
    assert arguments == {"port": ["1"]}
    assert found.key == "gone" and not found.ignored
    assert found.removed.describe() == "removed in v1.10 (it was gone); nodehost drops it"


def test_translate_passes_values_to_the_replacement() -> None:
    arguments, (found,) = FLAGS.translate({"renamed-port": ["7"]})
    assert arguments == {"port": ["7"]}
    assert found.removed.describe().endswith("nodehost passes its values as port")


def test_translate_lets_an_explicit_replacement_win() -> None:
    arguments, (found,) = FLAGS.translate({"renamed-port": ["7"], "port": ["8"]})
    assert arguments == {"port": ["8"]} and found.ignored


# --- parse_args (pflag) ------------------------------------------------------------------


def parse(*argv: str):
    return FLAGS.parse_args(list(argv))


def test_parse_accepts_equals_and_separate_values() -> None:
    parsed = parse("--port=1", "--address", "10.0.0.1")
    assert parsed.values["port"].config() == 1
    assert parsed.values["address"].config() == "10.0.0.1"


def test_parse_reads_a_bare_boolean_as_true_and_never_consumes_the_next_argument() -> None:
    parsed = parse("--webhook", "false")
    assert parsed.values["webhook"].config() is True
    assert parsed.positional == ["false"]


def test_parse_reads_shorthands_combined_and_attached() -> None:
    assert parse("-qv3").values["v"].config() == 3
    assert parse("-v", "5").values["v"].config() == 5
    assert parse("-v=6").values["v"].config() == 6


def test_parse_reads_underscores_as_dashes_like_kubernetes_programs() -> None:
    assert parse("--anonymous_auth=false").values["anonymous-auth"].config() is False


def test_parse_stops_at_double_dash() -> None:
    assert parse("--port=1", "--", "--address=x").positional == ["--address=x"]


def test_parse_reports_deprecated_flags_like_pflag() -> None:
    assert parse("--old-port=1").warnings == ["Flag --old-port has been deprecated, use --port"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--foo"], "unknown flag: --foo"),
        (["--foo=1"], "unknown flag: --foo"),
        (["-x"], "unknown shorthand flag: 'x' in -x"),
        (["--port"], "flag needs an argument: --port"),
        (["-v"], "flag needs an argument: 'v' in -v"),
        (["---port=1"], "bad flag syntax: ---port=1"),
        (
            ["--port=x"],
            'invalid argument "x" for "--port" flag: strconv.ParseInt: parsing "x": invalid syntax',
        ),
        (
            ["-v=x"],
            'invalid argument "x" for "-v, --v" flag: '
            'strconv.ParseUint: parsing "x": invalid syntax',
        ),
    ],
)
def test_parse_errors_use_pflag_wording(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError) as caught:
        FLAGS.parse_args(argv)
    assert str(caught.value) == message


def test_parse_signals_an_undefined_help_flag() -> None:
    with pytest.raises(HelpRequested):
        parse("--help")


def test_a_flag_set_refuses_duplicate_names() -> None:
    with pytest.raises(ValueError, match="defined twice"):
        FlagSet("p", (Flag("a", StringValue), Flag("a", StringValue)))
