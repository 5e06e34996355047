"""Talking to the cluster: the API client, TLS bootstrap through the CSR API, rotation.

* :mod:`nodehost.cluster.client`    -- a kubeconfig-driven client (``lightkube``) with
  timeouts, retries with backoff (connection errors, 429 honouring ``Retry-After``,
  5xx) and watches that resume;
* :mod:`nodehost.cluster.csr`       -- certificate signing requests: build, file, wait;
* :mod:`nodehost.cluster.certstore` -- the node's certificate files (``<prefix>-current.pem``)
  and their expiry;
* :mod:`nodehost.cluster.bootstrap` -- Origin's ``--bootstrap-config-name`` sequence
  (reference §3): client certificate, ``node.kubeconfig``, the config map, the config;
* :mod:`nodehost.cluster.rotation`  -- renewing the certificates while the node runs.

Nothing here is imported by ``import nodehost``; ``lightkube`` and
``cryptography`` are imported only by the modules that talk to the cluster.
"""

from __future__ import annotations

#: The signer of kubelet client certificates and of kubelet serving certificates.
CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"
SERVING_SIGNER = "kubernetes.io/kubelet-serving"


#: Config map keys never written to disk (Origin's list, reference §3.1 step 9).
PROTECTED_KEYS = frozenset(
    {"server.crt", "server.key", "master-client.crt", "master-client.key", "node.kubeconfig"}
)
