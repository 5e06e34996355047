"""A plugin whose import fails, as a plugin with a missing dependency would."""

import nodehost_this_dependency_is_not_installed  # noqa: F401
