"""A containerd of the test's own, all of it in one folder: :func:`own_containerd`.

For tests of the runtime plugin and of anything that needs a real CRI runtime
(the kubelet stand-in's Node, pods run through :class:`nodehost.testing.cri.CriClient`):
``containerd`` from Debian's package (the ``containerd`` part of
:mod:`nodehost.testing.parts`), started on a configuration that keeps its root,
state, sockets and CNI directory in the folder given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path


def containerd_config(folder: Path, extra: str = "") -> str:
    """A containerd configuration keeping everything in ``folder``: root, state, the
    ``c.sock`` socket (and its ttrpc twin), opt; CNI configuration in ``folder/net.d``;
    no debug or metrics listener.  ``extra`` (TOML) goes at the top."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return extra + "\n".join(
        [
            "version = 2",
            f'root = "{folder}/root"',
            f'state = "{folder}/state"',
            "[grpc]",
            f'  address = "{folder}/c.sock"',
            "[ttrpc]",
            f'  address = "{folder}/c.sock.ttrpc"',
            "[debug]",
            '  address = ""',
            "[metrics]",
            '  address = ""',
            '[plugins."io.containerd.internal.v1.opt"]',
            f'  path = "{folder}/opt"',
            f"[{cri}.cni]",
            f'  conf_dir = "{folder}/net.d"',
            '  bin_dir = "/usr/lib/cni"',
            "",
        ]
    )


@contextlib.contextmanager
def own_containerd(folder: Path, extra: str = "") -> Iterator[str]:
    """Run ``containerd`` on :func:`containerd_config` (``folder`` short: socket paths are
    limited) until the block ends; yields its endpoint (``unix://<folder>/c.sock``) once
    the socket exists.  Its log is ``folder/containerd.log``."""
    import subprocess

    from nodehost.testing.wait import wait_for

    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.toml"
    config.write_text(containerd_config(folder, extra))
    with (folder / "containerd.log").open("wb") as log:
        process = subprocess.Popen(["containerd", "--config", str(config)], stderr=log)
    try:
        socket = folder / "c.sock"
        wait_for(lambda: socket.exists() or process.poll() is not None, what=f"{socket}")
        yield f"unix://{socket}"
    finally:
        process.terminate()
        process.wait(30)
