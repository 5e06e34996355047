"""Running one CNI plugin binary as a container runtime does (CNI spec, "Execution protocol").

The network configuration goes to the plugin's stdin as JSON, the runtime's
parameters as ``CNI_*`` environment variables; a result (or an error) comes
back on stdout.  A failure is a :class:`CniError` carrying the spec's error
object (``code``, ``msg``, ``details``) and naming the plugin and command.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

from nodehost.cni.plugins import find_plugin
from nodehost.config.jsonsafe import parse_json
from nodehost.errors import RuntimeFailure
from nodehost.fileread import TEXT_LIMIT
from nodehost.frozen import frozen

#: Seconds a plugin may take before it counts as failed.
DEFAULT_TIMEOUT = 60.0

#: The spec's well-known error codes (1-99 are reserved for the spec).
ERROR_CODES = {
    1: "incompatible CNI version",
    2: "unsupported field in network configuration",
    3: "container unknown or does not exist",
    4: "invalid necessary environment variables",
    5: "I/O failure",
    6: "failed to decode content",
    7: "invalid network config",
    11: "try again later",
    50: "plugin not available",
    51: "plugin not available, status check failed",
}


@frozen
class RuntimeConf:
    """The runtime's side of one attachment: container, namespace, interface, arguments.

    ``args`` become ``CNI_ARGS`` (``K=V;K=V``); ``capability_args`` are the
    runtime's capability arguments (``portMappings``, ...), passed as
    ``runtimeConfig`` to plugins that declare the capability.
    """

    container_id: str
    netns: str
    ifname: str = "eth0"
    args: Mapping[str, str] = field(default_factory=dict)
    capability_args: Mapping[str, Any] = field(default_factory=dict)

    def environment(self, command: str, bin_dirs: Sequence[str]) -> dict[str, str]:
        """The ``CNI_*`` variables for ``command``, on top of this process's environment."""
        env = dict(os.environ)
        env.update(
            CNI_COMMAND=command,
            CNI_CONTAINERID=self.container_id,
            CNI_NETNS=self.netns,
            CNI_IFNAME=self.ifname,
            CNI_ARGS=";".join(f"{key}={value}" for key, value in self.args.items()),
            CNI_PATH=os.pathsep.join(bin_dirs),
        )
        return env


class CniError(RuntimeFailure):
    """A CNI plugin failed: its type, the command, and the spec's ``code``, ``msg``, ``details``."""

    def __init__(
        self, plugin: str, command: str, code: int | None, msg: str, details: str = ""
    ) -> None:
        self.plugin = plugin
        self.command = command
        self.code = code
        self.msg = msg
        self.details = details
        super().__init__(self.describe())

    def describe(self) -> str:
        """``plugin bridge (ADD) failed: CNI error 11 (try again later): msg: details``."""
        if self.code is None:
            head = f"plugin {self.plugin} ({self.command}) failed"
        else:
            meaning = ERROR_CODES.get(self.code)
            label = f"CNI error {self.code}" + (f" ({meaning})" if meaning else "")
            head = f"plugin {self.plugin} ({self.command}) failed: {label}"
        text = ": ".join(part for part in (self.msg, self.details) if part)
        return f"{head}: {text}" if text else head


def invoke_plugin(
    netconf: Mapping[str, Any],
    command: str,
    runtime: RuntimeConf,
    bin_dirs: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> dict[str, Any] | None:
    """Run plugin ``netconf["type"]`` for ``command``; its JSON result (None if it printed none).

    Raises :class:`CniError` when the binary is missing, does not answer in
    ``timeout`` seconds, exits non-zero (with the spec's error object when it
    printed one, else its stderr) or prints something that is not JSON.
    """
    plugin = str(netconf.get("type", ""))
    binary = find_plugin(plugin, bin_dirs)
    if binary is None:
        raise CniError(plugin, command, None, f"not found in {', '.join(bin_dirs)}")
    try:
        done = subprocess.run(
            [binary],
            input=json.dumps(netconf).encode(),
            env=runtime.environment(command, bin_dirs),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CniError(plugin, command, None, f"no answer within {timeout:g}s") from None
    except OSError as error:
        raise CniError(plugin, command, None, f"cannot run {binary}: {error}") from None
    if done.returncode != 0:
        raise _error_from(plugin, command, done)
    output = done.stdout.strip()
    if not output:
        return None
    try:
        return parse_json(output, TEXT_LIMIT)
    except ValueError:
        raise CniError(
            plugin, command, None, f"printed a result that is not JSON: {output[:200]!r}"
        ) from None


def _error_from(plugin: str, command: str, done: subprocess.CompletedProcess[bytes]) -> CniError:
    """The spec's error object from stdout, else the plugin's stderr and exit status."""
    try:
        error = parse_json(done.stdout, TEXT_LIMIT)
    except ValueError:
        error = None
    if isinstance(error, Mapping) and "msg" in error:
        code = error.get("code")
        return CniError(
            plugin,
            command,
            code if isinstance(code, int) else None,
            str(error.get("msg", "")),
            str(error.get("details", "") or ""),
        )
    stderr = " ".join(done.stderr.decode(errors="replace").split())[-500:]
    return CniError(
        plugin, command, None, f"exit status {done.returncode}: {stderr or 'no output'}"
    )
