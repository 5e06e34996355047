"""Supervisor benchmark: nodehost's host against supervisord, circus and two floors, side by side.

    python bench/supervisor.py [--sizes 10,100] [--repeat 3] [--idle 10]

Run it with the interpreter of a venv where nodehost is installed (``pip
install .``, as users get it).  Each supervisor runs N copies of a
long-running child (``sleep <unique>``) and is measured from the outside, the
same way for all:

* **running**  launch of the supervisor -> all N children exec'd (its
  ``/proc/<pid>/task/*/children`` hold N processes with the child's command line);
* **CPU**      the supervisor's own CPU time (user + system of every thread alive
  then, from ``/proc/<pid>/task/*/schedstat``; a worker thread that already
  exited is not counted) at that moment: it moves less than wall time on a busy
  machine;
* **READY=1**  (nodehost and the floors) launch -> ``READY=1`` on a notify socket;
* **RSS**      the supervisor's peak resident set (``VmHWM``);
* **idle CPU** and **wake-ups/s** over ``--idle`` seconds once everything runs
  (user+system ticks of ``/proc/<pid>/stat``; voluntary+involuntary context
  switches of every thread, ``/proc/<pid>/task/*/status``);
* **restart**  ``kill -9`` of one child -> its replacement exec'd;
* **stop**     SIGTERM to the supervisor -> it exited and no child is left
  (repeated every 5 s if ignored; the SIGTERMs column says how many it took).

Then the **probe attempt** table (``--probe-rounds``; 0 skips it): the cost of
one readiness-probe attempt at each size N, without an owner (a plain
connect, the probe before readiness proved identity: the baseline) and with
one (connect, then find the listener through ``sock_diag`` and its inode
among the owner's open files) -- the *first* attempt on a listener (nothing
remembered about it) and the attempts *again* after it -- with the time the
worse of the two adds and its ratio to the baseline.
N listeners run in N forked children, so ``/proc/net/tcp`` holds N listeners
as on a node with N components; rows: a process component (its own child),
an in-loop task (a listener in this process, which also holds 2N pipe ends
like a host with N children) and a port held by a stranger (the holder found
once, then remembered).  Budget (issue 11): at most 2 ms added per attempt
at N=100.

The two floors are bench/launcher.py's ``asyncio`` (children watched through
pidfds in an asyncio loop, as nodehost's host does) and ``popen`` (plain
``subprocess.Popen`` and ``os.wait()``): they start, restart and stop the
children and do nothing else -- no logs, no state, no readiness probes --
so the distance to them is what nodehost's own bookkeeping costs.

Medians over ``--repeat`` runs (idle figures from the first run).  supervisord
and circus are installed into their own venv (``--venv``, default
``/tmp/nodehost-bench-venv``), created with pip on first use; configs are
``bench/supervisord.conf.in`` and ``bench/circus.ini.in``.  nodehost runs as
``python -m nodehost.testing.planhost`` with this interpreter (default
settings: restart backoff 20 ms, JSON logs to a file).  Budgets (issue 3):
N=100 ready <= 0.3 s, first restart <= 50 ms, stop <= 0.2 s, no idle wake-ups,
RSS <= 40 MiB.  Issue 30 (printed after the table): N=100 all running <= 1.5x the
asyncio floor, stop N=100 <= 0.05 s.  Every round runs each system once, in turn
(interleaved), so load hits them alike.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
POLL = 0.001
LIMIT = 60.0
#: bench/launcher.py's supervising modes, the floors.
FLOORS = ("asyncio", "popen")
#: Who sends READY=1 to $NOTIFY_SOCKET.
NOTIFYING = ("nodehost", *FLOORS)


# --- /proc ------------------------------------------------------------------------------


def children(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.update(int(p) for p in handle.read().split())
    except OSError:
        pass
    return found


def cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def running_children(pid: int, command: bytes) -> set[int]:
    return {child for child in children(pid) if cmdline(child) == command}


def wait_all_running(pid: int, command: bytes, n: int) -> float:
    """:func:`wait_until` ``pid`` has ``n`` children running ``command``.

    A child's command line is read until it shows ``command``, not again while
    the child stays: reading all N every millisecond took about 1.2 ms of CPU
    per look at N=100 -- most of a core taken from the supervisor being
    measured and its children on a 2-core machine.
    """
    seen: set[int] = set()

    def all_running() -> bool:
        current = children(pid)
        seen.intersection_update(current)
        seen.update(child for child in current - seen if cmdline(child) == command)
        return len(seen) >= n

    return wait_until(all_running)


def cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def context_switches(pid: int) -> int:
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/status") as handle:
            for line in handle:
                if "ctxt_switches:" in line:
                    total += int(line.split()[-1])
    return total


def cpu_seconds(pid: int) -> float:
    """CPU time ``pid``'s live threads have used so far (``schedstat``, in ns); threads
    that exited are not counted (``/proc/<pid>/stat`` has them, in 10 ms ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/schedstat") as handle:
            total += int(handle.read().split()[0])
    return total / 1e9


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def wait_until(predicate, limit: float = LIMIT) -> float:
    start = time.perf_counter()
    while not predicate():
        if time.perf_counter() - start > limit:
            raise TimeoutError("benchmark condition not reached")
        time.sleep(POLL)
    return time.perf_counter()


# --- the supervisors --------------------------------------------------------------------


@dataclass
class Launch:
    argv: list[str]
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))


class NotifyListener:
    """Records when READY=1 arrives (nodehost only)."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.ready_at: float | None = None
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while self.running:
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if b"READY=1" in data.split(b"\n") and self.ready_at is None:
                self.ready_at = time.perf_counter()

    def close(self) -> None:
        self.running = False
        self.thread.join(1)
        self.sock.close()


def nodehost_launch(workdir: Path, command: list[str], n: int) -> Launch:
    plan = {
        "state_dir": str(workdir / "state"),
        "components": [{"name": f"s{i:03d}", "argv": command} for i in range(n)],
    }
    (workdir / "plan.json").write_text(json.dumps(plan))
    argv = [sys.executable, "-m", "nodehost.testing.planhost", str(workdir / "plan.json")]
    env = dict(os.environ, NOTIFY_SOCKET=str(workdir / "notify.sock"))
    return Launch(argv, env)


def floor_launch(workdir: Path, command: list[str], n: int, mode: str) -> Launch:
    """bench/launcher.py in ``mode`` (``asyncio`` or ``popen``) on the same N children."""
    plan = {"components": [{"name": f"s{i:03d}", "argv": command} for i in range(n)]}
    (workdir / "plan.json").write_text(json.dumps(plan))
    argv = [sys.executable, str(HERE / "launcher.py"), mode, str(workdir / "plan.json")]
    return Launch(argv, dict(os.environ, NOTIFY_SOCKET=str(workdir / "notify.sock")))


def supervisord_launch(workdir: Path, command: list[str], n: int, venv: Path) -> Launch:
    (workdir / "childlogs").mkdir()
    template = (HERE / "supervisord.conf.in").read_text()
    config = workdir / "supervisord.conf"
    config.write_text(template.format(numprocs=n, workdir=workdir, command=" ".join(command)))
    return Launch([str(venv / "bin" / "supervisord"), "-c", str(config)])


def circus_launch(workdir: Path, command: list[str], n: int, venv: Path) -> Launch:
    template = (HERE / "circus.ini.in").read_text()
    config = workdir / "circus.ini"
    config.write_text(template.format(numprocs=n, workdir=workdir, command=" ".join(command)))
    return Launch([str(venv / "bin" / "circusd"), str(config)])


def ensure_venv(venv: Path) -> None:
    if (venv / "bin" / "supervisord").exists() and (venv / "bin" / "circusd").exists():
        return
    print(f"creating {venv} with supervisor and circus ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "pip"), "install", "-q", "supervisor", "circus"]
    subprocess.run(pip, check=True)


# --- one run ---------------------------------------------------------------------------


def measure(name: str, launch: Launch, workdir: Path, command: list[str], n: int, idle: float):
    expected = b"\0".join(c.encode() for c in command) + b"\0"
    notify = launch.env.get("NOTIFY_SOCKET") if name in NOTIFYING else None
    listener = NotifyListener(notify) if notify else None
    log = open(workdir / "supervisor.log", "wb")  # noqa: SIM115 -- closed below
    started = time.perf_counter()
    process = subprocess.Popen(launch.argv, env=launch.env, stdout=log, stderr=log)
    result: dict[str, float | None] = {}
    try:
        all_running = wait_all_running(process.pid, expected, n)
        result["running"] = all_running - started
        result["running_cpu"] = cpu_seconds(process.pid)
        if listener is not None:
            wait_until(lambda: listener.ready_at is not None)
            result["ready1"] = listener.ready_at - started
        if idle:
            time.sleep(1.0)
            ticks, switches = cpu_ticks(process.pid), context_switches(process.pid)
            time.sleep(idle)
            result["idle_cpu"] = (cpu_ticks(process.pid) - ticks) / CLOCK_TICKS / idle * 100
            result["wakeups"] = (context_switches(process.pid) - switches) / idle
        result["restart"] = restart_time(process.pid, expected)
        wait_all_running(process.pid, expected, n)
        result["rss"] = peak_rss_mib(process.pid)
        pids = running_children(process.pid, expected)
        stop_started = time.perf_counter()
        result["stop_signals"] = stop(process)
        stopped = wait_until(lambda: not any(os.path.exists(f"/proc/{p}") for p in pids))
        result["stop"] = stopped - stop_started
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in running_children(process.pid, expected):
            os.kill(pid, signal.SIGKILL)
        log.close()
        if listener is not None:
            listener.close()
    return result


def stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM the supervisor, again every 5 s if it ignores it; return how many were sent.

    Its exit is seen the moment it happens (its pidfd becomes readable):
    ``Popen.wait(timeout)`` polls at 1, 3, 7, 15, 31, 63 ms..., which rounded a
    stop up to the next of those instants (a 35 ms stop read as 63 ms).

    (circus 0.19 sometimes drops a SIGTERM that arrives while it runs another
    command: "arbiter is already running arbiter_stop command".)
    """
    pidfd = os.pidfd_open(process.pid)
    try:
        for sent in range(1, int(LIMIT / 5) + 1):
            process.send_signal(signal.SIGTERM)
            if select.select([pidfd], [], [], 5)[0]:
                process.wait()
                return sent
    finally:
        os.close(pidfd)
    raise TimeoutError("the supervisor did not stop")


def restart_time(supervisor: int, expected: bytes) -> float:
    before = running_children(supervisor, expected)
    victim = min(before)
    killed = time.perf_counter()
    os.kill(victim, signal.SIGKILL)
    replaced = wait_until(lambda: bool(running_children(supervisor, expected) - before))
    return replaced - killed


# --- probe attempts ----------------------------------------------------------------------

LISTENERS = """
import os, socket, sys
servers = [socket.socket() for _ in range(int(sys.argv[1]))]
for server in servers:
    server.bind(("127.0.0.1", 0))
    server.listen(128)
pids = []
for mine in servers:
    pid = os.fork()
    if pid == 0:
        for other in servers:
            if other is not mine:
                other.close()
        while True:
            mine.accept()[0].close()
    pids.append(pid)
ports = [server.getsockname()[1] for server in servers]
print(" ".join(f"{pid}:{port}" for pid, port in zip(pids, ports)), flush=True)
sys.stdin.read()
"""


def probe_attempt_rows(n: int, rounds: int) -> list[tuple[str, float, float, float]]:
    """``(row, baseline, first, again)`` ms per attempt; see :func:`render_probe_rows`."""
    import asyncio

    from nodehost.component import TcpProbe
    from nodehost.daemon.ownership import Owner
    from nodehost.daemon.probes import attempt

    helper = subprocess.Popen(
        [sys.executable, "-c", LISTENERS, str(n)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    pipes = [os.pipe() for _ in range(n)]
    own = socket.socket()
    own.bind(("127.0.0.1", 0))
    own.listen(128)
    stranger = subprocess.Popen(["sleep", "3600"])
    try:
        children = [tuple(map(int, item.split(":"))) for item in helper.stdout.readline().split()]

        async def accept_forever() -> None:
            loop = asyncio.get_running_loop()
            own.setblocking(False)
            while True:
                (await loop.sock_accept(own))[0].close()

        async def timed(targets: list[tuple[int, int]]) -> tuple[float, float, float]:
            """Median ms of an attempt without the owner, with it the first time (nothing
            remembered about the socket) and with it again; interleaved, so load hits all."""
            from nodehost.daemon import ownership

            plain, first, again = [], [], []
            for port, owner in targets:
                ownership._seen_at.clear()
                probe = TcpProbe(host="127.0.0.1", port=port)
                for times, who in ((plain, None), (first, Owner(owner))):
                    started = time.perf_counter()
                    await attempt(probe, who)
                    times.append(time.perf_counter() - started)
            for _ in range(rounds):
                for port, owner in targets:
                    probe = TcpProbe(host="127.0.0.1", port=port)
                    for times, who in ((plain, None), (again, Owner(owner))):
                        started = time.perf_counter()
                        await attempt(probe, who)
                        times.append(time.perf_counter() - started)
            return tuple(statistics.median(times) * 1000 for times in (plain, first, again))

        async def run() -> list[tuple[str, float, float, float]]:
            server = asyncio.create_task(accept_forever())
            own_port = own.getsockname()[1]
            rows = []
            for name, targets in (
                ("process component", [(port, pid) for pid, port in children]),
                ("in-loop task", [(own_port, os.getpid())] * n),
                ("port held by a stranger", [(port, stranger.pid) for _, port in children]),
            ):
                rows.append((name, *await timed(targets)))
            server.cancel()
            return rows

        return asyncio.run(run())
    finally:
        helper.kill()
        helper.wait()
        stranger.kill()
        stranger.wait()
        own.close()
        for read_end, write_end in pipes:
            os.close(read_end)
            os.close(write_end)


def render_probe_rows(rows: list[tuple[int, str, float, float, float]]) -> str:
    header = ["probe attempt", "N", "baseline ms", "first ms", "again ms", "added ms", "ratio"]
    lines = [header]
    for n, name, baseline, first, again in rows:
        worst = max(first, again)
        lines.append(
            [
                name,
                str(n),
                f"{baseline:.3f}",
                f"{first:.3f}",
                f"{again:.3f}",
                f"{worst - baseline:.3f}",
                f"{worst / baseline:.2f}",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True))
        for line in lines
    )


# --- the table -------------------------------------------------------------------------


COLUMNS = (
    ("running", "running s", "{:.3f}"),
    ("running_cpu", "CPU s", "{:.3f}"),
    ("ready1", "READY=1 s", "{:.3f}"),
    ("restart", "restart ms", "{:.1f}"),
    ("stop", "stop s", "{:.3f}"),
    ("rss", "RSS MiB", "{:.1f}"),
    ("idle_cpu", "idle CPU %", "{:.2f}"),
    ("wakeups", "wake-ups/s", "{:.1f}"),
    ("stop_signals", "SIGTERMs", "{:.0f}"),
)


def median_row(results: list[dict]) -> dict[str, float | None]:
    row: dict[str, float | None] = {}
    for key, _, _ in COLUMNS:
        values = [r[key] for r in results if r.get(key) is not None]
        value = statistics.median(values) if values else None
        row[key] = value * 1000 if key == "restart" and value is not None else value
    return row


def render(rows: list[tuple[str, int, dict]]) -> str:
    header = ["supervisor", "N", *(title for _, title, _ in COLUMNS)]
    lines = [header]
    for name, n, row in rows:
        cells = [name, str(n)]
        for key, _, fmt in COLUMNS:
            cells.append("-" if row.get(key) is None else fmt.format(row[key]))
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) for line in lines
    )


#: Issue 30's budgets: (column, limit, True if the limit is a ratio to the asyncio floor).
BUDGETS = (("running", 1.5, True), ("stop", 0.05, False))


def render_budgets(rows: list[tuple[str, int, dict]]) -> str:
    """nodehost's N=100 row against the asyncio floor and issue 30's budgets."""
    by_name = {(name, n): row for name, n, row in rows}
    ours, floor = by_name.get(("nodehost", 100)), by_name.get(("asyncio", 100))
    if ours is None or floor is None:
        return "\n(budgets: run nodehost and asyncio at N=100 to judge them)"
    lines = ["", "N=100      nodehost  asyncio floor  ratio  budget"]
    for key, limit, is_ratio in BUDGETS:
        if ours.get(key) is None or not floor.get(key):
            continue
        ratio = ours[key] / floor[key]
        judged = ratio if is_ratio else ours[key]
        budget = f"{limit:.2f}x" if is_ratio else f"{limit:.3f} s"
        verdict = "met" if judged <= limit else "MISSED"
        line = f"{key:9} {ours[key]:8.3f} s {floor[key]:10.3f} s {ratio:5.2f}x  {budget}  {verdict}"
        lines.append(line)
        if key == "running" and ours.get("running_cpu") and floor.get("running_cpu"):
            cpu_ratio = ours["running_cpu"] / floor["running_cpu"]
            lines.append(
                f"{'CPU':9} {ours['running_cpu']:8.3f} s {floor['running_cpu']:10.3f} s "
                f"{cpu_ratio:5.2f}x  (the supervisor's own, until all run)"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--idle", type=float, default=10.0, help="idle window in seconds (0: skip)")
    parser.add_argument("--venv", default="/tmp/nodehost-bench-venv")
    parser.add_argument("--only", default="nodehost,asyncio,popen,supervisord,circus")
    parser.add_argument("--json", metavar="FILE", help="also write every measurement as JSON")
    parser.add_argument(
        "--probe-rounds", type=int, default=20, help="probe attempts per listener (0: skip)"
    )
    args = parser.parse_args()
    venv = Path(args.venv)
    systems = args.only.split(",")
    if {"supervisord", "circus"} & set(systems):
        ensure_venv(venv)
    rows, raw = [], []
    unique = 864000 + os.getpid() % 1000 * 100
    for n in (int(size) for size in args.sizes.split(",")):
        results: dict[str, list[dict]] = {name: [] for name in systems}
        for attempt in range(args.repeat):  # interleaved: load hits every system alike
            for name in systems:
                unique += 1
                command = ["sleep", str(unique)]
                with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as folder:
                    workdir = Path(folder)
                    if name == "nodehost":
                        launch = nodehost_launch(workdir, command, n)
                    elif name in FLOORS:
                        launch = floor_launch(workdir, command, n, name)
                    elif name == "supervisord":
                        launch = supervisord_launch(workdir, command, n, venv)
                    else:
                        launch = circus_launch(workdir, command, n, venv)
                    idle = args.idle if attempt == 0 else 0.0
                    result = measure(name, launch, workdir, command, n, idle)
                results[name].append(result)
                raw.append({"supervisor": name, "n": n, **result})
                print(f"{name} N={n} run {attempt + 1}: {result}", file=sys.stderr)
        rows.extend((name, n, median_row(results[name])) for name in systems)
    print(render(rows))
    print(render_budgets(rows))
    if args.probe_rounds:
        probe_rows = [
            (n, *row)
            for n in (int(size) for size in args.sizes.split(","))
            for row in probe_attempt_rows(n, args.probe_rounds)
        ]
        print()
        print(render_probe_rows(probe_rows))
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"\nload average during the run (1, 5, 15 min): {load} on {os.cpu_count()} CPUs")
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=2))


if __name__ == "__main__":
    main()
