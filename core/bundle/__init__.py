"""``nodehost debug bundle``: one tar.gz a maintainer can read, with no secret in it.

:mod:`nodehost.bundle.collect` gathers the entries (versions, ``nodehost
check --json`` where that command exists, ``/status``, ``/metrics``, each
component's recent output from ``/debug/logs/<component>``, the effective
config, its plan and the files the plan writes, the kubeconfig it names,
network state, the node's cgroup tree); every entry passes through
:mod:`nodehost.bundle.redact` before it is written.  See docs/operating/commands.rst
(``nodehost debug bundle``).
"""
