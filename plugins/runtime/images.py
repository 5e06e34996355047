"""The ``images`` component: image archives imported into containerd before the kubelet starts.

For air-gapped nodes.  ``containerRuntime.imageArchives`` names a folder
(default ``<state-dir>/images``) of image archives -- ``docker save`` output or
OCI image layout tarballs: ``*.tar``, or compressed ``*.tar.gz``/``*.tgz``
(gzip) and ``*.tar.zst`` (zstd), decompressed in a stream into ``ctr images
import -`` (containerd 1.6's ``ctr`` reads uncompressed tar only) -- and once
the managed containerd answers (the component starts after ``runtime`` and
before ``kubelet``; it makes the default folder):

1. every archive not imported before is imported into containerd's ``k8s.io``
   namespace (the kubelet's, through CRI) with ``ctr images import``, and each
   image it holds is labelled ``io.cri-containerd.pinned=pinned`` so that the
   kubelet's image garbage collection keeps it.  Archives are remembered by the
   SHA-256 of their content in ``<state-dir>/images/imported.json`` (the
   ``images`` component's folder): an archive is imported once, a changed one
   again;
2. the pod infrastructure image (``imageConfig.format`` expanded for ``pod``)
   must then be in containerd (CRI ``ImageStatus``) -- unless the kubelet is
   nodehost's stand-in (``--standins``), which runs no pods -- or be pullable:
   CRI ``PullImage`` as the kubelet asks it, through the runtime's registry
   configuration (:mod:`.registries`: mirrors, TLS, each host's credentials),
   with the ``configs`` credentials of an unmirrored registry as its
   ``AuthConfig`` (:func:`pull_auth`).  If it is neither, the component is not
   ready -- and the kubelet does not start -- with one line naming the image
   and the folder to put its archive in; it looks again (the folder too) with
   a growing delay, or at once when a file is completed in the folder.

The folder is watched (:class:`nodehost.folderwatch.FolderWatch`, inotify; no
polling) from the start: once ready, each archive completed in it (written
and closed, or moved in) is imported with the same log line
(``image archive imported``), no restart needed.  An archive that does not
import is one warning line naming it with the reason (``image archive does
not import``; ``/status`` lists it in ``details.failed_archives``); the others
still import, and it is not tried again until its content changes.  It is not
a readiness problem: the pod image check says whether what is missing
matters.  Meanwhile, from its start, each registry mirror (:mod:`.registries`)
is asked for ``/v2/`` once: ``/status`` shows the answers
(``details.mirrors``) and a mirror that does not answer is a warning line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from nodehost.backoff import Backoff
from nodehost.frozen import frozen
from nodehost.plugins.runtime.registries import Registries, probe_mirrors, upstream

if TYPE_CHECKING:  # pragma: no cover
    import asyncio

    from nodehost.daemon.cri import CriAuth
    from nodehost.folderwatch import FolderWatch

NAMESPACE = "k8s.io"
PIN_LABEL = "io.cri-containerd.pinned=pinned"
RECORD = "imported.json"
#: Compressed archive suffixes and the command that decompresses one to its output.
DECOMPRESSORS = {
    ".tar.gz": ("gzip", "-dc"),
    ".tgz": ("gzip", "-dc"),
    ".tar.zst": ("zstd", "-dc"),
}
ARCHIVE_SUFFIXES = (".tar", *DECOMPRESSORS)
ARCHIVE_KINDS = ", ".join(f"*{suffix}" for suffix in ARCHIVE_SUFFIXES)
#: Between two looks while not ready.
RETRY = Backoff(initial=2.0, maximum=30.0, jitter=0.1)
#: How long one ctr call may take (an import of a large archive included).
CTR_TIMEOUT = 600.0
#: How long the pull of the pod infrastructure image may take.
PULL_TIMEOUT = 60.0
#: A line of ``ctr images import``'s output; compiled on first use (``re``'s cache), not at import.
_UNPACKING = r"^unpacking (\S+) \("


@frozen
class ImportTask:
    """The coroutine of the module docstring, as a value (equal settings, equal task)."""

    socket: str
    archives: str
    record: str
    pod_image: str
    make_folder: bool = False
    registries: Registries = field(default_factory=Registries)
    pod_image_required: bool = True

    async def __call__(self, context: Any) -> None:
        import asyncio  # the host's loop runs it; planning (config validate) needs none

        if self.make_folder:  # the default folder, under the state directory: there to be seen
            await asyncio.to_thread(os.makedirs, self.archives, 0o755, True)
        watch = self.watch(context)  # before the first look: nothing dropped in is missed
        mirrors = asyncio.create_task(self.mirror_answers(context))
        failed: dict[str, str] = {}
        try:
            attempt = 0
            while problems := await self.look(context, failed):
                context.report(self.details(mirrors, failed), problems)
                context.status(problems[0])
                attempt += 1
                await self.pause(watch, RETRY.delay(attempt))
            context.report(self.details(mirrors, failed), [])
            context.status(f"images ready; pod infrastructure image {self.pod_image} present")
            context.ready()
            await mirrors
            context.report(self.details(mirrors, failed), [])
            while watch is not None:  # ready for good; archives dropped in are imported
                names = await self.next_change(context, watch)
                await self.import_new(context, failed, names or None)
                context.report(self.details(mirrors, failed), [])
            await asyncio.Event().wait()  # stop cancels
        finally:
            mirrors.cancel()
            if watch is not None:
                watch.close()

    def watch(self, context: Any) -> FolderWatch | None:
        """A watch of the archive folder; None (with a warning) when it cannot be watched."""
        from nodehost.folderwatch import FolderWatch  # asyncio and ctypes: at run time only

        try:
            return FolderWatch(self.archives)
        except OSError as error:
            context.log.warning(
                "image archive folder not watched: archives put there later are imported at "
                "the next start",
                folder=self.archives,
                error=error.strerror,
            )
            return None

    @staticmethod
    async def pause(watch: FolderWatch | None, delay: float) -> None:
        """Wait ``delay`` seconds, or less when a file completes in the folder."""
        import asyncio

        from nodehost.folderwatch import FolderGone

        try:
            async with asyncio.timeout(delay):
                await (watch.changed() if watch else asyncio.Event().wait())
        except (TimeoutError, FolderGone):
            return

    async def next_change(self, context: Any, watch: FolderWatch) -> set[str]:
        """The names completed in the folder (empty: look at all); waits forever once the
        folder is gone, saying so."""
        import asyncio

        from nodehost.folderwatch import FolderGone

        try:
            return await watch.changed()
        except FolderGone:
            context.log.warning("image archive folder went away; no longer watched",
                                folder=self.archives)  # fmt: skip
            await asyncio.Event().wait()
            raise

    def details(
        self, mirrors: asyncio.Task[list[dict[str, Any]]], failed: dict[str, str]
    ) -> dict[str, Any]:
        """``/status`` details: the folder, the pod image, archives that did not import, how
        each mirror answered (once known)."""
        found: dict[str, Any] = {"archives": self.archives, "pod_image": self.pod_image}
        if failed:
            found["failed_archives"] = sorted(set(failed.values()))
        if mirrors.done() and not mirrors.cancelled() and mirrors.exception() is None:
            found["mirrors"] = mirrors.result()
        return found

    async def mirror_answers(self, context: Any) -> list[dict[str, Any]]:
        """Ask each registry mirror for ``/v2/`` (:mod:`.registries`); a warning per silent one."""
        import asyncio

        answers = await asyncio.to_thread(probe_mirrors, self.registries)
        for answer in answers:
            if not answer.ok:
                context.log.warning(
                    "registry mirror does not answer",
                    registry=answer.registry,
                    endpoint=answer.endpoint,
                    detail=answer.detail,
                )
        return [dataclasses.asdict(answer) for answer in answers]

    async def look(self, context: Any, failed: dict[str, str]) -> list[str]:
        """Import what is new, then check the pod image; the problems left (none: ready)."""
        await self.import_new(context, failed)
        if self.pod_image_required and not await self.pod_image_available(context):
            return [
                f"pod infrastructure image {self.pod_image} is not in containerd and cannot be "
                f"pulled: put an archive holding it (docker save or OCI layout; "
                f"{ARCHIVE_KINDS}) in {self.archives}"
            ]
        return []

    async def import_new(
        self, context: Any, failed: dict[str, str], names: set[str] | None = None
    ) -> None:
        """Import each archive (of ``names`` only, when given) whose digest is neither in the
        record nor in ``failed``; one warning per archive that does not import, remembered
        in ``failed`` (digest -> path) so that it is tried again only once it changes."""
        import asyncio

        record = read_record(self.record)
        for path in archives_in(self.archives, names):
            try:
                digest = await asyncio.to_thread(file_digest, path)
            except OSError:  # gone again, or unreadable: the next event or look says so
                continue
            if digest in record or digest in failed:
                continue
            done, output = await self.import_archive(context, path)
            if not done:
                failed[digest] = path
                context.log.warning("image archive does not import", archive=path, error=output)
                continue
            names_imported = imported_names(output)
            for name in names_imported:
                await self.ctr(context, "images", "label", name, PIN_LABEL)
            record[digest] = {"file": os.path.basename(path), "images": names_imported}
            write_record(self.record, record)
            context.log.info("image archive imported", archive=path, images=names_imported)

    async def import_archive(self, context: Any, path: str) -> tuple[bool, str]:
        """``ctr images import`` of ``path``; a compressed one through its decompressor."""
        decompressor = decompressor_of(path)
        if decompressor is None:
            return await self.ctr(context, "images", "import", path)
        return await self.ctr(context, "images", "import", "-", source=(*decompressor, path))

    async def pod_image_available(self, context: Any) -> bool:
        """Whether containerd has the pod image, or pulls it now through CRI (as the kubelet
        would: mirrors and credentials of the runtime's configuration, :func:`pull_auth`)."""
        from nodehost.daemon.cri import image_present, pull_image
        from nodehost.daemon.grpchealth import HealthCheckError

        endpoint = f"unix://{self.socket}"
        try:
            if await image_present(endpoint, self.pod_image):
                return True
            auth = pull_auth(self.registries, self.pod_image)
            await pull_image(endpoint, self.pod_image, auth, PULL_TIMEOUT)
        except (OSError, TimeoutError, HealthCheckError) as error:
            context.log.debug("pod infrastructure image not pulled", detail=str(error)[-500:])
            return False
        return True

    async def ctr(
        self, context: Any, *args: str, timeout: float = CTR_TIMEOUT, source: tuple[str, ...] = ()
    ) -> tuple[bool, str]:
        """Run ``ctr`` against the socket in ``k8s.io`` (through the host,
        ``context.run_program``): (exit 0, its output).  ``source``: a command whose output
        is ctr's standard input (a decompressor); when ctr fails, the source's own message
        (``gzip: stdin: not in gzip format``) is added to ctr's."""
        import asyncio

        argv = ["ctr", "--address", self.socket, "--namespace", NAMESPACE, *args]
        if not source:
            return _outcome(argv, await _run(context, argv, timeout))
        pipe_out, pipe_in = os.pipe2(os.O_CLOEXEC)  # each end handed to its program
        fed, imported = await asyncio.gather(
            _run(context, source, timeout, stdout=pipe_in),
            _run(context, argv, timeout, stdin=pipe_out),
        )
        done, output = _outcome(argv, imported)
        if done or isinstance(imported, str):  # a feeder cut off after the archive's end is fine
            return done, output
        if isinstance(fed, str) or not fed.ok:
            detail = fed if isinstance(fed, str) else fed.output or f"exit {fed.returncode}"
            return False, f"{output}; {detail}"
        return False, output


async def _run(context: Any, argv: Sequence[str], timeout: float, **fds: int) -> Any:
    """``context.run_program`` of ``argv``; a string saying why when it cannot start."""
    try:
        return await context.run_program(argv, timeout=timeout, **fds)
    except OSError as error:
        return f"cannot run {os.path.basename(argv[0])}: {error.strerror or error}"


def _outcome(argv: Sequence[str], result: Any) -> tuple[bool, str]:
    """(ran and exited 0, what to say) of a :func:`_run` result."""
    if isinstance(result, str):
        return False, result
    if result.returncode is None:
        return False, f"{' '.join(argv[5:7])} did not finish in time"
    return result.ok, result.output


def pull_auth(registries: Registries, image: str) -> CriAuth | None:
    """The CRI ``AuthConfig`` for pulling ``image``: the ``configs`` credentials of its
    registry, limited to that host, when the registry is not mirrored.

    A mirrored registry gets none: containerd then uses each host's credentials
    from its own configuration (an ``AuthConfig`` would stand for every host it
    tries, the mirrors' included).
    """
    from nodehost.daemon.cri import CriAuth

    host = normalized(image).split("/", 1)[0]
    if host in dict(registries.mirrors):
        return None
    auth = dict(registries.auth).get(host)
    if auth is None:
        return None
    return CriAuth(
        server_address=upstream(host),  # a URL: containerd compares its host (ParseAuth)
        username=auth.username or "",
        password=auth.password or "",
        auth=auth.auth or "",
        identity_token=auth.identitytoken or "",
    )


def normalized(image: str) -> str:
    """``image`` as containerd names it: ``nginx`` is ``docker.io/library/nginx:latest``."""
    first, slash, _ = image.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"):
        image = "docker.io/" + (image if slash else f"library/{image}")
    last = image.rsplit("/", 1)[-1]
    return image if ":" in last or "@" in last else f"{image}:latest"


def archives_in(folder: str, names: set[str] | None = None) -> list[str]:
    """The archive files directly in ``folder`` (those of ``names`` only, when given),
    sorted; none when it does not exist."""
    try:
        found = sorted(os.listdir(folder) if names is None else names)
    except OSError:
        return []
    return [
        os.path.join(folder, name)
        for name in found
        if name.endswith(ARCHIVE_SUFFIXES) and os.path.isfile(os.path.join(folder, name))
    ]


def decompressor_of(path: str) -> tuple[str, ...] | None:
    """The command writing ``path`` decompressed to its output; None for a plain ``.tar``
    (``ctr images import`` of containerd 1.6 and 1.7 reads only uncompressed tar)."""
    for suffix, command in DECOMPRESSORS.items():
        if path.endswith(suffix):
            return command
    return None


def file_digest(path: str) -> str:
    """``sha256:<hex>`` of the file's content."""
    import hashlib  # OpenSSL's digests: when an archive is imported, not when one is planned

    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def imported_names(output: str) -> list[str]:
    """The image names ``ctr images import`` reports (``unpacking NAME (sha256:...)``)."""
    return [match.group(1) for line in output.splitlines() if (match := re.match(_UNPACKING, line))]


def read_record(path: str) -> dict[str, Any]:
    """The archives imported so far, by digest; empty when there is no (readable) record."""
    from nodehost.config.jsonsafe import parse_json
    from nodehost.fileread import CONFIG_LIMIT, read_text

    try:
        data = parse_json(read_text(path, CONFIG_LIMIT), CONFIG_LIMIT)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_record(path: str, record: dict[str, Any]) -> None:
    from pathlib import Path

    from nodehost.pki.atomic import write_atomic

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(Path(path), json.dumps(record, indent=2, sort_keys=True).encode(), 0o644)


def notes(task: ImportTask) -> tuple[str, ...]:
    """Plan notes: where archives are read from, where they are remembered, the pod image."""
    return (
        f"imports image archives ({ARCHIVE_KINDS}) from {task.archives} into containerd "
        f"({NAMESPACE}), pinned, and those put there while it runs; remembered in {task.record}",
        f"needs the pod infrastructure image {task.pod_image} (present, pullable or in an archive)"
        if task.pod_image_required
        else f"does not need the pod infrastructure image {task.pod_image}: the kubelet is a "
        "stand-in",
    )
