"""The ``mirror-rewrite`` component: a loopback pull-through proxy that rewrites repository names.

Stock containerd (1.6, 1.7) has no ``rewrite`` for registry mirrors (k3s
patches its own).  When some ``containerRuntime.registries.mirrors.HOST`` has a
``rewrite`` (:mod:`.rewrite`), this component listens on ``127.0.0.1`` (a port
the kernel picks) and writes that registry's ``hosts.toml`` in containerd's
registry hosts folder (mode 0600: the path holds the proxy's secret) with one
endpoint, ``http://127.0.0.1:PORT/TOKEN/HOST/v2`` (``override_path``), and the
registry itself as containerd's ``server``: pulls
containerd makes there keep their names (k3s applies rewrites to mirror
endpoints only).  It starts before ``runtime``; containerd reads ``hosts.toml``
on each pull, so a restart of the proxy on another port needs no restart of
containerd.  Ready once the files are written; ``/status`` shows where it
listens.  The proxy itself is :mod:`.mirrorserver` (imported when it runs:
planning needs neither asyncio nor h11).

The component is in the default selection and inactive when no mirror has a
rewrite (or the runtime is external); a rewrite configured while it is not
selected is a validation problem (the pulls would silently keep their names).
"""

from __future__ import annotations

from typing import Any

from nodehost.frozen import frozen
from nodehost.plugins.runtime.registries import Registries


@frozen
class MirrorProxyTask:
    """The coroutine of the module docstring, as a value (equal settings, equal task)."""

    registries: Registries
    runtime_dir: str

    async def __call__(self, context: Any) -> None:
        import secrets

        from nodehost.plugins.runtime.mirrorserver import MirrorProxy

        token = secrets.token_urlsafe(24)  # a new one for each run of the proxy
        await MirrorProxy(self.registries, self.runtime_dir, token).run(context)


def through_url(port: int, host: str, token: str) -> str:
    """The endpoint containerd is given for ``host``: the proxy, with its secret and the
    host in the path."""
    return f"http://127.0.0.1:{port}/{token}/{host}/v2"
