"""The pluggy markers: ``hookimpl`` for plugins, ``hookspec`` for the core's specs."""

from __future__ import annotations

import pluggy

from nodehost import PROJECT_NAME

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
