"""``nodehost_api_route``: a plugin routes every other component's masterKubeConfig; a wrong
answer fails that plugin alone."""

from __future__ import annotations

from typing import Any

import pytest

from nodehost import hookimpl
from nodehost.pluginhost.inventory import Inventory
from nodehost.pluginhost.manager import LoadOptions, PluginHost
from nodehost.pluginhost.records import ApiRoute

SELECTED = frozenset({"kubelet", "proxy"})


def with_router(answer: Any) -> Inventory:
    class Router:
        @hookimpl
        def nodehost_api_route(self, selected: frozenset[str]) -> Any:
            return answer

    host = PluginHost().load(LoadOptions(entry_points=False))
    host.register(Router(), "router", kind="entrypoint")
    return Inventory.from_host(host)


def test_a_route_of_a_selected_component_is_the_answer(node_folder: Any) -> None:
    inventory = with_router(ApiRoute("proxy", "/state/router/kubeconfig", "/node/kubeconfig"))
    route = inventory.host.hooks.api_route(node_folder.load(), SELECTED, "/state")
    assert route == ApiRoute("proxy", "/state/router/kubeconfig", "/node/kubeconfig")
    assert inventory.host.infos["router"].status == "active"


def test_a_route_through_a_component_not_selected_fails_the_plugin(node_folder: Any) -> None:
    inventory = with_router(ApiRoute("dns", "/state/router/kubeconfig"))
    assert inventory.host.hooks.api_route(node_folder.load(), SELECTED, "/state") is None
    info = inventory.host.infos["router"]
    assert (info.status, info.hook) == ("failed", "nodehost_api_route")
    assert "'dns', which is not selected" in info.error


def test_an_answer_that_is_not_a_route_fails_the_plugin(node_folder: Any) -> None:
    inventory = with_router("/state/router/kubeconfig")
    assert inventory.host.hooks.api_route(node_folder.load(), SELECTED, "/state") is None
    assert "not an ApiRoute" in inventory.host.infos["router"].error


def test_a_route_needs_an_absolute_kubeconfig() -> None:
    with pytest.raises(ValueError, match="must be an absolute path"):
        ApiRoute("apilb", "kubeconfig")
