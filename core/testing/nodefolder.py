"""Throw-away node material for tests: a signer CA, a node folder, a NodeConfig, a plan.

What ``nodehost ca create`` and ``nodehost config create`` write, made
in-process (the same library calls), so a plugin's tests start from a real,
valid node folder instead of hand-written placeholders::

    ca = SignerCA.create(tmp_path / "ca")
    folder = NodeFolder.create(tmp_path / "node", ca)
    folder.update({"networkConfig": {"networkPluginName": "ptp"}, "ptp": {...}})
    config = folder.load()                       # a NodeConfig, plugins' sections known
    plan = node_plan(folder.config_path, components="sdn")

Without a folder, :func:`sample_config` builds a complete node's NodeConfig
from :data:`SAMPLE_NODE` and the changes a test needs (the one builder
nodehost's own tests use)::

    config = sample_config(tmp_path, nodeIP="192.0.2.2", bridgeNetwork={"podCIDR": ...})

The pytest fixtures of :mod:`nodehost.testing.pytest_plugin` wrap these.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.config.schema import NodeConfig
    from nodehost.plan import Plan
    from nodehost.pluginhost.inventory import Inventory

#: The node name the kit's folders use (lower case, as Origin's node names).
NODE_NAME = "node1.example.com"
#: The master URL written into the kit's kubeconfigs (nothing needs to answer there).
MASTER_URL = "https://127.0.0.1:8443"


@dataclass(frozen=True)
class SignerCA:
    """A signer CA folder: ``ca.crt``, ``ca.key`` (0600), ``ca.serial.txt``, ``ca-bundle.crt``."""

    directory: Path

    @classmethod
    def create(cls, directory: str | os.PathLike[str], key_type: str = "ecdsa") -> SignerCA:
        """Make a CA in ``directory`` as ``nodehost ca create`` does (ECDSA: fast to make)."""
        from nodehost.pki.ca import create_signer_ca

        result = create_signer_ca(Path(directory), "nodehost-test-signer", 0, key_type)
        return cls(result.directory)

    @property
    def cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serial(self) -> Path:
        return self.directory / "ca.serial.txt"

    @property
    def bundle(self) -> Path:
        return self.directory / "ca-bundle.crt"


@dataclass(frozen=True)
class NodeFolder:
    """A node folder as ``nodehost config create`` writes it, signed by ``ca``.

    ``path`` holds ``node-config.yaml`` (``config_path``), ``node.kubeconfig``,
    the client and serving certificates and their keys, ``ca.crt`` and
    ``node-client-ca.crt``.  The config names no network provider and no DNS
    address, so only what a test selects and configures runs.
    """

    path: Path
    ca: SignerCA
    node_name: str = NODE_NAME

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        ca: SignerCA,
        *,
        node_name: str = NODE_NAME,
        master: str = MASTER_URL,
    ) -> NodeFolder:
        """Write the folder (serving certificate for ``node_name`` and 127.0.0.1)."""
        from nodehost.config.listen import parse_listen
        from nodehost.pki.nodefolder import NodeFolderRequest, create_node_folder

        request = NodeFolderRequest(
            node_dir=str(path),
            node_name=node_name,
            hostnames=(node_name, "127.0.0.1"),
            listen=parse_listen("https://127.0.0.1:10250"),
            master=master,
            node_client_certificate_authority=str(ca.cert),
            certificate_authority=(str(ca.bundle),),
            signer_cert=str(ca.cert),
            signer_key=str(ca.key),
            signer_serial=str(ca.serial),
            kubelet_arguments={"fail-swap-on": ("false",)},
            key_type="ecdsa",
        )
        result = create_node_folder(request)
        return cls(result.node_dir, ca, node_name)

    @property
    def config_path(self) -> Path:
        return self.path / "node-config.yaml"

    @property
    def kubeconfig(self) -> Path:
        return self.path / "node.kubeconfig"

    def raw(self) -> dict[str, Any]:
        """``node-config.yaml`` as a plain mapping."""
        import yaml

        return yaml.safe_load(self.config_path.read_text())

    def update(self, changes: Mapping[str, Any]) -> Path:
        """Merge ``changes`` into ``node-config.yaml`` (mappings merge, anything else replaces;
        a ``None`` value removes the key); returns the file's path."""
        import yaml

        merged = merge(self.raw(), changes)
        self.config_path.write_text(yaml.safe_dump(merged, sort_keys=False))
        return self.config_path

    def load(self) -> NodeConfig:
        """The folder's NodeConfig as ``nodehost start`` reads it (see
        :func:`~nodehost.testing.nodefolder.node_config`)."""
        return load_checked(str(self.config_path))


def merge(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` merged in, recursively; ``None`` in ``changes`` deletes a key."""
    merged = copy.deepcopy(dict(base))
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


@cache
def installed_inventory(disable_plugins: tuple[str, ...] = ()) -> Inventory:
    """The installed plugins (built-ins and entry points), loaded once per process.

    ``NODEHOST_DISABLE_PLUGINS`` and friends apply as in ``nodehost`` itself,
    read at the first call.
    """
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.pluginhost.manager import LoadOptions

    return Inventory.load(LoadOptions.from_environment(disable_plugins))


#: A complete node's ``node-config.yaml`` (relative paths: under the builder's ``base_dir``).
SAMPLE_NODE: Mapping[str, Any] = {
    "nodeName": NODE_NAME,
    "nodeIP": "10.0.0.2",
    "servingInfo": {
        "bindAddress": "0.0.0.0:10250",
        "certFile": "server.crt",
        "keyFile": "server.key",
        "clientCA": "ca.crt",
    },
    "masterKubeConfig": "node.kubeconfig",
    "dnsDomain": "cluster.local",
    "dnsIP": "10.0.0.10",
    "volumeDirectory": "volumes",
    "imageConfig": {"format": "openshift/origin-${component}:${version}"},
}


def sample_config(
    base_dir: str | os.PathLike[str] = ".",
    *,
    source: str | os.PathLike[str] | None = None,
    **changes: Any,
) -> NodeConfig:
    """:data:`SAMPLE_NODE` with ``changes`` merged in (:func:`merge`: recursively, ``None``
    deletes a key), built as :func:`~nodehost.testing.nodefolder.node_config` builds
    (``ConfigInvalid`` on type errors)."""
    return node_config(merge(SAMPLE_NODE, changes), base_dir=base_dir, source=source)


def write_sample_config(path: str | os.PathLike[str], **changes: Any) -> Path:
    """Write :data:`SAMPLE_NODE` with ``changes`` merged in (as :func:`sample_config`) to
    ``path`` as a v1 NodeConfig file, for tests that run the command line; ``path``."""
    from nodehost.config.dump import dump_yaml

    document = {"apiVersion": "v1", "kind": "NodeConfig", **merge(SAMPLE_NODE, changes)}
    target = Path(path)
    target.write_text(dump_yaml(document))
    return target


def node_config(
    data: Mapping[str, Any],
    *,
    base_dir: str | os.PathLike[str] = ".",
    strict: bool = False,
    source: str | os.PathLike[str] | None = None,
) -> NodeConfig:
    """A NodeConfig from a mapping, as if it were a ``node-config.yaml`` in ``base_dir``
    (``source``: that file's path, ``<generated>`` unless given).

    Origin's v1 defaults are applied, relative paths resolve against
    ``base_dir``, and the installed plugins' sections are known (kept in
    ``config.extra``; their ``nodehost_adjust_config`` hooks run).  Raises
    :class:`nodehost.errors.ConfigInvalid` naming every type error (and every
    unknown key when ``strict``); validation rules are not applied -- a
    partial config is fine for testing one plugin.
    """
    from nodehost.config.load import node_config_from_mapping

    inventory = installed_inventory()
    config, problems = node_config_from_mapping(
        data,
        source="<generated>" if source is None else str(source),
        base_dir=str(base_dir),
        known_sections=inventory.known_sections(),
        strict=strict,
        adjust=inventory.host.hooks.adjust_config,
    )
    return _checked(config, problems)


def load_checked(path: str) -> NodeConfig:
    """The NodeConfig in ``path`` with the installed plugins' sections; ConfigInvalid on errors."""
    from nodehost.resolve import load_config_file

    config, problems = load_config_file(path, installed_inventory(), strict=False)
    return _checked(config, problems)


def _checked(config: NodeConfig, problems: Sequence[Any]) -> NodeConfig:
    from nodehost.errors import ConfigInvalid

    errors = [problem for problem in problems if problem.is_error]
    if errors:
        raise ConfigInvalid(config.source, errors)
    return config


def node_plan(
    config: str | os.PathLike[str],
    *,
    components: str,
    state_dir: str | os.PathLike[str],
    standins: str = "missing",
    binaries: Mapping[str, str] | None = None,
) -> Plan:
    """What ``nodehost start --config CONFIG --components ... --dry-run`` plans, in-process.

    Loads the installed plugins, resolves and validates the config as
    ``start`` does (:class:`nodehost.errors.ConfigInvalid` with every
    problem), and returns the :class:`nodehost.plan.Plan`:
    ``plan.get(name).plan`` is a component's :class:`~nodehost.component.ComponentPlan`
    with its program resolved (``standins`` as ``--standins``; ``binaries`` as
    ``--binary NAME=PATH``).  Nothing is written or started.
    """
    from nodehost.options import StartOptions
    from nodehost.plan import build_plan
    from nodehost.resolve import resolve_config, selection_for

    inventory = installed_inventory()
    options = StartOptions(
        config=str(config),
        components=components,
        config_dir=os.path.dirname(os.path.abspath(config)),
        state_dir=str(state_dir),
    )
    resolved = resolve_config(options, inventory, selection_for(options, inventory))
    return build_plan(
        inventory,
        resolved,
        options,
        state_dir=os.path.abspath(state_dir),
        overrides=dict(binaries or {}),
        standins=standins,  # type: ignore[arg-type]
    )
