"""Origin's "generate" branch of ``start node`` (:ref:`origin-run-node`): a node folder from flags.

Used when ``nodehost start`` has no ``--config`` (the folder goes to
``--config-dir``, reusing what is already there) and by ``--write-config DIR``.
The master URL comes from ``--kubeconfig``; the signer CA from
``--master-cert-dir``; the serving certificate covers the node name and the
``--listen`` host (every local IPv4 address when it is unspecified,
:ref:`origin-server-cert-hostnames`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from nodehost.config.hostport import is_unspecified, parse_ip, split_host_port
from nodehost.errors import UsageError
from nodehost.hostaddr import local_ipv4_addresses
from nodehost.options import default_cluster_domain

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.options import StartOptions
    from nodehost.pki.nodefolder import NodeFolderResult

#: ``config create``'s flags, as ``start`` spells what feeds them.
START_FLAG_FOR = {
    "--certificate-authority": "--master-cert-dir",
    "--node-client-certificate-authority": "--master-cert-dir",
    "--signer-cert": "--master-cert-dir",
    "--signer-key": "--master-cert-dir",
    "--signer-serial": "--master-cert-dir",
    "--hostnames": "--hostname",
    "--node": "--hostname",
    "--node-dir": "--config-dir",
}

KUBECONFIG_REQUIRED = "--kubeconfig must be set to provide API server connection information"
#: Where a newcomer who gave no config source goes instead of generating one.
OTHER_STARTS = (
    "(or run from a node config with --config FILE, or the whole node on this machine "
    "with --local-cluster DIR)"
)


def generate_node_folder(options: StartOptions) -> str:
    """Write (or complete) the node folder and return the path of its node-config.yaml.

    Raises ``UsageError`` for flag problems and ``PKIError`` for unusable
    certificate material; prints the generator's warnings to stderr.
    """
    return str(node_folder(options).node_config)


def node_folder(options: StartOptions, *, dry_run: bool = False) -> NodeFolderResult:
    """:func:`generate_node_folder`'s work and its result; ``dry_run`` writes nothing
    (see :func:`nodehost.pki.nodefolder.create_node_folder`)."""

    from nodehost.config.listen import parse_listen
    from nodehost.pki.nodefolder import NodeFolderRequest, create_node_folder

    listen = parse_listen(options.listen)
    master_dir = options.master_cert_dir
    master = master_url(options.kubeconfig)  # Origin's order: --kubeconfig is checked first
    if not os.path.isdir(master_dir):
        raise UsageError(
            f"{master_dir} is no signer CA folder to generate the node folder from: give "
            f"--master-cert-dir {OTHER_STARTS}",
            "--master-cert-dir",
        )
    request = NodeFolderRequest(
        node_dir=options.write_config or options.config_dir,
        node_name=options.hostname,
        hostnames=tuple(server_cert_hostnames(options.hostname, listen.host)),
        volume_dir=options.volume_dir,
        image_format=options.images,
        latest_images=options.latest_images,
        dns_domain=default_cluster_domain(),
        dns_ip=os.environ.get("OPENSHIFT_DNS_ADDR", ""),
        listen=listen,
        expire_days=options.expire_days,
        node_client_certificate_authority=os.path.join(master_dir, "ca.crt"),
        master=master,
        certificate_authority=(os.path.join(master_dir, "ca-bundle.crt"),),
        network_plugin=options.network_plugin,
        signer_cert=os.path.join(master_dir, "ca.crt"),
        signer_key=os.path.join(master_dir, "ca.key"),
        signer_serial=os.path.join(master_dir, "ca.serial.txt"),
        kubelet_arguments={"fail-swap-on": ("false",)},
    )
    try:
        result = create_node_folder(request, dry_run=dry_run)
    except UsageError as error:
        raise UsageError(str(error), START_FLAG_FOR.get(error.param or "", error.param)) from error
    from nodehost.log import print_message

    for warning in result.warnings:
        print_message(warning, "warning")
    return result


def master_url(kubeconfig: str) -> str:
    """The API server URL from ``--kubeconfig`` (Origin's ``NodeArgs.Validate`` message if
    none); a file that cannot be loaded, or names no server, is a ``UsageError`` saying which."""
    from nodehost.errors import RuntimeFailure
    from nodehost.pki.kubeconfig import kubeconfig_entries

    if not kubeconfig:
        raise UsageError(f"{KUBECONFIG_REQUIRED} {OTHER_STARTS}", "--kubeconfig")
    try:
        cluster, _ = kubeconfig_entries(kubeconfig, required="kubeconfig")
    except RuntimeFailure as error:
        raise UsageError(str(error), "--kubeconfig") from None
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise UsageError(
            f"{kubeconfig} names no API server (its current context's cluster has no server); "
            f"{KUBECONFIG_REQUIRED}",
            "--kubeconfig",
        )
    return server


def server_cert_hostnames(node_name: str, listen_host: str) -> list[str]:
    """Origin's ``GetServerCertHostnames`` (:ref:`origin-server-cert-hostnames`), sorted."""
    names = {node_name}
    ip = parse_ip(listen_host)
    if ip is not None and is_unspecified(ip):
        names.update(local_ipv4_addresses())
    elif listen_host:
        names.add(listen_host)
    return sorted(_strip_port(name) for name in names if name)


def _strip_port(name: str) -> str:
    """``host:port`` -> ``host``; anything that is not host:port stays as it is."""
    try:
        host, port = split_host_port(name)
    except ValueError:
        return name
    return host if port.isdigit() and host else name
