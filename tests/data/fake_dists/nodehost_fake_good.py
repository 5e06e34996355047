"""A well-behaved third-party plugin: one component, one provider, one rule."""

from nodehost import ComponentRecord, NetworkProviderRecord, Problem, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, ProcessSpec


class Echo:
    def plan(self, context):
        return ComponentPlan(run=ProcessSpec(argv=("sleep", "60")))


class Flat:
    def plan(self, context):
        return ComponentPlan()


@hookimpl
def nodehost_components():
    return [
        ComponentRecord(
            name="echo",
            summary="A fake component from nodehost-fake.",
            component=Echo(),
            default=False,
            after=("sdn",),
            validation_scope=ValidationScope.NETWORK,
        )
    ]


@hookimpl
def nodehost_network_providers():
    return [NetworkProviderRecord(name="flat", summary="A fake provider.", provider=Flat())]


@hookimpl
def nodehost_validate_config(config, selected):
    if "echo" in selected and config.node_name == "forbidden-by-echo":
        return [Problem.invalid("nodeName", config.node_name, "echo refuses this node name")]
    return []
