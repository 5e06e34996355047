"""The flag tables against the listing derived from upstream sources (tools/upstream-flags.json).

Every flag the pinned upstream files register must be in the table with the
same pflag type, deprecation and shorthand, or be a removed flag (removed
after the sources' release line); every other flag in the table must be in the
program's named overlay with a reason.  The generator itself is tested on a
small Go fixture.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from nodehost.kube.flags import FlagSet
from nodehost.plugins.kubelet.flags import KUBELET_FLAGS, KUBELET_FLAGS_NOT_IN_SOURCES
from nodehost.plugins.proxy.flags import KUBE_PROXY_FLAGS, KUBE_PROXY_FLAGS_NOT_IN_SOURCES

TOOLS = Path(__file__).resolve().parents[2] / "tools"
LISTING = json.loads((TOOLS / "upstream-flags.json").read_text(encoding="utf-8"))

#: program -> (its flag table, its overlay, the oldest release its pinned sources can be).
TABLES: dict[str, tuple[FlagSet, dict[str, str], tuple[int, int]]] = {
    "kubelet": (KUBELET_FLAGS, KUBELET_FLAGS_NOT_IN_SOURCES, (1, 28)),
    "kube-proxy": (KUBE_PROXY_FLAGS, KUBE_PROXY_FLAGS_NOT_IN_SOURCES, (1, 31)),
}


def upstream(program: str) -> dict[str, dict]:
    return LISTING["programs"][program]["flags"]


def release(text: str) -> tuple[int, int]:
    major, minor = re.fullmatch(r"v(\d+)\.(\d+)", text).groups()
    return int(major), int(minor)


@pytest.mark.parametrize("program", TABLES)
def test_every_upstream_flag_is_in_the_table_with_its_type(program: str) -> None:
    flags, _, _ = TABLES[program]
    wrong = {}
    for name, listed in upstream(program).items():
        flag = flags.lookup(name)
        if flag is None:
            continue  # see test_upstream_flags_missing_from_the_table_were_removed_since
        have = {
            "type": flag.new_value().type_name if listed["type"] else None,
            "deprecated": flag.deprecated,
            "shorthand": flag.shorthand,
        }
        want = {key: listed[key] for key in have}
        if have != want:
            wrong[name] = (have, want)
    assert wrong == {}


@pytest.mark.parametrize("program", TABLES)
def test_upstream_flags_missing_from_the_table_were_removed_since(program: str) -> None:
    flags, _, floor = TABLES[program]
    for name in upstream(program):
        if flags.lookup(name) is None:
            assert name in flags.removed, f"--{name} is upstream but not in the {program} table"
            assert release(flags.removed[name].removed_in) > floor, name


@pytest.mark.parametrize("program", TABLES)
def test_every_other_flag_in_the_table_is_in_the_overlay_with_a_reason(program: str) -> None:
    flags, overlay, _ = TABLES[program]
    extra = {flag.name for flag in flags} - set(upstream(program))
    assert extra == set(overlay)
    assert all(reason.strip() for reason in overlay.values())


def test_the_listing_names_a_commit_for_every_source() -> None:
    for path, source in LISTING["sources"].items():
        assert re.fullmatch(r"[0-9a-f]{40}|v\d+\.\d+\.\d+", source["commit"]), path
    used = {f["source"] for p in TABLES for f in upstream(p).values()}
    assert used <= set(LISTING["sources"])


def test_no_hidden_upstream_flag_is_hidden_in_the_listing_unnoticed() -> None:
    # pflag's MarkHidden flags still parse; the tables have no notion of hidden, so none
    # may appear in the listing without a decision here.
    hidden = {n for p in TABLES for n, f in upstream(p).items() if f["hidden"]}
    assert hidden == set()


# --- the generator ---------------------------------------------------------------------


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kubeflags", TOOLS / "kubeflags.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


OPTIONS_GO = r"""
func (s *KubeletServer) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.Ignored, "not-read", "", "KubeletServer.AddFlags is not the flags' source")
}
func (f *KubeletFlags) AddFlags(mainfs *pflag.FlagSet) {
	fs := pflag.NewFlagSet("", pflag.ExitOnError)
	f.ContainerRuntimeOptions.AddFlags(fs)
	fs.StringVar(&f.KubeConfig, "kubeconfig", f.KubeConfig, "a path // not a comment")
	bindable := cliflag.ConfigurationMap(f.NodeLabels)
	fs.Var(&bindable, "node-labels", fmt.Sprintf("(%s)", strings.Join(x, ", ")))
	fs.Int32Var(&f.Max, "maximum-dead-containers", f.Max, "...")
	fs.MarkDeprecated("maximum-dead-containers", "Use \"--eviction-hard\" instead.")
	fs.BoolVar(&f.Secret, "secret", false, `raw
string`)
	fs.MarkHidden("secret")
}
func AddKubeletConfigFlags(mainfs *pflag.FlagSet, c *kubeletconfig.KubeletConfiguration) {
	fs := pflag.NewFlagSet("", pflag.ExitOnError)
	defer func() {
		deprecated := "Set it in the config file."
		notDeprecated := map[string]bool{
			"v":           true,
			"provider-id": true,
		}
		fs.VisitAll(func(f *pflag.Flag) {
			f.Deprecated = deprecated
		})
	}()
	fs.Var(&utilflag.IPVar{Val: &c.Address}, "address", "...")
	fs.StringVar(&c.ProviderID, "provider-id", c.ProviderID, "...")
	logsapi.AddFlags(&c.Logging, fs)
}
"""

CADVISOR_GO = """
func addCadvisorFlags(fs *pflag.FlagSet) {
	register(global, local, "housekeeping_interval")
	const deprecated = "A cadvisor flag."
	registerDeprecated(global, local, "boot_id_file", deprecated)
}
"""

LOGS_GO = """
const LogFlushFreqFlagName = "log-flush-frequency"
func AddFlags(c *LoggingConfiguration, fs *pflag.FlagSet) {
	fs.DurationVar(&c.FlushFrequency, LogFlushFreqFlagName, c.FlushFrequency, "...")
	fs.VarP(VerbosityLevelPflag(&c.Verbosity), "v", "v", "...")
}
"""

PROXY_GO = """
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Var(&o.config.Mode, "proxy-mode", "...")
	logsapi.AddFlags(&o.config.Logging, fs)
}
"""


def run_generator(tmp_path: Path, options: str = OPTIONS_GO) -> tuple[int, dict]:
    sources = {"options": options, "cadvisor": CADVISOR_GO, "logs": LOGS_GO, "proxy": PROXY_GO}
    for name, text in sources.items():
        (tmp_path / f"{name}.go").write_text(text, encoding="utf-8")
    out = tmp_path / "listing.json"
    code = load_generator().main(
        [
            f"--kubelet-options={tmp_path / 'options.go'}",
            f"--kubelet-cadvisor={tmp_path / 'cadvisor.go'}",
            f"--logs={tmp_path / 'logs.go'}",
            f"--kube-proxy-options={tmp_path / 'proxy.go'}",
            f"--out={out}",
        ]
    )
    return code, json.loads(out.read_text()) if out.exists() else {}


def test_generator_reads_registrations_deprecations_and_the_config_flag_rule(tmp_path) -> None:
    code, listing = run_generator(tmp_path)
    assert code == 0
    kubelet = listing["programs"]["kubelet"]["flags"]
    summary = {name: (f["type"], f["deprecated"], f["hidden"]) for name, f in kubelet.items()}
    assert summary == {
        "kubeconfig": ("string", "", False),
        "node-labels": ("mapStringString", "", False),
        "maximum-dead-containers": ("int32", 'Use "--eviction-hard" instead.', False),
        "secret": ("bool", "", True),
        "address": ("ip", "Set it in the config file.", False),
        "provider-id": ("string", "", False),
        "log-flush-frequency": ("duration", "Set it in the config file.", False),
        "v": ("Level", "", False),
        "housekeeping-interval": (None, "", False),
        "boot-id-file": (None, "A cadvisor flag.", False),
    }
    assert kubelet["v"]["shorthand"] == "v"
    assert listing["programs"]["kubelet"]["not_expanded"] == [
        "cmd/kubelet/app/options/options.go: ContainerRuntimeOptions.AddFlags"
    ]
    assert set(listing["programs"]["kube-proxy"]["flags"]) == {
        "proxy-mode",
        "v",
        "log-flush-frequency",
    }


def test_generator_refuses_a_value_type_it_does_not_know(tmp_path, capsys) -> None:
    options = OPTIONS_GO.replace("utilflag.IPVar{", "utilflag.NewThing{")
    code, listing = run_generator(tmp_path, options)
    assert (code, listing) == (1, {})
    assert "--address: unknown value type 'utilflag.NewThing'" in capsys.readouterr().err
