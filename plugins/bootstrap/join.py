"""TLS bootstrap and config download: ``nodehost start --bootstrap-config-name NAME``.

Origin's ``loadBootstrap`` (:ref:`origin-bootstrap-config-map`) with the kubelet's client
bootstrap (:ref:`origin-bootstrap-client-certificate`) done by nodehost itself:

1. ``mkdir -p <config-dir>`` (0700);
2. client certificate: if ``<config-dir>/node.kubeconfig`` names a valid
   certificate and key, keep it (no CSR).  Otherwise, with the bootstrap
   ``--kubeconfig``: a new ECDSA key made here (``certificates/kubelet-client.key.tmp``
   until its certificate arrives), a CSR for ``CN=system:node:<name>, O=system:nodes``
   to ``kubernetes.io/kube-apiserver-client-kubelet``, wait (watch) for approval,
   store ``certificates/kubelet-client-current.pem`` and write ``node.kubeconfig``
   (its user points at that file, its cluster is the bootstrap kubeconfig's);
3. serving certificate (``kubernetes.io/kubelet-serving``, SANs of
   :ref:`origin-server-cert-hostnames`): if no valid ``certificates/kubelet-server-current.pem``,
   ask for one and wait a short while (``--serving-cert-wait``, 15 s); clusters whose approver does
   not sign serving CSRs (kubeadm's) leave it pending -- said in one warning line,
   and the ``bootstrap`` component keeps waiting for it while the node runs;
4. ``node-client-ca.crt`` = the cluster CA of ``node.kubeconfig``;
5. config map NAME in the bootstrap namespace, read as the node: 403 deletes
   ``node.kubeconfig`` (the next start bootstraps again) and fails; its keys
   are written as files (0600) except the protected ones; ``node-config.yaml``
   gets the CLI overrides (:ref:`origin-cli-overrides`) and the bootstrap overrides
   (:ref:`origin-bootstrap-overrides`) -- written all or nothing;
6. the caller loads ``--config`` or ``<config-dir>/node-config.yaml``.

A node whose identity is lost -- its client certificate expired while it was
off, or the API server refuses it (401: revoked, its CA rotated) or no longer
verifies against the CA in ``node.kubeconfig`` -- falls back to the bootstrap
credentials: one warning line, ``node.kubeconfig`` removed, step 2 again (a new
key and CSR), steps 3-5, then a ``NodeRejoined`` Warning event on the Node.
When the bootstrap credentials fail too, the one error line says what to give.

Deviation from Origin: ``kubelet-client-current.pem`` is kept (Origin deleted
it so the kubelet would re-bootstrap): nodehost's ``bootstrap`` component
rotates the certificates itself.  Waiting for the API server and the CSR is
bounded by ``--bootstrap-timeout`` (Go duration, default ``1h`` as Origin);
progress goes to systemd as ``STATUS=`` lines.  Every failure is one line, exit 1.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodehost.config.hostport import join_host_port
from nodehost.errors import RuntimeFailure, UsageError
from nodehost.fileread import PEM_LIMIT, read_file
from nodehost.frozen import frozen
from nodehost.pki.kubeconfig import kubeconfig_entries

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.api.client import ClusterClient
    from nodehost.options import StartOptions

NODE_KUBECONFIG = "node.kubeconfig"
NODE_CLIENT_CA = "node-client-ca.crt"
NODE_CONFIG = "node-config.yaml"
CERT_DIR = "certificates"

#: Config map keys never written to disk (Origin's list, :ref:`origin-bootstrap-config-map`).
PROTECTED_KEYS = frozenset(
    {"server.crt", "server.key", "master-client.crt", "master-client.key", "node.kubeconfig"}
)
CONFIG_DIR_MODE = 0o700
FILE_MODE = 0o600
FEATURE_GATES = "RotateKubeletClientCertificate=true,RotateKubeletServerCertificate=true"


@frozen
class BootstrapSettings:
    """Everything the bootstrap sequence reads, taken from the start options once."""

    config_dir: Path
    bootstrap_kubeconfig: Path
    config_map: str
    namespace: str
    node_name: str
    hostnames: tuple[str, ...]
    listen_provided: bool
    listen_host: str
    volume_dir: str | None
    timeout: float
    serving_wait: float

    @property
    def node_kubeconfig(self) -> Path:
        return self.config_dir / NODE_KUBECONFIG

    @property
    def cert_dir(self) -> Path:
        return self.config_dir / CERT_DIR


def settings_from_options(options: StartOptions) -> BootstrapSettings:
    """Check the flags bootstrap needs; ``UsageError`` naming the flag or variable."""
    from nodehost.config.listen import parse_listen
    from nodehost.generate import server_cert_hostnames

    if not options.kubeconfig:
        raise UsageError(
            "--kubeconfig must name the bootstrap kubeconfig with --bootstrap-config-name",
            "--kubeconfig",
        )
    listen = parse_listen(options.listen)
    node_name = options.hostname.strip().lower()
    return BootstrapSettings(
        config_dir=Path(options.config_dir).absolute(),
        bootstrap_kubeconfig=Path(options.kubeconfig).absolute(),
        config_map=options.bootstrap_config_name,
        namespace=options.bootstrap_config_namespace,
        node_name=node_name,
        hostnames=tuple(server_cert_hostnames(node_name, listen.host)),
        listen_provided=options.listen_provided,
        listen_host=listen.host,
        volume_dir=options.volume_dir if options.volume_dir_provided else None,
        timeout=options.bootstrap_timeout,
        serving_wait=options.serving_cert_wait,
    )


def bootstrap_node(options: StartOptions, log: Any = None) -> str:
    """Run the sequence of the module docstring; the path of the node-config to load."""
    settings = settings_from_options(options)
    import asyncio  # here, not at import: a dry run imports this module to describe

    from nodehost.daemon.notify import Notifier

    notifier = Notifier.from_environ()
    say = _reporter(notifier, log)
    try:
        asyncio.run(run_bootstrap(settings, say))
    except OSError as error:
        where = error.filename or settings.config_dir
        raise RuntimeFailure(
            f"bootstrap: cannot write {where}: {error.strerror or error}"
        ) from None
    finally:
        notifier.close()
    return options.config or str(settings.config_dir / NODE_CONFIG)


def describe_bootstrap(options: StartOptions) -> list[str]:
    """What :func:`bootstrap_node` would ask of whom and write, doing none of it (``--dry-run``).

    Reads the flags and the kubeconfigs only; ``UsageError`` as the real run
    would raise for the flags, and ``RuntimeFailure`` as it would for a
    bootstrap kubeconfig it needs (no usable ``node.kubeconfig``) and cannot load.
    """
    from nodehost.pki.kubeconfig import read_server

    settings = settings_from_options(options)
    folder = settings.config_dir
    if usable_node_kubeconfig(settings.node_kubeconfig):
        server = read_server(str(settings.bootstrap_kubeconfig)) or "(no server in the kubeconfig)"
    else:
        server = bootstrap_cluster(settings.bootstrap_kubeconfig)["server"]
    user = f"system:node:{settings.node_name}"
    where = f"{settings.namespace}/{settings.config_map}"
    return [
        f"would bootstrap the node folder {folder} (dry run: nothing is written, signed or sent):",
        f"  unless {settings.node_kubeconfig} holds a valid client certificate: a new key and a "
        f"certificate request for {user} to {server} (as {settings.bootstrap_kubeconfig})",
        f"  a serving certificate request for {', '.join(settings.hostnames)}, waited for at "
        f"most {settings.serving_wait:g}s",
        f"  read config map {where} and write its files and {NODE_CONFIG} into {folder}",
        f"  then plan the components from {folder / NODE_CONFIG} (not known before the config map)",
    ]


def _reporter(notifier: Any, log: Any) -> Callable[[str], None]:
    last = [""]

    def say(message: str) -> None:
        if message == last[0]:
            return
        last[0] = message
        notifier.status(f"bootstrap: {message}")
        if log is not None:
            log.info("bootstrap", status=message)

    return say


async def run_bootstrap(settings: BootstrapSettings, say: Callable[[str], None]) -> None:
    """Steps 1-5 of the module docstring (async: the API client is)."""
    from nodehost.pki.atomic import make_directories

    deadline = time.monotonic() + settings.timeout
    try:
        make_directories(settings.config_dir, CONFIG_DIR_MODE)
    except OSError as error:
        raise RuntimeFailure(
            f"cannot create the config folder {settings.config_dir}: {error.strerror}"
        ) from None
    lost = expired_identity(settings)
    if lost is not None:
        announce_rejoin(settings, lost)
    await rejoin_if_lost(settings, deadline, say, lost)
    try:
        await act_as_node(settings, deadline, say)
    except LostIdentity as refused:
        lost = str(refused)
        announce_rejoin(settings, lost)
        settings.node_kubeconfig.unlink(missing_ok=True)  # a kill from here on: joins again
        await rejoin_if_lost(settings, deadline, say, lost)
        await act_as_node(settings, deadline, say)
    if lost is not None:
        await post_rejoin_event(settings, lost)


# --- a lost identity -------------------------------------------------------------------


class LostIdentity(Exception):
    """The API server no longer accepts the node's own client certificate (the message: why)."""


def expired_identity(settings: BootstrapSettings) -> str | None:
    """Why the client certificate ``node.kubeconfig`` names is there but no longer valid
    (it expired while the node was off), or None (valid, or the node never joined)."""
    from nodehost.plugins.bootstrap import certstore

    if not settings.node_kubeconfig.exists() or usable_node_kubeconfig(settings.node_kubeconfig):
        return None
    pair = certstore.read_pair(certstore.current_path(settings.cert_dir, certstore.CLIENT_PREFIX))
    if pair is None:
        return None
    return f"its client certificate expired at {pair.not_after:%Y-%m-%d %H:%M:%S} UTC"


def announce_rejoin(settings: BootstrapSettings, lost: str) -> None:
    """The one log line of a node falling back to its bootstrap credentials."""
    from nodehost.log import print_message

    print_message(
        f"node {settings.node_name} lost its identity ({lost}); joining again through a new "
        f"certificate request with the bootstrap credentials in {settings.bootstrap_kubeconfig}",
        "warning",
    )


async def rejoin_if_lost(
    settings: BootstrapSettings, deadline: float, say: Callable[[str], None], lost: str | None
) -> None:
    """:func:`ensure_client_certificate`; after a lost identity, a failure says what to give."""
    try:
        await ensure_client_certificate(settings, deadline, say)
    except RuntimeFailure as error:
        if lost is None:
            raise
        raise RuntimeFailure(
            f"node {settings.node_name} lost its identity ({lost}) and cannot join again: "
            f"{error}; provide bootstrap credentials the API server accepts (a kubeconfig "
            "with a bootstrap token allowed to create certificate requests) with --kubeconfig"
        ) from None


async def act_as_node(
    settings: BootstrapSettings, deadline: float, say: Callable[[str], None]
) -> None:
    """Steps 3-5 with the node's own identity; :class:`LostIdentity` when it is refused (401)
    or the API server's certificate no longer verifies against its CA (the CA was rotated)."""
    from nodehost.api.client import ClusterClient, ClusterRefused, ClusterTLSError

    client = ClusterClient(str(settings.node_kubeconfig), deadline=deadline, on_retry=say)
    try:
        await ensure_serving_certificate(settings, client, say, log_pending=True)
        await download_config(settings, client, say)
    except ClusterRefused as error:
        if error.code != 401:
            raise
        raise LostIdentity("the API server refused its client certificate: 401") from None
    except ClusterTLSError as error:
        raise LostIdentity(f"{error}") from None
    finally:
        await client.close()


async def post_rejoin_event(settings: BootstrapSettings, lost: str) -> None:
    """A ``NodeRejoined`` Warning event on the Node saying why (best effort)."""
    from nodehost.api.events import post_event
    from nodehost.plugins.bootstrap.events import rejoined_event

    failure = await post_event(
        str(settings.node_kubeconfig), rejoined_event(settings.node_name, lost)
    )
    if failure is not None:
        from nodehost.log import print_message

        print_message(f"warning: cannot post the NodeRejoined event: {failure}", "warning")


# --- the client certificate ----------------------------------------------------------


def usable_node_kubeconfig(path: Path) -> bool:
    """Whether ``path`` exists and its user's certificate file holds a valid pair now."""
    from nodehost.plugins.bootstrap.certstore import valid_pair

    user = kubeconfig_entries(path)[1]
    certificate = user.get("client-certificate") if user else None
    if not isinstance(certificate, str) or not certificate:
        return False
    certificate_path = Path(path).parent / certificate
    return valid_pair(certificate_path) is not None


async def ensure_client_certificate(
    settings: BootstrapSettings, deadline: float, say: Callable[[str], None]
) -> None:
    """Keep a usable ``node.kubeconfig``, or get a certificate through a CSR and write one."""
    from nodehost.api.client import ClusterClient
    from nodehost.plugins.bootstrap import certstore
    from nodehost.plugins.bootstrap.csr import client_request, obtain_with_pending_key

    if usable_node_kubeconfig(settings.node_kubeconfig):
        say(f"{settings.node_kubeconfig} exists and is valid, skipping bootstrap")
        return
    cluster = bootstrap_cluster(settings.bootstrap_kubeconfig)
    request = client_request(settings.node_name)
    say(f"requesting a client certificate from {cluster['server']}")
    async with ClusterClient(
        str(settings.bootstrap_kubeconfig), deadline=deadline, on_retry=say
    ) as client:
        current = await obtain_with_pending_key(
            client, settings.cert_dir, certstore.CLIENT_PREFIX, request, say
        )
    write_node_kubeconfig(settings.node_kubeconfig, cluster, current)
    say(f"client certificate issued; wrote {settings.node_kubeconfig}")


def bootstrap_cluster(path: Path) -> dict[str, Any]:
    """The current cluster of the bootstrap kubeconfig: server, CA PEM, insecure flag."""
    cluster = kubeconfig_entries(path, required="bootstrap kubeconfig")[0]
    server = cluster.get("server") or ""
    if not server:
        raise RuntimeFailure(f"bootstrap kubeconfig {path}: its current context names no server")
    for key in ("server", "certificate-authority-data", "certificate-authority"):
        if cluster.get(key) and not isinstance(cluster[key], str):
            raise RuntimeFailure(f"bootstrap kubeconfig {path}: {key} must be a string")
    ca_pem = b""
    if cluster.get("certificate-authority-data"):
        try:
            ca_pem = base64.b64decode(cluster["certificate-authority-data"], validate=True)
        except ValueError:
            raise RuntimeFailure(
                f"bootstrap kubeconfig {path}: certificate-authority-data is not base64"
            ) from None
    elif cluster.get("certificate-authority"):
        ca_file = Path(path).parent / cluster["certificate-authority"]
        try:
            ca_pem = read_file(ca_file, PEM_LIMIT)
        except OSError as error:
            raise RuntimeFailure(
                f"bootstrap kubeconfig {path}: cannot read {ca_file}: {error.strerror}"
            ) from None
    insecure = bool(cluster.get("insecure-skip-tls-verify")) and not ca_pem
    return {"server": server, "ca_pem": ca_pem, "insecure": insecure}


def write_node_kubeconfig(path: Path, cluster: dict[str, Any], certificate: Path) -> None:
    """Origin's bootstrap ``node.kubeconfig`` (:ref:`origin-bootstrap-client-certificate`), 0600,
    atomically."""
    from nodehost.pki.atomic import write_atomic
    from nodehost.pki.kubeconfig import dump_kubeconfig, kubeconfig

    config = kubeconfig(
        cluster["server"],
        {"client-certificate": str(certificate), "client-key": str(certificate)},
        names=("default-cluster", "default-auth", "default-context"),
        ca_pem=cluster["ca_pem"],
        insecure=cluster["insecure"],
        namespace="default",
    )
    write_atomic(path, dump_kubeconfig(config), FILE_MODE)


# --- the serving certificate ---------------------------------------------------------


async def ensure_serving_certificate(
    settings: BootstrapSettings,
    client: ClusterClient,
    say: Callable[[str], None],
    *,
    log_pending: bool,
) -> Path | None:
    """A valid serving pair's ``-current.pem`` path, or None while its CSR is pending."""
    from nodehost.plugins.bootstrap import certstore

    current = certstore.current_path(settings.cert_dir, certstore.SERVING_PREFIX)
    if certstore.valid_pair(current) is not None:
        return current
    import asyncio

    from nodehost.plugins.bootstrap.csr import SERVING_SIGNER, CSRNotAnswered

    try:
        return await asyncio.wait_for(
            request_serving_certificate(settings, client, say), settings.serving_wait
        )
    except (TimeoutError, CSRNotAnswered):
        if log_pending:
            from nodehost.log import print_message

            print_message(
                f"warning: the kubelet serving certificate request for {settings.node_name} "
                f"({SERVING_SIGNER}) was not signed within {settings.serving_wait:g}s: this "
                "cluster has no approver for serving certificates (kubeadm clusters need one, "
                "or 'kubectl certificate approve'); the node starts without it and the "
                "bootstrap component keeps waiting",
                "warning",
            )
        return None


async def request_serving_certificate(
    settings: BootstrapSettings, client: ClusterClient, say: Callable[[str], None]
) -> Path:
    """File (or find) the serving CSR, wait for it, store the pair; its ``-current.pem``."""
    from nodehost.plugins.bootstrap import certstore
    from nodehost.plugins.bootstrap.csr import obtain_with_pending_key, serving_request

    request = serving_request(settings.node_name, settings.hostnames)
    return await obtain_with_pending_key(
        client, settings.cert_dir, certstore.SERVING_PREFIX, request, say
    )


# --- the config map ------------------------------------------------------------------


async def download_config(
    settings: BootstrapSettings, client: ClusterClient, say: Callable[[str], None]
) -> None:
    """Steps 4-5: the client CA file, then the config map's files, all or nothing."""
    from nodehost.api.client import ClusterRefused
    from nodehost.pki.commit import PlannedFile, describe_os_error
    from nodehost.pki.versioned import commit_versioned

    where = f"{settings.namespace}/{settings.config_map}"
    say(f"reading config map {where}")
    try:
        config_map = await client.get("ConfigMap", settings.config_map, settings.namespace)
    except ClusterRefused as error:
        if error.code == 401:
            raise
        if error.code == 403:
            settings.node_kubeconfig.unlink(missing_ok=True)
            raise RuntimeFailure(
                f"node {settings.node_name} is not authorised to read config map {where} "
                f"(403 Forbidden); deleted {settings.node_kubeconfig} so the next start "
                "bootstraps again"
            ) from None
        if error.code == 404:
            raise RuntimeFailure(
                f"config map {where} not found (--bootstrap-config-name "
                f"{settings.config_map}, --bootstrap-config-namespace {settings.namespace})"
            ) from None
        raise RuntimeFailure(f"unable to read config map {where}: {error}") from None
    files = [PlannedFile(NODE_CLIENT_CA, node_client_ca(settings.node_kubeconfig), 0o644)]
    data = _config_map_data(config_map, where)
    serving = certstore_current_if_valid(settings)
    for key, value in sorted(data.items()):
        if key in PROTECTED_KEYS or key in (".", "..") or "/" in key:
            continue
        content = str(value).encode()
        if key == NODE_CONFIG:
            content = rewrite_node_config(content, settings, serving)
        files.append(PlannedFile(key, content, FILE_MODE))
    if NODE_CONFIG not in data and not (settings.config_dir / NODE_CONFIG).exists():
        raise RuntimeFailure(
            f"config map {where} has no {NODE_CONFIG} key and {settings.config_dir / NODE_CONFIG} "
            "does not exist"
        )
    try:
        commit_versioned(settings.config_dir, files)
    except OSError as error:
        raise RuntimeFailure(
            f"cannot write the files of config map {where} into {settings.config_dir}: "
            f"{describe_os_error(error)}"
        ) from None
    say(f"wrote {len(files)} file(s) from config map {where}")


def _config_map_data(config_map: Mapping[str, Any], where: str) -> Mapping[str, str]:
    """The config map's ``data``; :class:`RuntimeFailure` naming the field when it is not a
    map of strings (the API server would not hold such a ConfigMap; a proxy might say so)."""
    from nodehost.api.objects import MalformedObject, mapping, text

    try:
        data = mapping(config_map.get("data"), "data")
        return {key: text(value, f"data.{key}") for key, value in data.items()}
    except MalformedObject as error:
        message = f"config map {where} is not the shape of a ConfigMap: {error}"
        raise RuntimeFailure(message) from None


def certstore_current_if_valid(settings: BootstrapSettings) -> Path | None:
    from nodehost.plugins.bootstrap import certstore

    current = certstore.current_path(settings.cert_dir, certstore.SERVING_PREFIX)
    return current if certstore.valid_pair(current) is not None else None


def node_client_ca(node_kubeconfig: Path) -> bytes:
    """The CA data of ``node.kubeconfig``'s cluster (Origin's ``node-client-ca.crt``)."""
    cluster = bootstrap_cluster(node_kubeconfig)
    return cluster["ca_pem"]


def rewrite_node_config(content: bytes, settings: BootstrapSettings, serving: Path | None) -> bytes:
    """The start flags' overrides and the bootstrap overrides (docs/operating/cluster.rst)
    applied to ``content``.

    ``content`` is parsed by the one bounded loader (:mod:`nodehost.config.yamlsafe`); when
    it cannot be loaded as a mapping it is returned as it is, so that loading the node
    config refuses it with the loader's own reason, line and column (``start``: exit 255;
    config sync: ``config rejected``) -- the same result as the same bytes in a file.
    CPU-bound (up to the 4 MiB limit): call it from the event loop through
    :func:`nodehost.config.jsonsafe.off_loop`.
    """
    from nodehost.config.yamlsafe import YAMLFileError, parse_yaml_bytes
    from nodehost.pki.nodeconfig import dump_node_config

    try:
        raw = parse_yaml_bytes(content).data
    except YAMLFileError:
        return content
    if not isinstance(raw, dict):
        return content
    merge_cli_overrides(raw, settings)
    apply_bootstrap_overrides(raw, settings, serving)
    return dump_node_config(raw)


def merge_cli_overrides(raw: dict[str, Any], settings: BootstrapSettings) -> None:
    """Origin's ``MergeSerializeableNodeConfig`` (:ref:`origin-cli-overrides`) for the flags
    bootstrap knows.

    Origin overwrote ``allowDisabledDocker`` with its flag's value, false; false
    is the default, which a written config leaves out (the key has no effect in
    nodehost and would only be warned about), so the key is removed.
    """
    raw["nodeName"] = settings.node_name
    if settings.listen_provided:
        serving = raw.setdefault("servingInfo", {})
        host = settings.listen_host
        serving["bindAddress"] = join_host_port(host, 10250)
    if settings.volume_dir is not None:
        raw["volumeDirectory"] = settings.volume_dir
    raw.pop("allowDisabledDocker", None)


def apply_bootstrap_overrides(
    raw: dict[str, Any], settings: BootstrapSettings, serving: Path | None
) -> None:
    """Origin's ``overrideNodeConfigForBootstrap`` (:ref:`origin-bootstrap-overrides`).

    The serving certificate is the one nodehost obtained, when it has one;
    otherwise ``certFile``/``keyFile`` are empty as in Origin (the kubelet's own
    rotation or a self-signed certificate).
    """
    from nodehost.hostaddr import default_local_ipv4

    arguments = raw.get("kubeletArguments")
    if not isinstance(arguments, dict):
        arguments = raw["kubeletArguments"] = {}
    if raw.get("dnsIP") == "0.0.0.0":
        raw["dnsIP"] = raw.get("nodeIP") or default_local_ipv4()
    serving_info = raw.get("servingInfo")
    if not isinstance(serving_info, dict):
        serving_info = raw["servingInfo"] = {}
    serving_info["clientCA"] = NODE_CLIENT_CA
    relative = f"{CERT_DIR}/{serving.name}" if serving is not None else ""
    serving_info["certFile"] = relative
    serving_info["keyFile"] = relative
    arguments["bootstrap-kubeconfig"] = [str(settings.bootstrap_kubeconfig)]
    arguments.setdefault("cert-dir", [f"./{CERT_DIR}"])
    arguments.setdefault("feature-gates", [FEATURE_GATES])
