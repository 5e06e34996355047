"""Implements a misspelt hook."""

from nodehost import hookimpl


@hookimpl
def nodehost_validate_conifg(config):
    return []
