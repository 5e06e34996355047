"""The environment variables by which nodehost marks the processes it starts.

A module of names only: a plan that writes them into a script (a workload
launcher, :mod:`nodehost.daemon.workloads`) imports nothing of the code that
finds, moves or ends the processes (:mod:`nodehost.daemon.pidfiles`,
:mod:`nodehost.daemon.cgroups`, :mod:`nodehost.daemon.proc`).
"""

#: Every agent and its descendants carry it, set to the state directory.
MARKER_VARIABLE = "NODEHOST_MANAGED"
#: The component an agent process belongs to.
COMPONENT_VARIABLE = "NODEHOST_COMPONENT"
#: The folder of the workload cgroup, given to agents.
WORKLOAD_CGROUP_VARIABLE = "NODEHOST_WORKLOAD_CGROUP"
#: A workload (handed over by its launcher) carries it instead of ``MARKER_VARIABLE``.
WORKLOAD_VARIABLE = "NODEHOST_WORKLOAD"
