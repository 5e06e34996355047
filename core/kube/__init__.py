"""Kubernetes programs' interfaces, generically: pflag flag sets, Go's parsers, config files.

* :mod:`nodehost.kube.goparse` -- Go's text parsers (strconv, encoding/csv,
  sloppy IPs, taints) with Go's exact error texts;
* :mod:`nodehost.kube.values` -- pflag's value types as Kubernetes defines them;
* :mod:`nodehost.kube.flags` -- :class:`~nodehost.kube.flags.Flag` and
  :class:`~nodehost.kube.flags.FlagSet`: Origin's ``Resolve``, pflag's
  command-line parsing, removed flags, the split into config file and flags;
* :mod:`nodehost.kube.configfile` -- writing and reading a program's config file;
* :mod:`nodehost.kube.healthz` -- the URL to probe a program's ``/healthz``.

These modules are generic; they never start a program and name none.  Each
program's own knowledge (its flag table, config file fields, defaults) lives
in the plugin of the component that runs it (``nodehost.plugins.<name>.flags``
and ``.configfile``), which uses these modules to validate its arguments and
write its files, and its stand-in beside it to accept exactly the real
program's flags.  Only :mod:`~nodehost.kube.configfile` imports yaml, and only
when called.
"""
