"""A component whose validation hook raises; it owns the ``rogueSettings`` section."""

from nodehost import ComponentRecord, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, ProcessSpec


class Rogue:
    def plan(self, context):
        return ComponentPlan(run=ProcessSpec(argv=("sleep", "60")))


@hookimpl
def nodehost_components():
    return [
        ComponentRecord(
            name="rogue",
            summary="Validates badly.",
            component=Rogue(),
            default=False,
            validation_scope=ValidationScope.NETWORK,
            config_sections=("rogueSettings",),
        )
    ]


@hookimpl
def nodehost_validate_config(config, selected):
    return [{}["rogue-rule"]]
