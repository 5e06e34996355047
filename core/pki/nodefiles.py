"""The names of the node's certificate files, shared by whoever writes and whoever reads them.

The node's client and serving pairs live in the certificate directory
(``kubeletArguments.cert-dir``) as client-go's certificate ``FileStore`` keeps
them: ``<prefix>-<timestamp>.pem`` files and a ``<prefix>-current.pem`` link
to the pair in use.  The bootstrap plugin writes them; the kubelet plugin
restarts its component when one changes.  The prefixes are upstream's
(``pkg/kubelet/certificate/bootstrap/bootstrap.go`` for the client pair,
``pkg/kubelet/certificate/kubelet.go`` for the serving pair).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

#: The prefix of the node's client certificate pair (the node's identity to the API server).
CLIENT_CERT_PREFIX = "kubelet-client"
#: The prefix of the node's serving certificate pair.
SERVING_CERT_PREFIX = "kubelet-server"


def current_pair_file(cert_dir: str | Path, prefix: str) -> Path:
    """The ``<prefix>-current.pem`` file of ``cert_dir``: the pair in use."""
    from pathlib import Path  # imported by those who touch the files, not by a plan

    return Path(cert_dir) / f"{prefix}-current.pem"
