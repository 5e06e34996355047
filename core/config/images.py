"""``imageConfig``: Origin's image name template, expanded for one component
(:ref:`origin-image-template`).

``imageConfig.format`` names images with variables: ``${component}`` (the
component asking, e.g. ``pod`` for the pod infrastructure image) and
``${version}`` (``latest`` when ``imageConfig.latest`` is true, else the
Origin release nodehost stands in for, :data:`VERSION`).  ``$name`` works
like ``${name}``, as in Go's ``os.Expand``.  An environment variable
``OPENSHIFT_<COMPONENT>_IMAGE`` (upper case, dashes as underscores;
``OPENSHIFT_POD_IMAGE`` for ``pod``) replaces the whole template for that
component, as in Origin.  Any other variable is an error, with Origin's
message.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

#: The Origin release whose images ``${version}`` names (Origin used its own version).
VERSION = "v3.11.0"

#: The component of the pod infrastructure ("pause") image, Origin's kubelet default.
POD = "pod"

_VARIABLE = re.compile(r"\$(?:\{([^}]*)\}|([A-Za-z0-9_]+)|([*#$@!?0-9-]))")


class ImageTemplateError(ValueError):
    """The template names a variable nodehost cannot fill (Origin's wording)."""


def expand_image(
    template: str, latest: bool, component: str, environ: Mapping[str, str] | None = None
) -> str:
    """The image ``template`` names for ``component``; :class:`ImageTemplateError` if it can't."""
    environ = os.environ if environ is None else environ
    variable = "OPENSHIFT_%s_IMAGE" % component.upper().replace("-", "_")  # noqa: UP031
    template = environ.get(variable) or template
    values = {"component": component, "version": "latest" if latest else VERSION}
    unmatched: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        name = next(group for group in match.groups() if group is not None)
        if not name:  # "${}": Go's os.Expand eats bad syntax
            return ""
        if name in values:
            return values[name]
        unmatched.append(name)
        return ""

    result = _VARIABLE.sub(substitute, template)
    if len(unmatched) == 1:
        raise ImageTemplateError(
            f"the key {json.dumps(unmatched[0])} in {json.dumps(template)} is not recognized"
        )
    if unmatched:
        raise ImageTemplateError(
            f"multiple keys in {json.dumps(template)} were not recognized: {', '.join(unmatched)}"
        )
    return result


def pod_image(image_config: Any, environ: Mapping[str, str] | None = None) -> str:
    """Origin's pod infrastructure image: ``imageConfig`` expanded for :data:`POD`."""
    return expand_image(image_config.format, image_config.latest, POD, environ)
