"""``nodehost config create`` and ``nodehost ca create`` as programs: exit codes, one-line
errors, warnings on stderr, no partial folders, and 20 processes sharing one CA."""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nodehost.pki.certs import decode_certificates


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_success_prints_origins_progress_lines(ca_dir, tmp_path, run_config_create,
                                               config_create_args) -> None:  # fmt: skip
    result = run_config_create(config_create_args(ca_dir, tmp_path / "node1"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Generating node credentials ...",
        f"Created node config for node1 in {tmp_path / 'node1'}",
    ]
    assert result.stderr == ""
    assert (tmp_path / "node1" / "node-config.yaml").exists()


def test_generated_config_passes_nodehost_config_validate(
    ca_dir, tmp_path, run_config_create, config_create_args
) -> None:
    assert run_config_create(config_create_args(ca_dir, tmp_path / "node1")).returncode == 0
    config = tmp_path / "node1" / "node-config.yaml"
    result = subprocess.run(
        [sys.executable, "-m", "nodehost", "config", "validate", "--strict-config", str(config)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in (result.stdout + result.stderr).lower()


def test_a_config_that_would_not_validate_is_not_written(
    ca_dir, tmp_path, run_config_create, config_create_args
) -> None:
    node = tmp_path / "node1"
    result = run_config_create(config_create_args(ca_dir, node, "--network-plugin", "nosuch"))
    assert result.returncode == 255
    lines = result.stderr.strip().splitlines()
    assert lines[0] == f"Invalid NodeConfig {node / 'node-config.yaml'} (not written)"
    assert lines[1].startswith(
        '  networkConfig.networkPluginName: Invalid value: "nosuch": no network provider is named'
    )
    assert len(lines) == 2 and not node.exists()


@pytest.mark.parametrize("plugin", ["cni", "redhat/openshift-ovs-subnet", "bridge"])
def test_every_network_plugin_config_create_writes_validates(
    ca_dir, tmp_path, run_config_create, config_create_args, plugin: str
) -> None:
    """What config create writes passes config validate (bridge needs its section: refused)."""
    node = tmp_path / "node1"
    result = run_config_create(config_create_args(ca_dir, node, "--network-plugin", plugin))
    validated = subprocess.run(
        [sys.executable, "-m", "nodehost", "config", "validate", str(node / "node-config.yaml")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert (result.returncode == 0) == (validated.returncode == 0), result.stderr
    assert result.returncode == (255 if plugin == "bridge" else 0), result.stderr


def test_long_lifetime_warns_on_stderr(ca_dir, tmp_path, run_config_create,
                                       config_create_args) -> None:  # fmt: skip
    result = run_config_create(config_create_args(ca_dir, tmp_path / "n", "--expire-days", "1000"))
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        'WARNING: Validity period of the certificate for "system:node:node1" is greater than 2 years!',
        "WARNING: By security reasons it is strongly recommended to change this period and make it smaller!",
        'WARNING: Validity period of the certificate for "127.0.0.1" is greater than 2 years!',
        "WARNING: By security reasons it is strongly recommended to change this period and make it smaller!",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--hostnames", "bad_name"],
         "error: invalid value for --hostnames: 'bad_name' is neither an IP address nor a DNS name"),
        (["--node", ""], "error: --node must be provided"),
        (["--expire-days", "-3"],
         "error: invalid value for --expire-days: expire-days must be valid number of days"),
        (["--listen", "https://[::1"], "error: invalid value for --listen: "),
    ],
)  # fmt: skip
def test_flag_misuse_exits_2_with_one_line(ca_dir, tmp_path, run_config_create,
                                           config_create_args, extra, message) -> None:  # fmt: skip
    result = run_config_create(config_create_args(ca_dir, tmp_path / "node1", *extra))
    assert result.returncode == 2
    assert one_error_line(result).startswith(message)
    assert result.stdout == ""
    assert not (tmp_path / "node1").exists()


def test_unknown_key_type_and_extra_arguments_are_usage_errors(
    ca_dir, tmp_path, run_config_create, config_create_args
) -> None:
    bad_type = run_config_create(config_create_args(ca_dir, tmp_path / "n", "--key-type", "dsa"))
    extra = run_config_create(config_create_args(ca_dir, tmp_path / "n", "positional"))
    assert (bad_type.returncode, extra.returncode) == (2, 2)
    assert not (tmp_path / "n").exists()


def _break_ca_cert(ca: Path) -> None:
    (ca / "ca.crt").write_text("this is not PEM\n")


def _swap_ca_key(ca: Path) -> None:
    from nodehost.pki.ca import create_signer_ca

    create_signer_ca(ca.parent / "other", key_type="ecdsa")
    shutil.copy(ca.parent / "other" / "ca.key", ca / "ca.key")


def _garble_serial(ca: Path) -> None:
    (ca / "ca.serial.txt").write_text("not-a-number")


def _remove_serial(ca: Path) -> None:
    (ca / "ca.serial.txt").unlink()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_break_ca_cert, r"error: signer certificate .*/ca\.crt: not a PEM certificate$"),
        (_swap_ca_key, r"error: signer key .*/ca\.key does not match signer certificate .*/ca\.crt$"),
        (_garble_serial, r"error: serial file .* does not hold a hexadecimal number: 'not-a-number'$"),
    ],
)  # fmt: skip
def test_bad_signer_material_exits_1_with_one_line_and_no_folder(
    ca_dir, tmp_path, run_config_create, config_create_args, damage, message
) -> None:
    damage(ca_dir)
    result = run_config_create(config_create_args(ca_dir, tmp_path / "node1"))
    assert result.returncode == 1
    assert re.match(message, one_error_line(result)), result.stderr
    assert not (tmp_path / "node1").exists()


def test_a_missing_serial_file_is_a_missing_input_exit_2(
    ca_dir, tmp_path, run_config_create, config_create_args
) -> None:
    _remove_serial(ca_dir)
    result = run_config_create(config_create_args(ca_dir, tmp_path / "node1"))
    assert result.returncode == 2
    message = r'error: --signer-serial, ".*/ca\.serial\.txt" must be a valid file$'
    assert re.match(message, one_error_line(result)), result.stderr
    assert not (tmp_path / "node1").exists()


def test_every_missing_input_is_named_at_once_before_anything_is_generated(
    ca_dir, tmp_path, run_config_create, config_create_args
) -> None:
    missing = tmp_path / "missing"
    args = [
        *config_create_args(ca_dir, tmp_path / "node1"),
        f"--certificate-authority={missing / 'ca.crt'}",
        f"--node-client-certificate-authority={missing / 'client-ca.crt'}",
        f"--server-certificate={missing / 'server.crt'}",
        f"--server-key={missing / 'server.key'}",
    ]
    result = run_config_create(args)
    assert result.returncode == 2, result.stderr
    assert "Generating node credentials" not in result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "error: 4 input files cannot be used:"
    for flag, name in (
        ("--certificate-authority", "ca.crt"),
        ("--node-client-certificate-authority", "client-ca.crt"),
        ("--server-certificate", "server.crt"),
        ("--server-key", "server.key"),
    ):
        assert [line for line in lines[1:] if flag in line and str(missing / name) in line]
    assert not (tmp_path / "node1").exists()


def test_unwritable_node_folder_exits_1_with_one_line(
    ca_dir, tmp_path, config_create_args, unprivileged
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    locked.chmod(0o555)
    argv = [*unprivileged, sys.executable, "-m", "nodehost", "config", "create",
            *config_create_args(ca_dir, locked / "node1")]  # fmt: skip
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert "Permission denied" in one_error_line(result)
    assert list(locked.iterdir()) == []


def test_twenty_processes_sharing_one_ca_get_distinct_serials(
    ca_dir, tmp_path, run_config_create, config_create_args
) -> None:
    count = 20
    with concurrent.futures.ThreadPoolExecutor(max_workers=count) as pool:
        results = list(
            pool.map(lambda i: run_config_create(config_create_args(ca_dir, tmp_path / f"n{i}")),
                     range(count))
        )  # fmt: skip
    assert [r.returncode for r in results] == [0] * count, [r.stderr for r in results]
    serials = [
        decode_certificates((tmp_path / f"n{i}" / name).read_bytes(), name)[0].serial_number
        for i in range(count)
        for name in ("master-client.crt", "server.crt")
    ]
    assert sorted(serials) == list(range(2, 2 + 2 * count))
    assert int((ca_dir / "ca.serial.txt").read_text(), 16) == 1 + 2 * count


#: What ``config create`` has no use for: the runtime's event loop and structured logging, and
#: shutil (only a failed or stale commit removes folders).
NOT_IMPORTED = ("asyncio", "structlog", "shutil")


def test_config_create_loads_nothing_of_the_runtime(ca_dir, tmp_path,
                                                            config_create_args) -> None:  # fmt: skip
    """The whole command run in one interpreter, then its modules listed: a guard, not a timer."""
    code = (
        "import sys\n"
        "from nodehost.entry import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        f"print(sorted(m for m in {NOT_IMPORTED!r} if m in sys.modules))\n"
        "print('cryptography.x509' in sys.modules)\n"
    )
    argv = [sys.executable, "-c", code, "config", "create",
            *config_create_args(ca_dir, tmp_path / "node1")]  # fmt: skip
    # Built-in plugins only: what an installed third-party plugin imports is its own affair.
    env = dict(os.environ, NODEHOST_NO_PLUGINS="1")
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
    assert result.returncode == 0, result.stderr
    *_, loaded, has_x509 = result.stdout.splitlines()
    assert (loaded, has_x509) == ("[]", "True")  # the folder was made, and nothing heavy came


# --- nodehost ca create ---------------------------------------------------------------------


def run_ca(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nodehost", "ca", *args],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def test_ca_create_makes_a_ca_that_signs_a_node_folder(tmp_path, run_config_create,
                                                       config_create_args) -> None:  # fmt: skip
    result = run_ca("create", "--dir", str(tmp_path / "master"), "--key-type", "ecdsa")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"Created signer CA in {tmp_path / 'master'}"
    node = run_config_create(config_create_args(tmp_path / "master", tmp_path / "node1"))
    assert node.returncode == 0, node.stderr


def test_ca_create_refuses_to_replace_a_ca(ca_dir) -> None:
    before = (ca_dir / "ca.key").read_bytes()
    result = run_ca("create", "--dir", str(ca_dir), "--key-type", "ecdsa")
    assert result.returncode == 1
    assert one_error_line(result).endswith("already exists; refusing to replace an existing CA")
    assert (ca_dir / "ca.key").read_bytes() == before


def test_ca_create_warns_about_long_lifetimes(tmp_path) -> None:
    result = run_ca("create", "--dir", str(tmp_path), "--name", "long-ca", "--expire-days",
                    "4000", "--key-type", "ecdsa")  # fmt: skip
    assert result.returncode == 0
    assert result.stderr.splitlines()[0] == (
        'WARNING: Validity period of the certificate for "long-ca" is greater than 5 years!'
    )


def test_cli_modules_do_not_import_cryptography() -> None:
    code = (
        "import sys, nodehost.cli.config_create, nodehost.cli.ca; "
        "print('cryptography' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)  # fmt: skip
    assert result.stdout.strip() == "False"
