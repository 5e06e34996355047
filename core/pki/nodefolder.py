"""A complete node folder from a signer CA (Origin's ``create-node-config``,
:ref:`origin-create-node-config`).

:func:`create_node_folder` is the whole command without the CLI:
``nodehost config create`` and ``nodehost start`` (generate branch,
``--write-config``) both build a :class:`NodeFolderRequest` and call it.

Files (:ref:`origin-node-folder-files`): ``master-client.crt``/``.key`` always,
``server.crt``/``.key`` with an https listen address, ``node-client-ca.crt`` with https and a node
client CA, ``ca.crt``, ``node.kubeconfig`` (0600: it holds the client key),
``node-config.yaml`` and ``node-registration.json``.  Certificates 0644, keys
0600, the folder 0755.

Guarantees: everything is computed before anything is written, then the
folder switches from the old set to the new one with one rename, also when
killed at any point (:mod:`nodehost.pki.versioned`: each file is a symlink
into the current version; what a killed run leaves is removed by the next);
a key is never replaced without
``overwrite``; an existing certificate is kept only if it passes
:mod:`nodehost.pki.reuse`, otherwise the error says which check failed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodehost.config.listen import ListenAddress, parse_listen
from nodehost.errors import PKIError, UsageError
from nodehost.fileread import PEM_LIMIT, read_file
from nodehost.frozen import frozen
from nodehost.options import (
    DEFAULT_EXPIRE_DAYS,
    DEFAULT_IMAGE_FORMAT,
    DEFAULT_VOLUME_DIR,
    check_expire_days,
)
from nodehost.pki import DEFAULT_KEY_TYPE, KEY_TYPES
from nodehost.pki.ca import Signer, load_signer
from nodehost.pki.certs import (
    certificate_days_and_warning,
    common_name_of,
    decode_certificates,
    encode_certificates,
    make_client_certificate,
    make_server_certificate,
)
from nodehost.pki.commit import CERT_MODE, KEY_MODE, PlannedFile, describe_os_error
from nodehost.pki.defaults import (
    DEFAULT_DNS_DOMAIN,
    DEFAULT_MASTER_URL,
    DEFAULT_NODE_LISTEN,
    DEFAULT_SIGNER_CERT,
    DEFAULT_SIGNER_KEY,
    DEFAULT_SIGNER_SERIAL,
    NODE_SERVING_PORT,
)
from nodehost.pki.hostnames import MAX_COMMON_NAME, Hostnames, parse_hostnames
from nodehost.pki.keys import (
    PrivateKey,
    decode_private_key,
    encode_private_key,
    generate_private_key,
    key_matches,
)
from nodehost.pki.kubeconfig import (
    KUBECONFIG_MODE,
    check_server_url,
    dump_kubeconfig,
    node_kubeconfig,
)
from nodehost.pki.nodeconfig import (
    NODE_CONFIG_FILE,
    NODE_CONFIG_MODE,
    NodeConfigFields,
    dump_node_config,
    finish_node_config,
    node_config_mapping,
    ordered_node_config,
    relativize_node_config_paths,
    resolve_node_config_paths,
)
from nodehost.pki.reuse import Wanted, reuse_problem
from nodehost.pki.versioned import commit_versioned

CLIENT_CERT_FILE = "master-client.crt"
CLIENT_KEY_FILE = "master-client.key"
SERVER_CERT_FILE = "server.crt"
SERVER_KEY_FILE = "server.key"
NODE_CLIENT_CA_FILE = "node-client-ca.crt"
API_CA_FILE = "ca.crt"
KUBECONFIG_FILE = "node.kubeconfig"
REGISTRATION_FILE = "node-registration.json"

NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"
DEFAULT_LISTEN = parse_listen(
    DEFAULT_NODE_LISTEN, default_port=NODE_SERVING_PORT, default_value=DEFAULT_NODE_LISTEN
)


@frozen
class NodeFolderRequest:
    """Every option of ``create-node-config`` (:ref:`origin-create-node-config`) plus ``key_type``
    and ``overwrite``.

    Defaults are Origin's.  Paths may be relative to the current directory.
    ``kubelet_arguments`` is struct-only in Origin (``start`` passes
    ``{"fail-swap-on": ("false",)}``).
    """

    node_dir: str = ""
    node_name: str = ""
    hostnames: tuple[str, ...] = ()
    volume_dir: str = DEFAULT_VOLUME_DIR
    image_format: str = DEFAULT_IMAGE_FORMAT
    latest_images: bool = False
    allow_disabled_docker: bool = False
    dns_bind_address: str = ""
    dns_domain: str = DEFAULT_DNS_DOMAIN
    dns_ip: str = ""
    listen: ListenAddress = DEFAULT_LISTEN
    client_certificate: str = ""
    client_key: str = ""
    server_certificate: str = ""
    server_key: str = ""
    expire_days: int = DEFAULT_EXPIRE_DAYS
    node_client_certificate_authority: str = DEFAULT_SIGNER_CERT
    master: str = DEFAULT_MASTER_URL
    certificate_authority: tuple[str, ...] = (DEFAULT_SIGNER_CERT,)
    network_plugin: str = ""
    signer_cert: str = DEFAULT_SIGNER_CERT
    signer_key: str = DEFAULT_SIGNER_KEY
    signer_serial: str = DEFAULT_SIGNER_SERIAL
    kubelet_arguments: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    key_type: str = DEFAULT_KEY_TYPE
    overwrite: bool = False

    @property
    def creates_client_certificate(self) -> bool:
        return not self.client_certificate and not self.client_key

    @property
    def creates_server_certificate(self) -> bool:
        return not self.server_certificate and not self.server_key and self.listen.use_tls

    @property
    def uses_node_client_ca(self) -> bool:
        return self.listen.use_tls and bool(self.node_client_certificate_authority)

    @property
    def node_user(self) -> str:
        return NODE_USER_PREFIX + self.node_name


@frozen
class NodeFolderResult:
    """What :func:`create_node_folder` did: files written and kept, and warnings for stderr."""

    node_dir: Path
    node_config: Path
    written: tuple[str, ...]
    reused: tuple[str, ...]
    warnings: tuple[str, ...]
    issued: tuple[str, ...] = ()
    node_config_data: bytes = b""


# --- validation (:ref:`origin-create-node-config-checks`), then nodehost's own checks -------------


def validate_request(request: NodeFolderRequest) -> None:
    """Origin's ``Validate`` rules and messages, then nodehost's, then every input file at
    once (:func:`input_file_problems`); raises :class:`UsageError`."""
    _validate_origin_rules(request)
    _validate_nodehost_rules(request)
    problems = input_file_problems(request)
    if len(problems) == 1:
        (flag, message), *_ = problems
        raise UsageError(message, flag)
    if problems:
        lines = [f"{len(problems)} input files cannot be used:"]
        raise UsageError("\n".join(lines + [f"  {message}" for _, message in problems]))


def input_file_problems(request: NodeFolderRequest) -> list[tuple[str, str]]:
    """``(flag, message)`` for every input file the request needs that is missing or
    unreadable (certificate authorities also when they hold no certificate), in flag order:
    checked together before anything is generated, so one run names them all."""
    problems: list[tuple[str, str]] = []
    authorities = [(name, "--certificate-authority") for name in request.certificate_authority]
    if request.uses_node_client_ca:
        authorities.append(
            (request.node_client_certificate_authority, "--node-client-certificate-authority")
        )
    for name, flag in authorities:
        problem = _certificate_file_problem(name)
        if problem:
            problems.append((flag, f"{flag} must be a valid certificate file: {problem}"))
    if request.creates_client_certificate or request.creates_server_certificate:
        for value, flag, what in (
            (request.signer_cert, "--signer-cert", "a valid certificate file"),
            (request.signer_key, "--signer-key", "a valid key file"),
            (request.signer_serial, "--signer-serial", "a valid file"),
        ):
            if not Path(value).exists():  # Origin's message
                problems.append((flag, f'{flag}, "{Path(value).absolute()}" must be {what}'))
    for name, flag in (
        (request.client_certificate, "--client-certificate"),
        (request.client_key, "--client-key"),
        (request.server_certificate, "--server-certificate"),
        (request.server_key, "--server-key"),
    ):
        if name:
            problem = _readable_problem(name)
            if problem:
                problems.append((flag, f"cannot read {flag} {problem}"))
    return problems


def _readable_problem(name: str) -> str | None:
    """``<name>: <reason>`` when the file cannot be read (:func:`read_file`), else None."""
    try:
        read_file(name, PEM_LIMIT)
    except OSError as error:
        return f"{name}: {error.strerror or error}"
    return None


def _certificate_file_problem(name: str) -> str | None:
    """Why ``name`` is no certificate file (``<name>: <reason>``), or None."""
    try:
        decode_certificates(read_file(name, PEM_LIMIT), name)
    except OSError as error:
        return f"{name}: {error.strerror or error}"
    except PKIError as error:
        return str(error)
    return None


def _validate_origin_rules(r: NodeFolderRequest) -> None:
    if not r.node_dir:
        raise UsageError("--node-dir must be provided", "--node-dir")
    if not r.node_name:
        raise UsageError("--node must be provided", "--node")
    if not r.master:
        raise UsageError("--master must be provided", "--master")
    if not r.certificate_authority:  # the files themselves: input_file_problems
        raise UsageError(
            "--certificate-authority must be a valid certificate file", "--certificate-authority"
        )
    if not r.hostnames:
        raise UsageError("at least one hostname must be provided", "--hostnames")
    _validate_pair(r.client_certificate, r.client_key, "--client-certificate", "--client-key")
    _validate_pair(r.server_certificate, r.server_key, "--server-certificate", "--server-key")
    if r.creates_client_certificate or r.creates_server_certificate:
        for value, flag in (
            (r.signer_key, "--signer-key"),
            (r.signer_cert, "--signer-cert"),
            (r.signer_serial, "--signer-serial"),
        ):
            if not value:
                raise UsageError(f"{flag} must be provided to create certificates", flag)
    check_expire_days(r.expire_days)


def _validate_pair(cert: str, key: str, cert_flag: str, key_flag: str) -> None:
    if cert and not key:
        raise UsageError(f"{key_flag} must be provided if {cert_flag} is provided", key_flag)
    if key and not cert:
        raise UsageError(f"{cert_flag} must be provided if {key_flag} is provided", cert_flag)


def _validate_nodehost_rules(r: NodeFolderRequest) -> None:
    try:
        parse_hostnames(r.hostnames)
    except ValueError as error:
        raise UsageError(str(error), "--hostnames") from None
    if len(r.node_user) > MAX_COMMON_NAME:
        raise UsageError(
            f"{r.node_user!r} is longer than the {MAX_COMMON_NAME} characters a certificate's "
            "common name may have",
            "--node",
        )
    try:
        check_server_url(r.master)
    except ValueError as error:
        raise UsageError(str(error), "--master") from None
    if r.key_type not in KEY_TYPES:
        raise UsageError(f"{r.key_type!r} is not one of {', '.join(KEY_TYPES)}", "--key-type")


# --- building the folder ------------------------------------------------------------------


@dataclass
class _Plan:
    """The folder being computed: files to write, files kept, warnings."""

    node_dir: Path
    overwrite: bool
    dry_run: bool = False
    files: list[PlannedFile] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)

    def add(self, name: str, data: bytes, mode: int, *, key: bool = False) -> None:
        self.files.append(PlannedFile(name, data, mode, replace=not key or self.overwrite))

    def existing(self, name: str) -> bytes | None:
        path = self.node_dir / name
        try:
            return read_file(path, PEM_LIMIT)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            raise PKIError(f"cannot read {path}: {error.strerror}") from None


#: Checks a node-config.yaml before it is written: ``(path, document, the folder's files)``,
#: the document being the mapping the file's YAML is written from (loading the file gives an
#: equal mapping, keys in the same order); the check may change it.
ConfigCheck = Callable[[Path, dict[str, Any], frozenset[Path]], None]


def create_node_folder(
    request: NodeFolderRequest, check_config: ConfigCheck | None = None, *, dry_run: bool = False
) -> NodeFolderResult:
    """Create (or complete) the node folder ``request.node_dir``; see the module docstring.

    Raises :class:`UsageError` (exit 2) for flag misuse and :class:`PKIError`
    (exit 1) for unusable certificate material, a key or certificate that would
    be replaced without ``overwrite``, or a folder that cannot be written.  On
    error the folder is as it was (a new folder does not appear at all); serial
    numbers reserved before the failure stay used.  ``check_config`` sees the
    node-config.yaml about to be written, with every file the folder will hold
    (written or kept); whatever it raises stops the command before any write.

    ``dry_run`` reads and checks the same and says what would happen -- the
    result's ``written``, ``reused``, ``issued`` (pairs that would get a new
    key and certificate) and ``node_config_data`` -- but makes no key, signs
    nothing, reserves no serial number and writes nothing.
    """
    validate_request(request)
    cwd = os.getcwd()
    node_dir = Path(os.path.normpath(os.path.join(cwd, request.node_dir)))
    plan = _Plan(node_dir, request.overwrite, dry_run)
    pairs = _certificate_pairs(request, plan)
    client_cert, client_key = pairs.get(CLIENT_CERT_FILE, (b"", b""))
    if request.uses_node_client_ca:
        node_client_ca = _read_ca_file(
            request.node_client_certificate_authority, "--node-client-certificate-authority"
        )
        plan.add(NODE_CLIENT_CA_FILE, node_client_ca, CERT_MODE)
    ca_bundle = b"\n".join(
        _read_ca_file(name, "--certificate-authority") for name in request.certificate_authority
    )
    plan.add(API_CA_FILE, ca_bundle, CERT_MODE)
    user = (
        common_name_of(decode_certificates(client_cert, CLIENT_CERT_FILE)[0])
        if client_cert
        else request.node_user  # would be issued: its CN is the node user
    )
    kubeconfig = node_kubeconfig(request.master, ca_bundle, client_cert, client_key, user)
    plan.add(KUBECONFIG_FILE, dump_kubeconfig(kubeconfig), KUBECONFIG_MODE)
    document = _node_config(request, plan.node_dir, cwd)
    plan.add(NODE_CONFIG_FILE, dump_node_config(document), NODE_CONFIG_MODE)
    plan.add(REGISTRATION_FILE, _registration(request.node_name), CERT_MODE)
    if check_config is not None:
        names = [planned.name for planned in plan.files] + plan.reused
        check_config(
            plan.node_dir / NODE_CONFIG_FILE, document, frozenset(plan.node_dir / n for n in names)
        )
    if not dry_run:
        _commit(plan)
    return NodeFolderResult(
        node_dir=plan.node_dir,
        node_config=plan.node_dir / NODE_CONFIG_FILE,
        written=tuple(f.name for f in plan.files),
        reused=tuple(plan.reused),
        warnings=tuple(plan.warnings),
        issued=tuple(plan.issued),
        node_config_data=next(f.data for f in plan.files if f.name == NODE_CONFIG_FILE),
    )


# --- certificate pairs ------------------------------------------------------------------------

#: Builds a certificate for a new key with a reserved serial: (PEM to write, warning or None).
_Build = Callable[[Signer, PrivateKey, int], tuple[bytes, str | None]]


@frozen
class _Pair:
    """One certificate/key pair of the folder: copied from supplied files, kept, or issued."""

    cert_name: str
    key_name: str
    wanted: Wanted
    build: _Build
    supplied: tuple[tuple[str, str], tuple[str, str]] | None = None  # ((path, flag), (path, flag))


def _client_pair(request: NodeFolderRequest) -> _Pair:
    def build(signer: Signer, key: PrivateKey, serial: int) -> tuple[bytes, str | None]:
        days, warning = certificate_days_and_warning(request.expire_days, request.node_user)
        certificate = make_client_certificate(
            signer.certificate, signer.key, key.public_key(), user=request.node_user,
            groups=(NODES_GROUP,), serial=serial, days=days,
        )  # fmt: skip
        return encode_certificates([certificate]), warning

    supplied = (
        None
        if request.creates_client_certificate
        else ((request.client_certificate, "--client-certificate"),
              (request.client_key, "--client-key"))
    )  # fmt: skip
    wanted = Wanted(user=request.node_user, groups=(NODES_GROUP,))
    return _Pair(CLIENT_CERT_FILE, CLIENT_KEY_FILE, wanted, build, supplied)


def _server_pair(request: NodeFolderRequest) -> _Pair:
    hostnames: Hostnames = parse_hostnames(request.hostnames)

    def build(signer: Signer, key: PrivateKey, serial: int) -> tuple[bytes, str | None]:
        days, warning = certificate_days_and_warning(request.expire_days, hostnames.common_name)
        certificate = make_server_certificate(
            signer.certificate, signer.key, key.public_key(), hostnames=hostnames,
            serial=serial, days=days,
        )  # fmt: skip
        return encode_certificates([certificate, *signer.chain]), warning

    supplied = (
        None
        if request.creates_server_certificate
        else ((request.server_certificate, "--server-certificate"),
              (request.server_key, "--server-key"))
    )  # fmt: skip
    return _Pair(SERVER_CERT_FILE, SERVER_KEY_FILE, Wanted(hostnames=hostnames), build, supplied)


def _certificate_pairs(request: NodeFolderRequest, plan: _Plan) -> dict[str, tuple[bytes, bytes]]:
    """Every pair's (cert PEM, key PEM) by cert file name: copied, kept, or newly issued.

    New certificates are issued only after every kept pair passed its checks,
    with all their serials reserved in one locked update of the serial file.
    """
    pairs = [_client_pair(request)]
    if request.listen.use_tls:
        pairs.append(_server_pair(request))
    signer = _signer(request) if any(pair.supplied is None for pair in pairs) else None
    found = {pair.cert_name: _copied_or_kept(plan, signer, pair) for pair in pairs}
    to_issue = [pair for pair in pairs if found[pair.cert_name] is None]
    if plan.dry_run:
        for pair in to_issue:
            plan.issued.extend([pair.cert_name, pair.key_name])
        return {name: material for name, material in found.items() if material is not None}
    if signer is not None and to_issue:
        serials = signer.reserve_serials(len(to_issue))
        for pair, serial in zip(to_issue, serials, strict=True):
            found[pair.cert_name] = _issue(request.key_type, plan, signer, pair, serial)
    return {name: material for name, material in found.items() if material is not None}


def _copied_or_kept(plan: _Plan, signer: Signer | None, pair: _Pair) -> tuple[bytes, bytes] | None:
    """The pair copied from supplied files, or the folder's own pair if it may be kept.

    ``None`` means a new pair must be issued: there is none yet, or ``overwrite``.
    """
    if pair.supplied is not None:
        return _copy_pair(plan, pair.cert_name, pair.key_name, *pair.supplied)
    cert, key = plan.existing(pair.cert_name), plan.existing(pair.key_name)
    if plan.overwrite or (cert is None and key is None) or signer is None:
        return None
    _check_reusable(plan.node_dir, pair.cert_name, pair.key_name, cert, key, signer, pair.wanted)
    assert cert is not None and key is not None
    plan.reused.extend([pair.cert_name, pair.key_name])
    return cert, key


def _issue(
    key_type: str, plan: _Plan, signer: Signer, pair: _Pair, serial: int
) -> tuple[bytes, bytes]:
    private_key = generate_private_key(key_type)
    cert_pem, warning = pair.build(signer, private_key, serial)
    key_pem = encode_private_key(private_key)
    if warning:
        plan.warnings.append(warning)
    plan.add(pair.cert_name, cert_pem, CERT_MODE)
    plan.add(pair.key_name, key_pem, KEY_MODE, key=True)
    return cert_pem, key_pem


def _signer(request: NodeFolderRequest) -> Signer:
    """The signer CA (its files' presence was checked by :func:`validate_request`)."""
    return load_signer(
        Path(request.signer_cert), Path(request.signer_key), Path(request.signer_serial)
    )


def _read_ca_file(name: str, flag: str) -> bytes:
    try:
        data = read_file(name, PEM_LIMIT)
    except OSError as error:
        raise PKIError(f"cannot read {flag} {name}: {error.strerror}") from None
    decode_certificates(data, f"{flag} {name}")
    return data


def _check_reusable(
    node_dir: Path,
    cert_name: str,
    key_name: str,
    cert: bytes | None,
    key: bytes | None,
    signer: Signer,
    wanted: Wanted,
) -> None:
    advice = f"use --overwrite to replace {cert_name} and {key_name}"
    if cert is None or key is None:
        present, absent = (cert_name, key_name) if cert is not None else (key_name, cert_name)
        raise PKIError(f"{node_dir / present} exists but {absent} does not; {advice}")
    problem = reuse_problem(cert, key, signer.certificate, wanted)
    if problem:
        raise PKIError(f"existing {node_dir / cert_name} cannot be reused: {problem}; {advice}")


def _copy_pair(
    plan: _Plan,
    cert_name: str,
    key_name: str,
    cert_source: tuple[str, str],
    key_source: tuple[str, str],
) -> tuple[bytes, bytes]:
    """Copy a supplied certificate and key into the folder after checking they match."""
    cert = _read_supplied(*cert_source)
    key = _read_supplied(*key_source)
    certificate = decode_certificates(cert, f"{cert_source[1]} {cert_source[0]}")[0]
    private_key = decode_private_key(key, f"{key_source[1]} {key_source[0]}")
    if not key_matches(private_key, certificate.public_key()):
        raise PKIError(
            f"{key_source[1]} {key_source[0]} does not match {cert_source[1]} {cert_source[0]}"
        )
    _copy_file(plan, cert_name, cert, cert_source[1], is_key=False)
    _copy_file(plan, key_name, key, key_source[1], is_key=True)
    return cert, key


def _copy_file(plan: _Plan, name: str, data: bytes, flag: str, *, is_key: bool) -> None:
    existing = plan.existing(name)
    if existing == data:
        plan.reused.append(name)
        return
    if existing is not None and not plan.overwrite:
        raise PKIError(
            f"{plan.node_dir / name} exists and differs from {flag}; use --overwrite to replace it"
        )
    plan.add(name, data, KEY_MODE if is_key else CERT_MODE, key=is_key)


def _read_supplied(name: str, flag: str) -> bytes:
    try:
        return read_file(name, PEM_LIMIT)
    except OSError as error:
        raise PKIError(f"cannot read {flag} {name}: {error.strerror}") from None


def _node_config(request: NodeFolderRequest, node_dir: Path, cwd: str) -> dict[str, Any]:
    """The node-config.yaml mapping in file order (:func:`ordered_node_config`)."""
    tls = request.listen.use_tls
    fields = NodeConfigFields(
        node_name=request.node_name,
        bind_address=request.listen.host_port(NODE_SERVING_PORT),
        volume_directory=request.volume_dir,
        allow_disabled_docker=request.allow_disabled_docker,
        image_format=request.image_format,
        latest_images=request.latest_images,
        dns_bind_address=request.dns_bind_address,
        dns_domain=request.dns_domain,
        dns_ip=request.dns_ip,
        master_kubeconfig=str(node_dir / KUBECONFIG_FILE),
        network_plugin=request.network_plugin,
        kubelet_arguments=request.kubelet_arguments,
        server_cert_file=str(node_dir / SERVER_CERT_FILE) if tls else "",
        server_key_file=str(node_dir / SERVER_KEY_FILE) if tls else "",
        client_ca_file=str(node_dir / NODE_CLIENT_CA_FILE) if request.uses_node_client_ca else "",
    )
    raw = node_config_mapping(fields)
    resolve_node_config_paths(raw, cwd)
    try:
        relativize_node_config_paths(raw, str(node_dir))
    except ValueError as error:
        raise PKIError(str(error)) from None
    return ordered_node_config(finish_node_config(raw))


def _registration(node_name: str) -> bytes:
    """A v1 ``Node`` with only its name set, as Origin's ``node-registration.json``."""
    node = {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": node_name, "creationTimestamp": None},
        "spec": {},
        "status": {},
    }
    return json.dumps(node, separators=(",", ":")).encode("utf-8") + b"\n"


def _commit(plan: _Plan) -> None:
    try:
        commit_versioned(plan.node_dir, plan.files)
    except FileExistsError as error:
        raise PKIError(
            f"{error.filename} appeared while the folder was being written; nothing was changed"
        ) from None
    except OSError as error:
        raise PKIError(
            f"cannot write node folder {plan.node_dir}: {describe_os_error(error)}"
        ) from None
