"""Certificates, keys and generated node folders (Origin's ``create-node-config``).

Modules, from the bottom up:

* :mod:`nodehost.pki.atomic`     -- atomic file writes and directory creation;
* :mod:`nodehost.pki.defaults`   -- what ``create-node-config`` uses when a flag is not given;
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

This package's ``__init__`` holds only constants and imports nothing (the host
writes its state through :mod:`nodehost.pki.atomic` without loading the
options); the modules above that need ``cryptography`` import it at their top,
so ``import nodehost`` and ``nodehost --help`` stay light.
"""

from __future__ import annotations

#: Key types accepted by ``--key-type``; ``rsa`` (2048 bits) is Origin's and the default.
KEY_TYPES = ("rsa", "ecdsa", "ed25519")
DEFAULT_KEY_TYPE = "rsa"

#: Origin's ``DefaultCACertificateLifetimeInDays`` (5 years) for signer CAs.  Leaf
#: certificates default to ``nodehost.options.DEFAULT_EXPIRE_DAYS`` (730, 2 years).
DEFAULT_CA_DAYS = 1825
