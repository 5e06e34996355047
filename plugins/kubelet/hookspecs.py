"""The ``kubelet`` plugin's own hook: kubelet arguments contributed by other plugins.

Added to the plugin manager through ``nodehost_addhooks`` when the ``kubelet``
plugin is registered, so the core knows nothing about the kubelet.  A plugin
that contributes arguments (a container runtime's socket, a network
provider's CNI directories) marks its implementation optional, so that it
still loads on a node without the kubelet plugin::

    from nodehost import hookimpl

    @hookimpl(optionalhook=True)
    def nodehost_kubelet_arguments(config, selected, state_dir):
        return {"container-runtime-endpoint": ["unix:///run/my.sock"]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nodehost.config.schema import NodeConfig
from nodehost.pluginhost.markers import hookspec


@hookspec
def nodehost_kubelet_arguments(
    config: NodeConfig, selected: frozenset[str], state_dir: str
) -> Mapping[str, Sequence[str]] | None:
    """Contribute kubelet arguments (e.g. a network provider's CNI directories).

    **When**: once while the kubelet component plans its command line, after
    the defaults computed from NodeConfig and before ``kubeletArguments``, so
    the user's ``kubeletArguments`` always win.

    **Arguments**: ``config`` -- the resolved NodeConfig; ``selected`` -- the
    names of the selected components; ``state_dir`` -- the node's state
    directory (component ``X`` keeps its files under ``state_dir/X``).

    **Returns**: a mapping of flag name (without ``--``) to its values, or None.
    Contributions are merged in call order; a later plugin's key replaces an
    earlier one's.

    **Kind**: broadcast.

    **Errors**: a third-party plugin that raises, or returns something other
    than a mapping of lists, fails alone (it is disabled, reported and
    contributes nothing); a built-in's failure fails the kubelet's planning
    with the plugin named.
    """
