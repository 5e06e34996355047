"""The ``images`` component: image archives imported into containerd before the kubelet starts.

For air-gapped nodes.  ``containerRuntime.imageArchives`` names a folder
(default ``<state-dir>/images``) of image archives -- ``docker save`` output or
OCI image layout tarballs, ``*.tar`` -- and once the managed containerd answers
(the component starts after ``runtime`` and before ``kubelet``; it makes the
default folder):

1. every archive not imported before is imported into containerd's ``k8s.io``
   namespace (the kubelet's, through CRI) with ``ctr images import``, and each
   image it holds is labelled ``io.cri-containerd.pinned=pinned`` so that the
   kubelet's image garbage collection keeps it.  Archives are remembered by the
   SHA-256 of their content in ``<state-dir>/images/imported.json`` (the
   ``images`` component's folder): an archive is imported once, a changed one
   again;
2. the pod infrastructure image (``imageConfig.format`` expanded for ``pod``)
   must then be in containerd -- unless the kubelet is nodehost's stand-in
   (``--standins``), which runs no pods -- or be pullable (``ctr images pull`` with the
   registry hosts folder of :mod:`.registries`).  If it is neither, the
   component is not ready -- and the kubelet does not start -- with one line
   naming the image and the folder to put its archive in; it looks again (the
   folder too) with a growing delay, so dropping the archive in is enough.

An archive that does not import is a problem of its own (named, with ctr's
message) and is tried again on the next look.  Ready once both steps are done;
then it idles until stopped.  Meanwhile, from its start, each registry mirror
(:mod:`.registries`) is asked for ``/v2/`` once: ``/status`` shows the answers
(``details.mirrors``) and a mirror that does not answer is a warning line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodehost.backoff import Backoff
from nodehost.frozen import frozen
from nodehost.plugins.runtime.registries import Registries, probe_mirrors

if TYPE_CHECKING:  # pragma: no cover
    import asyncio

NAMESPACE = "k8s.io"
PIN_LABEL = "io.cri-containerd.pinned=pinned"
RECORD = "imported.json"
ARCHIVE_SUFFIXES = (".tar",)
#: Between two looks while not ready.
RETRY = Backoff(initial=2.0, maximum=30.0, jitter=0.1)
#: How long one ctr call may take (an import of a large archive included).
CTR_TIMEOUT = 600.0
#: How long the pull of the pod infrastructure image may take.
PULL_TIMEOUT = 60.0
_UNPACKING = re.compile(r"^unpacking (\S+) \(")


@frozen
class ImportTask:
    """The coroutine of the module docstring, as a value (equal settings, equal task)."""

    socket: str
    archives: str
    record: str
    pod_image: str
    hosts_dir: str | None = None
    make_folder: bool = False
    registries: Registries = field(default_factory=Registries)
    pod_image_required: bool = True

    async def __call__(self, context: Any) -> None:
        import asyncio  # the host's loop runs it; planning (config validate) needs none

        if self.make_folder:  # the default folder, under the state directory: there to be seen
            await asyncio.to_thread(os.makedirs, self.archives, 0o755, True)
        mirrors = asyncio.create_task(self.mirror_answers(context))
        try:
            attempt = 0
            while True:
                problems = await self.look(context)
                context.report(self.details(mirrors), problems)
                if not problems:
                    break
                context.status(problems[0])
                attempt += 1
                await asyncio.sleep(RETRY.delay(attempt))
            context.status(f"images ready; pod infrastructure image {self.pod_image} present")
            context.ready()
            await mirrors
            context.report(self.details(mirrors), [])
            await asyncio.Event().wait()  # ready for good; stop cancels
        finally:
            mirrors.cancel()

    def details(self, mirrors: asyncio.Task[list[dict[str, Any]]]) -> dict[str, Any]:
        """``/status`` details: the folder, the pod image, how each mirror answered (once known)."""
        found: dict[str, Any] = {"archives": self.archives, "pod_image": self.pod_image}
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

    async def look(self, context: Any) -> list[str]:
        """Import what is new, then check the pod image; the problems left (none: ready)."""
        problems = await self.import_new(context)
        if self.pod_image_required and not await self.pod_image_available(context):
            problems.append(
                f"pod infrastructure image {self.pod_image} is not in containerd and cannot be "
                f"pulled: put an archive holding it (docker save or OCI layout, *.tar) in "
                f"{self.archives}"
            )
        return problems

    async def import_new(self, context: Any) -> list[str]:
        """Import each archive whose digest is not in the record; problems of those that fail."""
        import asyncio

        record = read_record(self.record)
        problems = []
        for path in archives_in(self.archives):
            digest = await asyncio.to_thread(file_digest, path)
            if digest in record:
                continue
            done, output = await self.ctr("images", "import", path)
            if not done:
                problems.append(f"cannot import {path}: {output}")
                continue
            names = imported_names(output)
            for name in names:
                await self.ctr("images", "label", name, PIN_LABEL)
            record[digest] = {"file": os.path.basename(path), "images": names}
            write_record(self.record, record)
            context.log.info("image archive imported", archive=path, images=names)
        return problems

    async def pod_image_available(self, context: Any) -> bool:
        """Whether containerd has the pod image, or pulls it now."""
        done, output = await self.ctr("images", "ls", "-q")
        if done and normalized(self.pod_image) in output.split():
            return True
        hosts = ["--hosts-dir", self.hosts_dir] if self.hosts_dir else []
        pulled, output = await self.ctr(
            "images", "pull", *hosts, self.pod_image, timeout=PULL_TIMEOUT
        )
        if not pulled:
            context.log.debug("pod infrastructure image not pulled", detail=output[-500:])
        return pulled

    async def ctr(self, *args: str, timeout: float = CTR_TIMEOUT) -> tuple[bool, str]:
        """Run ``ctr`` against the socket in ``k8s.io``: (exit 0, its output)."""
        import asyncio

        argv = ["ctr", "--address", self.socket, "--namespace", NAMESPACE, *args]
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
            )
        except OSError as error:
            return False, f"cannot run ctr: {error.strerror or error}"
        try:
            out, _ = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            process.kill()
            await process.wait()
            return False, f"ctr {' '.join(args[:2])} did not finish in {timeout:g}s"
        return process.returncode == 0, out.decode(errors="replace").strip()


def normalized(image: str) -> str:
    """``image`` as containerd names it: ``nginx`` is ``docker.io/library/nginx:latest``."""
    first, slash, _ = image.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"):
        image = "docker.io/" + (image if slash else f"library/{image}")
    last = image.rsplit("/", 1)[-1]
    return image if ":" in last or "@" in last else f"{image}:latest"


def archives_in(folder: str) -> list[str]:
    """The archive files directly in ``folder``, sorted (none when it does not exist)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [
        os.path.join(folder, name)
        for name in names
        if name.endswith(ARCHIVE_SUFFIXES) and os.path.isfile(os.path.join(folder, name))
    ]


def file_digest(path: str) -> str:
    """``sha256:<hex>`` of the file's content."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def imported_names(output: str) -> list[str]:
    """The image names ``ctr images import`` reports (``unpacking NAME (sha256:...)``)."""
    return [match.group(1) for line in output.splitlines() if (match := _UNPACKING.match(line))]


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
    from nodehost.pki.atomic import write_atomic

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(Path(path), json.dumps(record, indent=2, sort_keys=True).encode(), 0o644)


def notes(task: ImportTask) -> tuple[str, ...]:
    """Plan notes: where archives are read from, where they are remembered, the pod image."""
    return (
        f"imports image archives (*.tar) from {task.archives} into containerd ({NAMESPACE}), "
        f"pinned; remembered in {task.record}",
        f"needs the pod infrastructure image {task.pod_image} (present, pullable or in an archive)"
        if task.pod_image_required
        else f"does not need the pod infrastructure image {task.pod_image}: the kubelet is a "
        "stand-in",
    )
