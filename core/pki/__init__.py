"""Certificates, keys and generated node folders (Origin's ``create-node-config``).

Modules, from the bottom up:

* :mod:`nodehost.pki.atomic`     -- atomic file writes and directory creation;
* :mod:`nodehost.pki.keys`       -- private keys: generate, encode as Origin did, load, match;
* :mod:`nodehost.pki.hostnames`  -- the names and IPs a serving certificate is for;
* :mod:`nodehost.pki.serial`     -- the signer's serial file, updated under a lock;
* :mod:`nodehost.pki.certs`      -- certificate profiles (CA, client, server), PEM in and out;
* :mod:`nodehost.pki.ca`         -- a signer CA: load one, create one (``nodehost ca create``);
* :mod:`nodehost.pki.reuse`      -- whether an existing certificate in a node folder may be kept;
* :mod:`nodehost.pki.kubeconfig` -- the node's kubeconfig with inline credentials;
* :mod:`nodehost.pki.nodeconfig` -- the ``node-config.yaml`` of a generated folder;
* :mod:`nodehost.pki.commit`     -- writing a set of files into a folder, all or nothing;
* :mod:`nodehost.pki.nodefolder` -- a whole node folder (``nodehost config create``).

This package's ``__init__`` holds only constants and never imports
``cryptography``; the modules above that need it import it at their top, so
``import nodehost`` and ``nodehost --help`` stay light.
"""

from __future__ import annotations

from nodehost.options import DEFAULT_CLUSTER_DOMAIN, DEFAULT_MASTER_CERT_DIR

#: Key types accepted by ``--key-type``; ``rsa`` (2048 bits) is Origin's and the default.
KEY_TYPES = ("rsa", "ecdsa", "ed25519")
DEFAULT_KEY_TYPE = "rsa"

#: Origin's ``DefaultCACertificateLifetimeInDays`` (5 years) for signer CAs.  Leaf
#: certificates default to ``nodehost.options.DEFAULT_EXPIRE_DAYS`` (730, 2 years).
DEFAULT_CA_DAYS = 1825

#: ``create-node-config`` defaults (Origin's; relative to the current directory).
DEFAULT_SIGNER_CERT = f"{DEFAULT_MASTER_CERT_DIR}/ca.crt"
DEFAULT_SIGNER_KEY = f"{DEFAULT_MASTER_CERT_DIR}/ca.key"
DEFAULT_SIGNER_SERIAL = f"{DEFAULT_MASTER_CERT_DIR}/ca.serial.txt"
DEFAULT_MASTER_URL = "https://localhost:8443"
DEFAULT_DNS_DOMAIN = DEFAULT_CLUSTER_DOMAIN
#: The port of the node's ``servingInfo`` when ``--listen`` names none (Origin's default).
NODE_SERVING_PORT = 10250
DEFAULT_NODE_LISTEN = f"0.0.0.0:{NODE_SERVING_PORT}"
