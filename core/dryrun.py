"""What ``start --dry-run`` says instead of doing: the config stage, described.

A dry run writes nothing, signs nothing, reserves no serial number and
contacts nothing; it only reads.  Without ``--config`` the config comes from
a generated node folder or from bootstrap, both of which have effects, so:

* **generate** -- the folder is computed as :func:`nodehost.generate.node_folder`
  would (flags checked, the signer CA and existing pairs read and checked) but
  nothing is made: :func:`generated_config` returns the node config the run
  would write, resolved against the real folder, the files the run would
  write (their absence is no problem yet) and one line per action;
* **a plugin that obtains the config** (bootstrap) -- it is asked to describe
  instead (``nodehost_describe_config``) and the dry run ends there.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.config.load import RawDocument
    from nodehost.options import StartOptions
    from nodehost.pki.nodefolder import NodeFolderResult

NOTHING_WRITTEN = "dry run: nothing is written, signed or sent"


def generated_raw_config(options: StartOptions) -> tuple[RawDocument, frozenset[str], list[str]]:
    """The node config a generating ``start`` would write, unwritten.

    Returns the raw document (its source and base directory those of the real
    folder), the absolute paths the run would write, and the actions as lines.
    Raises as :func:`nodehost.generate.node_folder` does.
    """
    from nodehost.config.load import RawDocument
    from nodehost.config.yamlsafe import decode, parse_yaml
    from nodehost.generate import node_folder

    result = node_folder(options, dry_run=True)
    parsed = parse_yaml(decode(result.node_config_data))
    document = RawDocument(
        data=parsed.data,
        source=str(result.node_config),
        base_dir=str(result.node_dir),
        positions=parsed.positions,
        key_positions=parsed.key_positions,
    )
    names = (*result.issued, *result.written)
    pending = frozenset(str(result.node_dir / name) for name in names)
    return document, pending, folder_actions(result, options)


def folder_actions(result: NodeFolderResult, options: StartOptions) -> list[str]:
    """One line per thing the generating run would do to the node folder."""
    lines = [f"would write the node folder {result.node_dir} ({NOTHING_WRITTEN})"]
    if result.issued:
        signer = os.path.abspath(os.path.join(options.master_cert_dir, "ca.crt"))
        lines.append(f"  new key and certificate signed by {signer}: {', '.join(result.issued)}")
    if result.reused:
        lines.append(f"  kept as they are: {', '.join(result.reused)}")
    lines.append(f"  written: {', '.join(result.written)}")
    return lines
