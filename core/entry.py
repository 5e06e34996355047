"""The ``nodehost`` console script: answers the cheapest questions before importing click.

``nodehost --help`` and ``nodehost version`` are the commands people run most
often by hand, and importing click alone costs several times the interpreter's
own start-up.  So the root help and the version are rendered here, from the
same :data:`COMMANDS` table and :data:`ROOT_HELP` text the click group uses
(:mod:`nodehost.cli` renders its root help with :func:`root_help` too, so both
paths print the same text); everything else goes to :func:`nodehost.cli.main`.
"""

from __future__ import annotations

import os
import sys

from nodehost import __version__

#: command name -> (module:attribute, one-line help shown by ``--help``).
COMMANDS: dict[str, tuple[str, str]] = {
    "start": ("nodehost.cli.start:start", "Resolve and validate the node config, then run it."),
    "check": ("nodehost.cli.check:check", "Check that this host can run the node's components."),
    "config": ("nodehost.cli.config:config", "Validate, show, create or describe a NodeConfig."),
    "components": ("nodehost.cli.inventory:components", "List the components nodehost can run."),
    "plugins": ("nodehost.cli.inventory:plugins", "List plugins: built-in, installed, failed."),
    "ca": ("nodehost.cli.ca:ca", "Create a signer CA for node certificates."),
    "status": ("nodehost.cli.status:status", "Show the state of a running nodehost."),
    "network": (
        "nodehost.cli.network:network",
        "List network providers, check the pod network, remove what nodehost made.",
    ),
    "teardown": (
        "nodehost.cli.teardown:teardown",
        "End everything nodehost started for a state directory, containers included.",
    ),
    "debug": ("nodehost.cli.debug:debug", "Collect what a maintainer needs (debug bundle)."),
    "install": (
        "nodehost.cli.install:install",
        "Install nodehost as a systemd service started with start's flags.",
    ),
    "uninstall": (
        "nodehost.cli.install:uninstall",
        "Stop and remove the nodehost service and tear the node down.",
    ),
    "plugin": ("nodehost.cli.plugin:plugin", "Write a new plugin package whose tests pass."),
    "version": (
        "nodehost.cli.version:version",
        "Print nodehost's version (--config: and its programs').",
    ),
}

ROOT_HELP = """\
nodehost brings up a Kubernetes node and keeps it up.

It reads an OpenShift Origin v1 NodeConfig (or generates one), validates it,
then starts, watches and stops the node's components: kubelet, sdn, proxy,
dns, bootstrap, runtime (containerd), localcluster and apilb (the API server
load balancer), each provided by a plugin ('nodehost components' lists them
with any a plugin adds).

Exit codes: 0 success, 1 runtime failure, 2 usage error, 255 invalid config."""

ROOT_OPTIONS = (
    ("--version", "Show the version and exit."),
    ("-h, --help", "Show this message and exit."),
)

HELP_FLAGS = ("-h", "--help")


def version_line() -> str:
    return f"nodehost {__version__}"


def root_help() -> str:
    """The root ``--help`` text."""

    def rows(pairs: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> list[str]:
        width = max(len(name) for name, _ in pairs)
        return [f"  {name.ljust(width)}  {text}" for name, text in pairs]

    description = "\n".join(f"  {line}" if line else "" for line in ROOT_HELP.splitlines())
    commands = sorted((name, text) for name, (_, text) in COMMANDS.items())
    return "\n".join(
        [
            "Usage: nodehost [OPTIONS] COMMAND [ARGS]...",
            "",
            description,
            "",
            "Options:",
            *rows(ROOT_OPTIONS),
            "",
            "Commands:",
            *rows(commands),
        ]
    )


def main(argv: list[str] | None = None) -> None:
    """Answer ``--help``/``-h``/``--version``/``version`` here, hand the rest to click.

    ``version`` with ``NODEHOST_CONFIG`` set goes to click: it reports that config's programs.
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 1 and args[0] in HELP_FLAGS:
        _answer(root_help())
    if args == ["--version"] or (args == ["version"] and not os.environ.get("NODEHOST_CONFIG")):
        _answer(version_line())
    if args[:1] == ["start"]:
        from nodehost.daemon import hangup

        hangup.defer()  # before click and the plugins load: a reload must not kill a start
    _load_without_collections()
    from nodehost.cli import main as cli_main

    try:
        cli_main(args)
    finally:
        before_exit()


def _load_without_collections() -> None:
    """Turn the cyclic garbage collector off while the command loads and runs.

    Loading click, the plugins and their modules allocates objects that all
    stay alive, and the collector walked them about 55 times during ``config
    validate`` (7-10 % of its time here); a command that ends soon leaves its
    few cycles to the exit.  Reference counting still frees everything else.
    The one command that runs for long turns it on again when its node starts
    (:func:`nodehost.daemon.run_plan`).
    """
    import gc

    gc.disable()


def _answer(text: str) -> None:
    """Print ``text`` and exit 0; a reader that closed the pipe (``| head -1``) is exit 1,
    not a traceback."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit
        sys.exit(1)
    sys.exit(0)


def before_exit() -> None:
    """Spare the exiting interpreter its last garbage collections.

    Finalization collects every tracked object more than once; with a whole
    node's modules loaded that took 60-90 ms here after ``start
    --exit-on-ready`` was done.  Frozen objects are not walked.  Nothing else
    changes: atexit handlers run and the streams are flushed as before.  Call
    it only on the way out of a process (the console script,
    :mod:`nodehost.testing.planhost`): nothing frozen is collected again.
    """
    import gc

    gc.freeze()
