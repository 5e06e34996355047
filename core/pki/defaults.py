"""What ``create-node-config`` (``nodehost config create``) uses when a flag is not given.

Origin's defaults; the signer's files are relative to the current directory.
"""

from __future__ import annotations

from nodehost.options import DEFAULT_CLUSTER_DOMAIN, DEFAULT_MASTER_CERT_DIR

DEFAULT_SIGNER_CERT = f"{DEFAULT_MASTER_CERT_DIR}/ca.crt"
DEFAULT_SIGNER_KEY = f"{DEFAULT_MASTER_CERT_DIR}/ca.key"
DEFAULT_SIGNER_SERIAL = f"{DEFAULT_MASTER_CERT_DIR}/ca.serial.txt"
DEFAULT_MASTER_URL = "https://localhost:8443"
DEFAULT_DNS_DOMAIN = DEFAULT_CLUSTER_DOMAIN
#: The port of the node's ``servingInfo`` when ``--listen`` names none (Origin's default).
NODE_SERVING_PORT = 10250
DEFAULT_NODE_LISTEN = f"0.0.0.0:{NODE_SERVING_PORT}"
