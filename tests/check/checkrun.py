"""Helpers of the host-check tests (a unique module name: ``conftest`` puts this folder on
``sys.path``, as ``tests/cli`` does for ``clirun``)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent

#: Programs run as real ones (not marked stand-ins), so that every host check applies.
AS_REAL_PROGRAMS = (
    f"--binary=kubelet={BIN / 'nodehost-standin-kubelet'}",
    f"--binary=kube-proxy={BIN / 'nodehost-standin-kube-proxy'}",
)


@dataclass
class CheckRun:
    """One ``nodehost check --json`` run: exit code, the checks by name, stderr."""

    code: int
    document: dict[str, Any]
    err: str

    @property
    def checks(self) -> dict[str, dict[str, str]]:
        return {row["name"]: row for row in self.document.get("checks", [])}

    def errors(self) -> dict[str, dict[str, str]]:
        return {name: row for name, row in self.checks.items() if row["result"] == "error"}
