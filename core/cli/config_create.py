"""``nodehost config create``: Origin's ``create-node-config`` (:ref:`origin-create-node-config`).

The command only turns flags into a :class:`~nodehost.pki.nodefolder.NodeFolderRequest`
and prints; :func:`nodehost.pki.nodefolder.create_node_folder` does the work
(imported inside the command, so loading this module stays light).  Errors are
:class:`~nodehost.errors.NodehostError` s for the CLI root to render.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from nodehost.errors import UsageError
from nodehost.options import DEFAULT_EXPIRE_DAYS, DEFAULT_IMAGE_FORMAT, DEFAULT_VOLUME_DIR
from nodehost.pki import DEFAULT_KEY_TYPE, KEY_TYPES
from nodehost.pki.defaults import (
    DEFAULT_DNS_DOMAIN,
    DEFAULT_MASTER_URL,
    DEFAULT_NODE_LISTEN,
    DEFAULT_SIGNER_CERT,
    DEFAULT_SIGNER_KEY,
    DEFAULT_SIGNER_SERIAL,
    NODE_SERVING_PORT,
)


def _split_list(values: Sequence[str]) -> tuple[str, ...]:
    """pflag's StringSlice: every occurrence, each split on commas, empties dropped."""
    return tuple(item.strip() for value in values for item in value.split(",") if item.strip())


@click.command("create", short_help="Create a configuration bundle for a node.")
@click.option("--node-dir", default="", help="The client data directory.")
@click.option("--node", "node_name", default="", help="The name of the node as it appears in etcd.")
@click.option(
    "--hostnames",
    multiple=True,
    metavar="LIST",
    help="Every hostname or IP you want server certs to be valid for. Comma delimited list",
)
@click.option(
    "--volume-dir",
    default=DEFAULT_VOLUME_DIR,
    show_default=True,
    help="The volume storage directory.  This path is not relativized.",
)
@click.option(
    "--images",
    "image_format",
    default=DEFAULT_IMAGE_FORMAT,
    show_default=True,
    help="When fetching the network container image, use this format.",
)
@click.option(
    "--latest-images",
    is_flag=True,
    help="Use the latest images for the cluster instead of the latest release.",
)
@click.option(
    "--allow-disabled-docker",
    is_flag=True,
    help="Allow the node to start without docker being available.",
)
@click.option("--dns-bind-address", default="", help="An address to bind DNS to.")
@click.option(
    "--dns-domain",
    default=DEFAULT_DNS_DOMAIN,
    show_default=True,
    help="DNS domain for the cluster.",
)
@click.option("--dns-ip", default="", help="DNS server IP for the cluster.")
@click.option(
    "--listen",
    default=DEFAULT_NODE_LISTEN,
    show_default=True,
    help="The address to listen for connections on (scheme://host:port).",
)
@click.option(
    "--client-certificate", default="", help="The client cert file for the node to contact the API."
)
@click.option(
    "--client-key", default="", help="The client key file for the node to contact the API."
)
@click.option(
    "--server-certificate",
    default="",
    help="The server cert file for the node to serve secure traffic.",
)
@click.option(
    "--server-key", default="", help="The server key file for the node to serve secure traffic."
)
@click.option(
    "--expire-days",
    type=int,
    default=DEFAULT_EXPIRE_DAYS,
    show_default=True,
    help="Validity of the certificates in days. WARNING: extending this above "
    "default value is highly discouraged.",
)
@click.option(
    "--node-client-certificate-authority",
    default=DEFAULT_SIGNER_CERT,
    show_default=True,
    help="The file containing signing authorities to use to verify requests to the "
    "node. If empty, all requests will be allowed.",
)
@click.option(
    "--master", default=DEFAULT_MASTER_URL, show_default=True, help="The API server's URL."
)
@click.option(
    "--certificate-authority",
    multiple=True,
    metavar="LIST",
    help="Files containing signing authorities to use to verify the API server's "
    f"serving certificate.  [default: {DEFAULT_SIGNER_CERT}]",
)
@click.option(
    "--network-plugin", default="", help="Name of the network plugin to hook to for pod networking."
)
@click.option(
    "--signer-cert", default=DEFAULT_SIGNER_CERT, show_default=True, help="The certificate file."
)
@click.option(
    "--signer-key",
    default=DEFAULT_SIGNER_KEY,
    show_default=True,
    help="The key file.",
)
@click.option(
    "--signer-serial",
    default=DEFAULT_SIGNER_SERIAL,
    show_default=True,
    help="The serial file that keeps track of how many certs have been signed.",
)
@click.option(
    "--key-type",
    type=click.Choice(KEY_TYPES),
    default=DEFAULT_KEY_TYPE,
    show_default=True,
    help="Type of the keys generated for new certificates.",
)
@click.option(
    "--overwrite", is_flag=True, help="Replace existing keys and certificates in the node folder."
)
def create(
    listen: str, hostnames: tuple[str, ...], certificate_authority: tuple[str, ...], **options: Any
) -> None:
    """Create a node folder: certificates, kubeconfig, node-config.yaml.

    Existing keys are never replaced without --overwrite; an existing
    certificate is kept only if it matches its key, was signed by the signer
    CA, is valid now and covers every requested name.  A node-config.yaml
    that would not pass 'config validate' is not written (exit 255).
    """
    from nodehost.config.listen import parse_listen
    from nodehost.pki.nodefolder import (
        NodeFolderRequest,
        create_node_folder,
        validate_request,
    )

    try:
        listen_address = parse_listen(
            listen, default_port=NODE_SERVING_PORT, default_value=DEFAULT_NODE_LISTEN
        )
    except ValueError as error:
        raise UsageError(str(error), "--listen") from None
    request = NodeFolderRequest(
        listen=listen_address,
        hostnames=_split_list(hostnames),
        certificate_authority=_split_list(certificate_authority) or (DEFAULT_SIGNER_CERT,),
        **options,
    )
    validate_request(request)
    click.echo("Generating node credentials ...")
    result = create_node_folder(request, check_config=refuse_invalid_config)
    if result.warnings:
        from nodehost.log import print_message

        for warning in result.warnings:
            print_message(warning, "warning")
    click.echo(f"Created node config for {request.node_name} in {request.node_dir}")


def refuse_invalid_config(
    path: Path, document: dict[str, Any], folder_files: frozenset[Path]
) -> None:
    """Validate the node-config.yaml about to be written as ``config validate`` does.

    ``document`` is the mapping the file is written from, equal to what reading
    the file gives (so PyYAML need not be loaded to read it back).  Raises
    :class:`~nodehost.errors.ConfigInvalid` (exit 255, nothing written) on any
    error.  A missing file that the folder itself will hold is no error: the
    command writes it next.
    """
    from nodehost.cli.options import load_inventory
    from nodehost.config.load import node_config_from_mapping
    from nodehost.errors import ConfigInvalid
    from nodehost.pluginhost.selection import SelectionRequest, select
    from nodehost.resolve import scope_for, validate

    inventory = load_inventory((), False, False)
    config, problems = node_config_from_mapping(
        document,
        source=str(path),
        base_dir=str(path.parent),
        known_sections=inventory.known_sections(),
        adjust=inventory.host.hooks.adjust_config,
    )
    catalog = inventory.catalog
    selected = select(catalog, SelectionRequest(components=",".join(catalog.names)))
    errors, _ = validate(config, scope_for(inventory, selected), selected, inventory, problems)
    errors = [e for e in errors if not (isinstance(e.value, str) and Path(e.value) in folder_files)]
    if errors:
        raise ConfigInvalid(f"{path} (not written)", errors)
