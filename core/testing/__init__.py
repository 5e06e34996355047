"""Stand-in programs and helpers that let tests, users' CI and plugin authors drive nodehost.

* :mod:`nodehost.testing.standin` -- the generic stand-in behaviour engine
  (``/healthz``, clean SIGTERM exit, crash / slow-ready / hang / grandchild
  behaviours chosen by ``NODEHOST_STANDIN_*`` environment variables) and the
  ``nodehost-standin`` console script;
* :mod:`nodehost.testing.fakeprogram` -- a Kubernetes program's command line
  and config file as a stand-in imitates them; each component's stand-in sits
  beside its plugin and names itself in its record (``standins``: the
  kubelet's in :mod:`nodehost.plugins.kubelet.standin`, kube-proxy's in
  :mod:`nodehost.plugins.proxy.standin`); the TLS bootstrap of a node is
  :mod:`nodehost.testing.certrequest`;
* :mod:`nodehost.testing.planhost` -- run the host on a plan written as JSON,
  without configuration or plugins (runtime tests and ``bench/supervisor.py``);
* :mod:`nodehost.testing.notify` -- the systemd side of sd_notify;
* :mod:`nodehost.testing.apiserver` -- a fake Kubernetes API server (HTTPS, test CA,
  bootstrap tokens, CSR approval and signing, watches, fault injection), runnable
  as ``python -m nodehost.testing.apiserver``; its store is
  :mod:`nodehost.testing.apistore`, kubectl's protobuf bodies :mod:`nodehost.testing.kubeproto`,
  kubectl's tables :mod:`nodehost.testing.apitables`;
* :mod:`nodehost.testing.cri` -- acting as the kubelet over CRI (pods,
  containers, exec), a busybox image archive, a containerd of a test's own;
* :mod:`nodehost.testing.cni` -- a throw-away network namespace and a real CNI
  chain run in it (the ``cni_sandbox`` fixture for plugin authors).
* :mod:`nodehost.testing.ports` -- a loopback port that was free a moment ago;
* :mod:`nodehost.testing.wait` -- ``wait_for``: poll until an event happened.

Nothing here is imported by ``import nodehost``.
"""
