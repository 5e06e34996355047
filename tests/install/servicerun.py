"""Running ``nodehost install``/``uninstall`` against folders of the test's own (a unique
module name: ``conftest`` puts this folder on ``sys.path``).

Each run happens in a new private mount namespace (``unshare -m``) in which
the test's folders are bind-mounted over ``/etc/systemd/system`` and
``/etc/default``: the host's own are never read or written.  With
``systemd=True`` a tmpfs over ``/run/systemd`` holds ``system/``, so that the
run believes systemd is the init system (and ``systemctl``, finding no manager,
fails as it would on a broken host).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

NODEHOST = str(Path(sys.executable).parent / "nodehost")

#: Runs in the new namespace: $1 unit folder, $2 defaults folder, $3 1 to fake systemd,
#: $4 shell commands run first, $5 shell commands run after; then the command.
_NAMESPACE_SCRIPT = """\
set -e
mount --bind "$1" /etc/systemd/system
mount --bind "$2" /etc/default
if [ "$3" = 1 ]; then mount -t tmpfs nh-life-run /run/systemd && mkdir /run/systemd/system; fi
eval "$4"
after=$5
shift 5
set +e
"$@"
status=$?
eval "$after"
exit $status
"""


@dataclass
class ServiceRoot:
    """The test's ``/etc/systemd/system`` and ``/etc/default``, and a way to run in them."""

    units: Path
    defaults: Path

    @property
    def unit(self) -> Path:
        return self.units / "nodehost.service"

    @property
    def environment(self) -> Path:
        return self.defaults / "nodehost"

    def run(
        self,
        *argv: str,
        systemd: bool = False,
        before: str = "",
        after: str = "",
        wrapper: tuple[str, ...] = (),
    ) -> subprocess.CompletedProcess[str]:
        """``nodehost argv`` (under ``wrapper``, e.g. strace) in a namespace of its own."""
        command = [
            "unshare", "-m", "--propagation", "private", "sh", "-c", _NAMESPACE_SCRIPT, "sh",
            str(self.units), str(self.defaults), "1" if systemd else "0", before, after,
            *wrapper, NODEHOST, *argv,
        ]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
