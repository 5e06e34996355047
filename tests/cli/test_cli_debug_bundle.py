"""``nodehost debug bundle``: one tar.gz with what a maintainer needs, and no secret in it."""

from __future__ import annotations

import base64
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodehost.bundle.redact import REDACTED, is_secret_name, redact_data, redact_text
from nodehost.testing.nodefolder import NodeFolder

PLANTED = ("nhlife-planted-token-7f3a9c", "nhlife-planted-password-1b2c")


def plant_secrets(node_folder: NodeFolder) -> list[str]:
    """Add a token and a password to the node's kubeconfig; every secret string now in it."""
    kubeconfig = node_folder.kubeconfig
    document = yaml.safe_load(kubeconfig.read_text())
    user = document["users"][0]["user"]
    user["token"], user["password"] = PLANTED
    kubeconfig.write_text(yaml.safe_dump(document))
    key_data = user["client-key-data"]
    key_lines = base64.b64decode(key_data).decode().splitlines()[1:-1]  # the PEM body
    return [*PLANTED, key_data, *key_lines]


def members(path: Path) -> dict[str, str]:
    with tarfile.open(path) as archive:
        return {
            member.name.split("/", 1)[1]: archive.extractfile(member).read().decode()  # type: ignore[union-attr]
            for member in archive.getmembers()
            if member.isfile()
        }


def test_bundle_of_a_running_node_holds_no_planted_secret(
    nodehost_cli: Any, node_folder: NodeFolder, node_run: Any, tmp_path: Path
) -> None:
    secrets = plant_secrets(node_folder)
    run = node_run(node_folder.config_path, components="kubelet", args=["--no-exec"]).ready()
    output = tmp_path / "bundle.tar.gz"
    result = nodehost_cli(
        "debug", "bundle", "-o", str(output), "--config", str(node_folder.config_path),
        "--state-dir", str(run.state_dir),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert output.stat().st_mode & 0o777 == 0o600
    found = members(output)
    for name in ("versions.json", "status.json", "metrics.txt", "logs/kubelet.txt",
                 "config/node-config.yaml", "config/plan.json", "network/addresses.json"):  # fmt: skip
        assert name in found, sorted(found)
    assert "kubelet: " in found["logs/kubelet.txt"]  # the stand-in's own lines
    kubeconfig = next(text for name, text in found.items() if name.endswith("node.kubeconfig"))
    assert kubeconfig.count(REDACTED) == 3  # token, password, client-key-data
    for name, text in found.items():
        for secret in secrets:
            assert secret not in text, f"{secret[:20]}... in {name}"


def test_what_cannot_be_collected_is_listed_not_fatal(nodehost_cli: Any, tmp_path: Path) -> None:
    output = tmp_path / "bundle.tar.gz"
    result = nodehost_cli(
        "debug", "bundle", "-o", str(output), "--state-dir", str(tmp_path / "state"),
        "--health-address", "none",
    )  # fmt: skip
    assert result.code == 0, result.err
    readme = members(output)["README.txt"]
    assert "no --config or NODEHOST_CONFIG" in readme
    assert "status and logs: not collected" in readme


def test_an_existing_output_file_is_not_overwritten(nodehost_cli: Any, tmp_path: Path) -> None:
    output = tmp_path / "bundle.tar.gz"
    output.write_text("keep")
    result = nodehost_cli("debug", "bundle", "-o", str(output), "--health-address", "none")
    assert result.code == 2 and "-o" in result.err
    assert output.read_text() == "keep"


@pytest.mark.parametrize(
    "name",
    ["token", "client-key-data", "clientKeyData", "bootstrapToken", "password", "auth",
     "identitytoken", "registry_auth", "private-key", "apiKey", "secrets"],
)  # fmt: skip
def test_secret_key_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "keyFile",
        "tokenFile",
        "authentication",
        "authorization",
        "certFile",
        "clientCA",
        "secretRef",
    ],
)
def test_names_of_paths_and_settings_are_kept(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEsecretbody\n-----END RSA PRIVATE KEY-----", "MIIEsecretbody"),
        ('password = "hunter2"', "hunter2"),
        ("token: s3cr3t-value", "s3cr3t-value"),
        ('{"auth": "dXNlcjpwYXNz"}', "dXNlcjpwYXNz"),
        ('[registry.configs."r.example".auth]\n  auth = "cm9vdDpzM2NyM3Q="', "cm9vdDpzM2NyM3Q="),
        ('  identitytoken = "idt-0123"', "idt-0123"),
        ("Authorization: Bearer abc.def-ghi", "abc.def-ghi"),
        ("pulling https://bob:pa55@registry.example/x", "pa55"),
        ("join with abcdef.0123456789abcdef now", "0123456789abcdef"),
        ("jwt eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl", "c2lnbmF0dXJl"),
    ],
)  # fmt: skip
def test_text_secrets_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact_text(text)
    assert REDACTED in redact_text(text)


def test_structured_secrets_are_redacted_and_the_rest_kept() -> None:
    document = {
        "auths": {"registry.example": {"auth": "c2VjcmV0", "username": "bob"}},
        "servingInfo": {"keyFile": "/etc/node/server.key"},
        "note": "password=hunter2",
    }
    assert redact_data(document) == {
        "auths": {"registry.example": {"auth": REDACTED, "username": "bob"}},
        "servingInfo": {"keyFile": "/etc/node/server.key"},
        "note": f"password={REDACTED}",
    }
