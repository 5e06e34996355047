"""``nodehost ca``: a signer CA for clusters and CI runs that have none.

``nodehost ca create --dir DIR`` writes ``ca.crt``, ``ca.key`` (0600),
``ca.serial.txt`` and ``ca-bundle.crt``; ``nodehost config create`` then
signs node certificates with it (``--signer-cert DIR/ca.crt --signer-key
DIR/ca.key --signer-serial DIR/ca.serial.txt``).  The work is
:func:`nodehost.pki.ca.create_signer_ca`, imported inside the command.
"""

from __future__ import annotations

from pathlib import Path

import click

from nodehost.pki import DEFAULT_CA_DAYS, DEFAULT_KEY_TYPE, KEY_TYPES


@click.group("ca", short_help="Create a signer CA for node certificates.")
def ca() -> None:
    """Signer certificate authorities for node certificates."""


@ca.command("create", short_help="Create a signer CA in a folder.")
@click.option(
    "--dir",
    "directory",
    required=True,
    metavar="DIR",
    help="Folder for ca.crt, ca.key, ca.serial.txt and ca-bundle.crt (created if missing).",
)
@click.option(
    "--name", default="", help="Common name of the CA  [default: nodehost-signer@<unix time>]"
)
@click.option(
    "--expire-days",
    type=int,
    default=DEFAULT_CA_DAYS,
    show_default=True,
    help="Validity of the CA certificate in days. WARNING: extending this above "
    "default value is highly discouraged.",
)
@click.option(
    "--key-type",
    type=click.Choice(KEY_TYPES),
    default=DEFAULT_KEY_TYPE,
    show_default=True,
    help="Type of the CA's private key.",
)
def create_ca_command(directory: str, name: str, expire_days: int, key_type: str) -> None:
    """Create a signer CA; an existing CA in DIR is never replaced."""
    from nodehost.pki.ca import create_signer_ca

    result = create_signer_ca(Path(directory), name or None, expire_days, key_type)
    if result.warnings:
        from nodehost.log import print_message

        for warning in result.warnings:
            print_message(warning, "warning")
    click.echo(f"Created signer CA in {result.directory}")
