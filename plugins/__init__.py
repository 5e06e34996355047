"""nodehost's built-in plugins, one per component.

Each module registers its component through the same hooks a third-party
package uses.  The core loads them by name from
:data:`nodehost.pluginhost.manager.BUILTIN_PLUGINS`; it never imports this package
directly.
"""
