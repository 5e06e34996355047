"""Installing nodehost as a systemd service, and removing it again.

``nodehost install`` writes two files -- the unit (:data:`UNIT_PATH`, the
packaged ``nodehost.service`` with ``ExecStart`` pointing at the nodehost that
ran it) and the environment file (:data:`ENVIRONMENT_PATH`, the given
``start`` flags as ``NODEHOST_*`` variables) -- then has systemd load and
enable the unit where systemd runs (:mod:`nodehost.install.systemd`).  Each
file carries the digest of what nodehost wrote (:mod:`nodehost.install.files`),
so a later install replaces a file nodehost wrote but never one an operator
changed, unless forced.

``nodehost uninstall`` (:mod:`nodehost.install.uninstall`) undoes it in an
order that a second run can always finish.  See docs/operating/running.rst,
"Installing as a service".
"""

from __future__ import annotations

#: Where ``install`` writes the unit and ``uninstall`` removes it.
UNIT_PATH = "/etc/systemd/system/nodehost.service"
#: Where ``install`` writes the flags as ``NODEHOST_*`` variables (the unit's ``EnvironmentFile``).
ENVIRONMENT_PATH = "/etc/default/nodehost"
#: The unit's name for ``systemctl``.
UNIT_NAME = "nodehost.service"
