"""Upstream Kubernetes program interfaces as data: flag tables, their Go parsers, config files.

* :mod:`nodehost.kube.goparse` -- Go's text parsers (strconv, encoding/csv,
  sloppy IPs, taints) with Go's exact error texts;
* :mod:`nodehost.kube.values` -- pflag's value types as Kubernetes defines them;
* :mod:`nodehost.kube.flags` -- :class:`~nodehost.kube.flags.Flag` and
  :class:`~nodehost.kube.flags.FlagSet`: Origin's ``Resolve``, pflag's
  command-line parsing, removed flags, the split into config file and flags;
* :mod:`nodehost.kube.programs` -- the flag sets of a current kubelet and
  kube-proxy, and the config files they read (``KubeletConfiguration``,
  ``KubeProxyConfiguration``);
* :mod:`nodehost.kube.configfile` -- writing and reading those files;
* :mod:`nodehost.kube.healthz` -- the URL to probe a program's ``/healthz``.

These modules describe programs; they never start one.  The kubelet and proxy
plugins use them to validate ``kubeletArguments``/``proxyArguments`` and to
write config files, and the stand-ins in :mod:`nodehost.testing` use them to
accept exactly the real programs' flags.  Only :mod:`~nodehost.kube.configfile`
imports yaml, and only when called.
"""
