"""``create_node_folder``: Origin's files and contents, safe reuse, all-or-nothing writes."""

from __future__ import annotations

import base64
import datetime
import json
import stat
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from nodehost.config.listen import parse_listen
from nodehost.errors import PKIError, UsageError
from nodehost.pki import atomic as atomic_module
from nodehost.pki.certs import decode_certificates
from nodehost.pki.nodefolder import create_node_folder

NON_TLS_FILES = {
    "master-client.crt", "master-client.key", "node.kubeconfig", "node-config.yaml",
    "node-registration.json", "ca.crt",
}  # fmt: skip
TLS_FILES = NON_TLS_FILES | {"server.crt", "server.key", "node-client-ca.crt"}


def visible(folder: Path) -> list[Path]:
    """What ``ls`` shows: nodehost's versions live in hidden ``.nodehost-*`` entries."""
    return [path for path in folder.iterdir() if not path.name.startswith(".")]


def names_in(folder: Path) -> set[str]:
    return {path.name for path in visible(folder)}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in visible(folder)}


def leaf(path: Path) -> x509.Certificate:
    return decode_certificates(path.read_bytes(), str(path))[0]


def load_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


# --- the files ----------------------------------------------------------------------------


def test_tls_folder_holds_origins_tls_file_set(request_factory, tmp_path: Path) -> None:
    create_node_folder(request_factory())
    assert names_in(tmp_path / "node1") == TLS_FILES


def test_http_listen_folder_holds_origins_non_tls_file_set(request_factory, tmp_path) -> None:
    create_node_folder(request_factory(listen=parse_listen("http://0.0.0.0")))
    assert names_in(tmp_path / "node1") == NON_TLS_FILES


def test_file_modes_are_origins(request_factory, tmp_path: Path) -> None:
    create_node_folder(request_factory())
    folder = tmp_path / "node1"
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in visible(folder)}
    private = {"master-client.key", "server.key", "node.kubeconfig"}
    assert modes == {name: 0o600 if name in private else 0o644 for name in TLS_FILES}
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755


def test_nested_node_dir_parents_are_created(request_factory, tmp_path: Path) -> None:
    create_node_folder(request_factory(node_dir=str(tmp_path / "a" / "b" / "node1")))
    assert names_in(tmp_path / "a" / "b" / "node1") == TLS_FILES


def test_ca_file_concatenates_every_certificate_authority(
    request_factory, make_ca, ca_dir, tmp_path
):
    other = make_ca("other", "ecdsa")
    create_node_folder(
        request_factory(certificate_authority=(str(ca_dir / "ca.crt"), str(other / "ca.crt")))
    )
    expected = (ca_dir / "ca.crt").read_bytes() + b"\n" + (other / "ca.crt").read_bytes()
    assert (tmp_path / "node1" / "ca.crt").read_bytes() == expected


def test_registration_is_a_v1_node_with_only_its_name(request_factory, tmp_path: Path) -> None:
    create_node_folder(request_factory())
    node = json.loads((tmp_path / "node1" / "node-registration.json").read_text())
    assert (node["kind"], node["apiVersion"], node["metadata"]["name"]) == ("Node", "v1", "node1")


# --- certificates -------------------------------------------------------------------------


def test_client_certificate_is_for_the_node_user_in_system_nodes(request_factory, tmp_path) -> None:
    create_node_folder(request_factory())
    cert = leaf(tmp_path / "node1" / "master-client.crt")
    assert cert.subject.rfc4514_string() == "CN=system:node:node1,O=system:nodes"
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usages) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_server_certificate_names_sorted_hostnames(request_factory, tmp_path: Path) -> None:
    create_node_folder(request_factory(hostnames=("node1.example.com", "10.0.0.1", "a.example")))
    cert = leaf(tmp_path / "node1" / "server.crt")
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "10.0.0.1"
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["a.example", "node1.example.com", "10.0.0.1"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["10.0.0.1"]


def test_server_certificate_file_carries_the_signer_chain(request_factory, ca_dir, tmp_path):
    create_node_folder(request_factory())
    chain = decode_certificates((tmp_path / "node1" / "server.crt").read_bytes(), "server.crt")
    assert chain[1:] == decode_certificates((ca_dir / "ca.crt").read_bytes(), "ca.crt")


def test_certificates_live_730_days_by_default(request_factory, tmp_path: Path) -> None:
    result = create_node_folder(request_factory(expire_days=0))
    cert = leaf(tmp_path / "node1" / "master-client.crt")
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days == 730
    assert result.warnings == ()


def test_lifetime_above_default_warns_once_per_issued_certificate(request_factory) -> None:
    result = create_node_folder(request_factory(expire_days=1000))
    assert [w.splitlines()[0] for w in result.warnings] == [
        'WARNING: Validity period of the certificate for "system:node:node1" is greater than 2 years!',
        'WARNING: Validity period of the certificate for "10.0.0.1" is greater than 2 years!',
    ]


def test_serials_come_from_the_signer_serial_file(request_factory, ca_dir, tmp_path) -> None:
    create_node_folder(request_factory())
    serials = {
        leaf(tmp_path / "node1" / n).serial_number for n in ("master-client.crt", "server.crt")
    }
    assert serials == {2, 3}
    assert (ca_dir / "ca.serial.txt").read_bytes() == b"03"


# --- node.kubeconfig and node-config.yaml ------------------------------------------------------


def test_kubeconfig_uses_origins_nicknames_and_inline_data(request_factory, tmp_path) -> None:
    create_node_folder(request_factory())
    folder = tmp_path / "node1"
    config = load_yaml(folder / "node.kubeconfig")
    assert config["current-context"] == "default/master-example-com:8443/system:node:node1"
    assert config["clusters"][0]["name"] == "master-example-com:8443"
    assert config["clusters"][0]["cluster"]["server"] == "https://master.example.com:8443"
    user = config["users"][0]
    assert user["name"] == "system:node:node1/master-example-com:8443"
    assert (
        base64.b64decode(user["user"]["client-key-data"])
        == (folder / "master-client.key").read_bytes()
    )
    ca_data = config["clusters"][0]["cluster"]["certificate-authority-data"]
    assert base64.b64decode(ca_data) == (folder / "ca.crt").read_bytes()


def test_node_config_paths_are_relative_to_the_node_folder(request_factory, tmp_path) -> None:
    create_node_folder(request_factory(volume_dir=str(tmp_path / "volumes")))
    config = load_yaml(tmp_path / "node1" / "node-config.yaml")
    assert config["servingInfo"]["certFile"] == "server.crt"
    assert config["servingInfo"]["keyFile"] == "server.key"
    assert config["servingInfo"]["clientCA"] == "node-client-ca.crt"
    assert config["masterKubeConfig"] == "node.kubeconfig"
    assert config["volumeDirectory"] == str(tmp_path / "volumes")


def test_relative_volume_dir_is_made_absolute_from_the_current_directory(
    request_factory, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    create_node_folder(request_factory(node_dir="node1"))
    config = load_yaml(tmp_path / "node1" / "node-config.yaml")
    assert config["volumeDirectory"] == str(tmp_path / "openshift.local.volumes")


def test_node_config_gets_v1_defaults_and_protobuf(request_factory, tmp_path: Path) -> None:
    create_node_folder(request_factory())
    config = load_yaml(tmp_path / "node1" / "node-config.yaml")
    overrides = config["masterClientConnectionOverrides"]
    assert overrides["contentType"] == "application/vnd.kubernetes.protobuf"
    assert (overrides["qps"], overrides["burst"]) == (20, 40)
    assert config["networkConfig"]["mtu"] == 1450
    assert config["servingInfo"]["bindNetwork"] == "tcp4"
    # settings nodehost has no use for are left out at Origin's defaults (Origin reads the same)
    assert "enableUnidling" not in config and "allowDisabledDocker" not in config
    assert config["dockerConfig"] == {"dockerShimSocket": "unix:///var/run/dockershim.sock"}


def test_node_config_starts_with_api_version_and_kind(request_factory, tmp_path: Path) -> None:
    create_node_folder(request_factory())
    lines = (tmp_path / "node1" / "node-config.yaml").read_text().splitlines()
    assert lines[:2] == ["apiVersion: v1", "kind: NodeConfig"]


@pytest.mark.parametrize(
    ("listen", "bind_address"),
    [("0.0.0.0:10250", "0.0.0.0:10250"), ("https://10.1.2.3:8443", "10.1.2.3:8443"),
     ("https://[::1]:8443", "[::1]:8443"), ("http://10.0.0.5", "10.0.0.5:80"), ("[::]:10250", "[::]:10250")],
)  # fmt: skip
def test_bind_address_is_listen_host_and_port(request_factory, tmp_path, listen, bind_address):
    create_node_folder(request_factory(listen=parse_listen(listen, default_port=10250)))
    config = load_yaml(tmp_path / "node1" / "node-config.yaml")
    assert config["servingInfo"]["bindAddress"] == bind_address


def test_kubelet_arguments_are_written(request_factory, tmp_path: Path) -> None:
    create_node_folder(request_factory(kubelet_arguments={"fail-swap-on": ("false",)}))
    config = load_yaml(tmp_path / "node1" / "node-config.yaml")
    assert config["kubeletArguments"] == {"fail-swap-on": ["false"]}


def test_generated_node_config_passes_nodehost_validation(request_factory, tmp_path) -> None:
    from nodehost.config.load import load_node_config
    from nodehost.config.validate import validate_node_config

    result = create_node_folder(request_factory())
    config, load_problems = load_node_config(str(result.node_config), strict=True)
    assert load_problems == []
    assert validate_node_config(config) == []  # no error, and no key without effect


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"node_name": "true", "image_format": "reg:5000/x-${component}:1.0", "dns_ip": "10.0.0.10"},
        {"volume_dir": "vol with space/#x", "dns_domain": "yes", "network_plugin": "redhat/x"},
        {"kubelet_arguments": {"fail-swap-on": ("false",)}, "dns_bind_address": "0.0.0.0:53"},
        {"listen": parse_listen("http://127.0.0.1:10250", default_port=10250), "latest_images": True},
    ],
)  # fmt: skip
def test_the_checked_document_is_what_reading_the_written_file_gives(
    request_factory, tmp_path: Path, changes: dict[str, object]
) -> None:
    """``check_config`` validates the mapping the file is written from: reading the file back
    gives an equal mapping, keys in the same order."""
    seen: list[dict[str, object]] = []
    result = create_node_folder(
        request_factory(**changes), check_config=lambda path, doc, files: seen.append(doc)
    )
    written = yaml.safe_load(result.node_config.read_bytes())
    assert seen == [written]
    assert list(seen[0]) == list(written)


# --- reusing what is there ------------------------------------------------------------------


def test_second_run_keeps_keys_and_certificates(request_factory, ca_dir, tmp_path) -> None:
    create_node_folder(request_factory())
    before = snapshot(tmp_path / "node1")
    result = create_node_folder(request_factory())
    after = snapshot(tmp_path / "node1")
    kept = ("master-client.crt", "master-client.key", "server.crt", "server.key")
    assert all(before[name] == after[name] for name in kept)
    assert set(result.reused) == set(kept)
    assert (ca_dir / "ca.serial.txt").read_bytes() == b"03"


def _expect_refusal(request_factory, tmp_path: Path, match: str, **changes) -> None:
    before = snapshot(tmp_path / "node1")
    with pytest.raises(PKIError, match=match):
        create_node_folder(request_factory(**changes))
    assert snapshot(tmp_path / "node1") == before


def test_missing_hostname_in_existing_server_cert_is_refused(request_factory, tmp_path) -> None:
    create_node_folder(request_factory())
    _expect_refusal(
        request_factory, tmp_path,
        r"server\.crt cannot be reused: it does not cover 10\.9\.9\.9, extra\.example; "
        r"use --overwrite to replace server\.crt and server\.key",
        hostnames=("node1.example.com", "10.0.0.1", "10.9.9.9", "extra.example"),
    )  # fmt: skip


def test_certificate_from_another_ca_is_refused(request_factory, make_ca, tmp_path) -> None:
    create_node_folder(request_factory())
    other = make_ca("other", "ecdsa")
    _expect_refusal(
        request_factory, tmp_path, "was not signed by the current signer CA",
        signer_cert=str(other / "ca.crt"), signer_key=str(other / "ca.key"),
        signer_serial=str(other / "ca.serial.txt"),
    )  # fmt: skip


def test_certificate_not_matching_its_key_is_refused(request_factory, tmp_path) -> None:
    create_node_folder(request_factory())
    folder = tmp_path / "node1"
    (folder / "server.key").write_bytes((folder / "master-client.key").read_bytes())
    _expect_refusal(request_factory, tmp_path, "the certificate does not match its key")


def test_certificate_that_does_not_load_is_refused(request_factory, tmp_path) -> None:
    create_node_folder(request_factory())
    (tmp_path / "node1" / "master-client.crt").write_text("garbage\n")
    _expect_refusal(
        request_factory, tmp_path, r"master-client\.crt cannot be reused: it does not load"
    )


def test_client_certificate_of_another_node_is_refused(request_factory, tmp_path) -> None:
    create_node_folder(request_factory())
    _expect_refusal(
        request_factory, tmp_path, "it is for user 'system:node:node1', not 'system:node:node2'",
        node_name="node2",
    )  # fmt: skip


def test_expired_certificate_is_refused(request_factory, ca_dir, tmp_path) -> None:
    from nodehost.pki.ca import load_signer
    from nodehost.pki.certs import encode_certificates
    from nodehost.pki.keys import decode_private_key

    create_node_folder(request_factory())
    folder = tmp_path / "node1"
    signer = load_signer(ca_dir / "ca.crt", ca_dir / "ca.key", ca_dir / "ca.serial.txt")
    key = decode_private_key((folder / "master-client.key").read_bytes(), "key")
    old = leaf(folder / "master-client.crt")
    past = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    expired = (
        x509.CertificateBuilder().subject_name(old.subject).issuer_name(signer.certificate.subject)
        .public_key(key.public_key()).serial_number(99).not_valid_before(past)
        .not_valid_after(past + datetime.timedelta(days=1))
        .sign(signer.key, old.signature_hash_algorithm)
    )  # fmt: skip
    (folder / "master-client.crt").write_bytes(encode_certificates([expired]))
    _expect_refusal(
        request_factory, tmp_path, r"it is not valid now \(valid 2020-01-01 to 2020-01-02\)"
    )


def test_key_without_certificate_is_refused_not_replaced(request_factory, tmp_path) -> None:
    create_node_folder(request_factory())
    (tmp_path / "node1" / "server.crt").unlink()
    _expect_refusal(request_factory, tmp_path, r"server\.key exists but server\.crt does not")


def test_overwrite_replaces_keys_and_certificates(request_factory, tmp_path) -> None:
    create_node_folder(request_factory())
    before = snapshot(tmp_path / "node1")
    result = create_node_folder(request_factory(hostnames=("other.example",), overwrite=True))
    after = snapshot(tmp_path / "node1")
    assert before["server.key"] != after["server.key"]
    assert before["master-client.key"] != after["master-client.key"]
    assert result.reused == ()
    assert stat.S_IMODE((tmp_path / "node1" / "server.key").stat().st_mode) == 0o600


# --- supplied certificates --------------------------------------------------------------------


def test_supplied_client_pair_is_copied_without_a_signer(request_factory, tmp_path) -> None:
    create_node_folder(request_factory(node_dir=str(tmp_path / "source")))
    source = tmp_path / "source"
    create_node_folder(
        request_factory(
            client_certificate=str(source / "master-client.crt"),
            client_key=str(source / "master-client.key"),
            server_certificate=str(source / "server.crt"),
            server_key=str(source / "server.key"),
            signer_cert="", signer_key="", signer_serial="",
        )
    )  # fmt: skip
    for name in ("master-client.crt", "master-client.key", "server.crt", "server.key"):
        assert (tmp_path / "node1" / name).read_bytes() == (source / name).read_bytes()


def test_supplied_pair_that_does_not_match_is_refused(request_factory, tmp_path) -> None:
    create_node_folder(request_factory(node_dir=str(tmp_path / "source")))
    source = tmp_path / "source"
    with pytest.raises(PKIError, match=r"--client-key .* does not match --client-certificate"):
        create_node_folder(
            request_factory(
                client_certificate=str(source / "master-client.crt"),
                client_key=str(source / "server.key"),
            )
        )
    assert not (tmp_path / "node1").exists()


# --- validation (:ref:`origin-create-node-config-checks`) -----------------------------------------


@pytest.mark.parametrize(
    ("changes", "param", "message"),
    [
        ({"node_dir": ""}, "--node-dir", "--node-dir must be provided"),
        ({"node_name": ""}, "--node", "--node must be provided"),
        ({"master": ""}, "--master", "--master must be provided"),
        ({"certificate_authority": ()}, "--certificate-authority",
         "--certificate-authority must be a valid certificate file"),
        ({"hostnames": ()}, "--hostnames", "at least one hostname must be provided"),
        ({"client_certificate": "c.crt"}, "--client-key",
         "--client-key must be provided if --client-certificate is provided"),
        ({"client_key": "c.key"}, "--client-certificate",
         "--client-certificate must be provided if --client-key is provided"),
        ({"server_certificate": "s.crt"}, "--server-key",
         "--server-key must be provided if --server-certificate is provided"),
        ({"server_key": "s.key"}, "--server-certificate",
         "--server-certificate must be provided if --server-key is provided"),
        ({"signer_key": ""}, "--signer-key", "--signer-key must be provided to create certificates"),
        ({"signer_cert": ""}, "--signer-cert", "--signer-cert must be provided to create certificates"),
        ({"signer_serial": ""}, "--signer-serial",
         "--signer-serial must be provided to create certificates"),
        ({"expire_days": -1}, "--expire-days", "expire-days must be valid number of days"),
        ({"hostnames": ("ok", "not_ok")}, "--hostnames",
         "'not_ok' is neither an IP address nor a DNS name"),
        ({"master": "localhost:8443"}, "--master", "'localhost:8443' is not an http(s) URL"),
        ({"node_name": "n" * 53}, "--node", "longer than the 64 characters"),
    ],
)  # fmt: skip
def test_flag_misuse_is_a_usage_error_naming_the_flag(
    request_factory, tmp_path, changes, param, message
) -> None:
    with pytest.raises(UsageError) as raised:
        create_node_folder(request_factory(**changes))
    assert raised.value.param == param
    assert message in str(raised.value)
    assert not (tmp_path / "node1").exists()


def test_certificate_authority_that_is_not_pem_is_a_usage_error(request_factory, tmp_path) -> None:
    bad = tmp_path / "bad.crt"
    bad.write_text("not pem\n")
    with pytest.raises(
        UsageError,
        match=r"--certificate-authority must be a valid certificate file: "
        r".*bad\.crt: not a PEM certificate",
    ):
        create_node_folder(request_factory(certificate_authority=(str(bad),)))


def test_missing_signer_file_uses_origins_message(request_factory, tmp_path) -> None:
    with pytest.raises(
        UsageError, match=r'^--signer-key, ".*/missing.key" must be a valid key file$'
    ):
        create_node_folder(request_factory(signer_key=str(tmp_path / "missing.key")))


def test_ca_key_not_matching_ca_cert_leaves_no_folder(request_factory, make_ca, tmp_path) -> None:
    other = make_ca("other", "ecdsa")
    with pytest.raises(PKIError, match="does not match signer certificate"):
        create_node_folder(request_factory(signer_key=str(other / "ca.key")))
    assert not (tmp_path / "node1").exists()


# --- all or nothing ---------------------------------------------------------------------------


def _fail_on_write(monkeypatch, nth: int) -> None:
    """Make the ``nth`` file creation of the commit fail as a full disk would."""
    real = atomic_module.open_new_file
    calls = {"count": 0}

    def failing(path, data, mode):
        calls["count"] += 1
        if calls["count"] == nth:
            raise OSError(28, "No space left on device", str(path))
        return real(path, data, mode)

    monkeypatch.setattr(atomic_module, "open_new_file", failing)


def test_failed_write_of_a_new_folder_leaves_nothing(
    request_factory, tmp_path, monkeypatch
) -> None:
    _fail_on_write(monkeypatch, nth=5)
    with pytest.raises(PKIError, match=r"cannot write node folder .*No space left on device"):
        create_node_folder(request_factory(node_dir=str(tmp_path / "deep" / "node1")))
    assert not (tmp_path / "deep").exists()


def test_failed_write_into_an_existing_folder_restores_it(
    request_factory, tmp_path, monkeypatch
) -> None:
    folder = tmp_path / "node1"
    folder.mkdir()
    (folder / "notes.txt").write_text("operator notes")
    (folder / "node-config.yaml").write_text("old: config\n")
    before = snapshot(folder)
    _fail_on_write(monkeypatch, nth=9)  # the new set is half written
    with pytest.raises(PKIError, match="No space left on device"):
        create_node_folder(request_factory())
    assert snapshot(folder) == before
    assert not [p for p in folder.iterdir() if ".tmp-" in p.name]
    assert len([p for p in folder.iterdir() if p.name.startswith(".nodehost-v-")]) == 1


def test_failed_overwrite_puts_the_old_keys_back(request_factory, tmp_path, monkeypatch) -> None:
    create_node_folder(request_factory())
    folder = tmp_path / "node1"
    before = snapshot(folder)
    _fail_on_write(monkeypatch, nth=9)
    with pytest.raises(PKIError, match="No space left on device"):
        create_node_folder(request_factory(overwrite=True))
    assert snapshot(folder) == before
    assert stat.S_IMODE((folder / "server.key").stat().st_mode) == 0o600


def test_unwritable_location_is_one_clear_error(request_factory, tmp_path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(PKIError, match=r"cannot write node folder .*Not a directory"):
        create_node_folder(request_factory(node_dir=str(tmp_path / "file" / "node1")))


def folder_and_outside(request_factory, tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A node folder made by ``config create``, and a folder outside it holding ``name``."""
    request = request_factory()
    create_node_folder(request)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / name).write_text("not yours\n")
    return Path(request.node_dir), outside


def test_a_planted_symlinked_version_folder_is_refused_and_never_followed(
    request_factory, tmp_path: Path
) -> None:
    """``config create --overwrite`` over a folder whose ``.nodehost-current`` names a
    symlink to a folder elsewhere: nothing is written into it or hard-linked from it."""
    import os

    from nodehost.pki.versioned import CURRENT

    folder, outside = folder_and_outside(request_factory, tmp_path, "secret")
    planted = folder / ".nodehost-v-00000001"
    planted.symlink_to(outside)
    (folder / ".current.tmp").symlink_to(planted.name)
    os.rename(folder / ".current.tmp", folder / CURRENT)
    with pytest.raises(PKIError, match=f"symbolic link.*{planted}"):
        create_node_folder(request_factory(overwrite=True))
    assert sorted(path.name for path in outside.iterdir()) == ["secret"]
    assert (outside / "secret").stat().st_nlink == 1


def test_a_stale_symlink_named_like_a_version_folder_is_removed_not_followed(
    request_factory, tmp_path: Path
) -> None:
    folder, outside = folder_and_outside(request_factory, tmp_path, "keep")
    (folder / ".nodehost-v-00000002").symlink_to(outside)
    create_node_folder(request_factory(overwrite=True))
    assert not (folder / ".nodehost-v-00000002").is_symlink()
    assert (outside / "keep").read_text() == "not yours\n"


def test_only_this_folders_stale_staging_folders_are_removed(request_factory, tmp_path) -> None:
    """``.node1.staging-<8 hex>`` folders a killed run left go; look-alikes stay."""
    stale = [".node1.staging-0123abcd"]
    kept = [".node1.staging-0123abc", ".node1.staging-0123abcdx", ".node10.staging-0123abcd",
            ".node1.staging-0123ABCD"]  # fmt: skip
    for name in stale + kept:
        (tmp_path / name).mkdir()
    (tmp_path / ".node1.staging-89abcdef").write_text("a file, not a folder")
    create_node_folder(request_factory())
    left = {path.name for path in tmp_path.iterdir() if ".staging-" in path.name}
    assert left == {*kept, ".node1.staging-89abcdef"}
