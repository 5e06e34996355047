"""Workloads: processes an agent starts that must outlive the agent and nodehost.

An agent (containerd) starts daemons (its shims) that run the node's
workloads (containers).  They carry the agent's marker variables and sit in
its cgroup, so without more they would be ended with the agent.  A workload
launcher -- a ``sh`` script a plugin puts in front of the real program, see
:func:`launcher_script` -- hands the process over before it runs:

* it moves itself into the workload cgroup (``$NODEHOST_WORKLOAD_CGROUP``,
  when cgroups are in force), out of the agent's;
* it renames ``NODEHOST_MANAGED`` to ``NODEHOST_WORKLOAD`` and drops
  ``NODEHOST_COMPONENT``: stops, the leftover search and the guardian no
  longer count it as an agent, and ``nodehost teardown`` finds it by that name.

Everything below a workload process (a container's processes) belongs to it.
"""

from __future__ import annotations

import shlex

from nodehost.daemon.variables import (
    COMPONENT_VARIABLE,
    MARKER_VARIABLE,
    WORKLOAD_CGROUP_VARIABLE,
    WORKLOAD_VARIABLE,
)


def launcher_script(program: str, what: str) -> bytes:
    """A ``sh`` script that hands itself over as a workload, then runs ``program``.

    ``what`` names the program in the script's comment.  If the move into the
    workload cgroup fails, the program still runs -- as part of its agent.
    """
    return (
        "#!/bin/sh\n"
        f"# Written by nodehost: {what} is a workload, not an agent; it moves out of\n"
        "# its agent's cgroup and markers and outlives nodehost (nodehost teardown ends it).\n"
        f'if [ -n "${{{WORKLOAD_CGROUP_VARIABLE}:-}}" ]; then\n'
        f'  {{ echo $$ > "${WORKLOAD_CGROUP_VARIABLE}/cgroup.procs"; }} 2>/dev/null || :\n'
        "fi\n"
        f"{WORKLOAD_VARIABLE}=${{{MARKER_VARIABLE}:-}}\n"
        f"export {WORKLOAD_VARIABLE}\n"
        f"unset {MARKER_VARIABLE} {COMPONENT_VARIABLE} {WORKLOAD_CGROUP_VARIABLE}\n"
        f'exec {shlex.quote(program)} "$@"\n'
    ).encode()


def workload_roots(state_dir: str) -> list[int]:
    """The live processes handed over as workloads of ``state_dir`` (by their variable)."""
    from nodehost.daemon import proc  # ctypes: not for a plan that only writes the launcher

    return proc.processes_with(WORKLOAD_VARIABLE, state_dir)
