"""Sphinx directives that render nodehost's reference tables from the code.

Nothing here is hand-copied: each directive reads the table the program itself
uses, so the documentation changes when the code does.

``.. nodehost-config-schema::``
    every NodeConfig key, one ``confval`` entry per key path, from
    :func:`nodehost.config.jsonschema.node_config_schema` with the sections the
    built-in plugins own (third-party plugins installed where the docs are built
    are left out, so the page is the same everywhere);
``.. nodehost-no-effect::``
    the keys nodehost reads but does not act on, from
    :data:`nodehost.config.noeffect.NO_EFFECT`;
``.. nodehost-exit-codes::``
    the exit codes, from :data:`nodehost.errors.EXIT_CODES`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import SphinxDirective


def builtin_schema() -> dict[str, Any]:
    """The NodeConfig schema with the built-in plugins' sections and no one else's."""
    from nodehost.config.jsonschema import node_config_schema
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.pluginhost.manager import LoadOptions

    # Not from the environment: NODEHOST_DISABLE_PLUGINS must not drop a built-in's sections.
    inventory = Inventory.load(LoadOptions(strict=True, entry_points=False))
    return node_config_schema(inventory.section_schemas())


def schema_keys(schema: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every key path of ``schema`` (``servingInfo.certFile``) with its property schema,
    parents before their children."""
    definitions = schema.get("definitions", {})
    yield from _walk(schema, "", definitions)


def _walk(
    schema: Mapping[str, Any], prefix: str, definitions: Mapping[str, Any]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key, prop in schema.get("properties", {}).items():
        path = f"{prefix}{key}"
        yield path, prop
        target = _object_schema(prop, definitions)
        if target is not None:
            yield from _walk(target, f"{path}.", definitions)


def _object_schema(
    prop: Mapping[str, Any], definitions: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The object schema ``prop`` stands for (through ``$ref``, ``anyOf``, ``items``)."""
    if "$ref" in prop:
        return _object_schema(definitions[prop["$ref"].rsplit("/", 1)[-1]], definitions)
    for choice in prop.get("anyOf", ()):
        found = _object_schema(choice, definitions)
        if found is not None:
            return found
    if "properties" in prop:
        return prop
    return None


def type_text(prop: Mapping[str, Any], definitions: Mapping[str, Any]) -> str:
    """A short type for the entry: ``string``, ``ServingInfo``, ``array of string``;
    an item type of several choices is bracketed (``array of (string or null) or null``)."""
    if "$ref" in prop:
        return str(prop["$ref"].rsplit("/", 1)[-1])
    if "const" in prop:
        return json.dumps(prop["const"])
    if "enum" in prop:
        return " | ".join(json.dumps(value) for value in prop["enum"])
    if "anyOf" in prop:
        return " or ".join(type_text(choice, definitions) for choice in prop["anyOf"])
    kinds = prop.get("type", "any")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    if "array" in kinds and "items" in prop:
        items = type_text(prop["items"], definitions)
        if " or " in items or " | " in items:
            items = f"({items})"
        kinds[kinds.index("array")] = f"array of {items}"
    return " or ".join(kinds)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class ConfigSchemaDirective(SphinxDirective):
    """Render every NodeConfig key as a ``confval`` entry."""

    def run(self) -> list[nodes.Node]:
        from nodehost.config.noeffect import NO_EFFECT

        schema = builtin_schema()
        definitions = schema.get("definitions", {})
        lines: list[str] = []
        for path, prop in schema_keys(schema):
            lines += [f".. confval:: {path}", f"   :type: ``{type_text(prop, definitions)}``"]
            if "default" in prop:
                lines.append(f"   :default: ``{json.dumps(prop['default'])}``")
            description = prop.get("description") or _described_by_ref(prop, definitions)
            lines += ["", f"   {_escape(_one_line(description))}" if description else "", ""]
            if path in NO_EFFECT:
                lines += [f"   Has no effect in nodehost: {_escape(NO_EFFECT[path])}.", ""]
        return self.parse_text_to_nodes("\n".join(lines))


def _described_by_ref(prop: Mapping[str, Any], definitions: Mapping[str, Any]) -> str:
    target = _object_schema(prop, definitions)
    return str(target.get("description", "")) if target else ""


def _escape(text: str) -> str:
    """Schema descriptions are plain text: no character of theirs is markup."""
    for char in "\\*`|_":
        text = text.replace(char, "\\" + char)
    return text


def definition_list(items: Iterable[tuple[str, str]]) -> str:
    """reStructuredText of a definition list: each term (markup) with its text (markup)."""
    return "\n".join(f"{term}\n    {text}\n" for term, text in items)


class NoEffectDirective(SphinxDirective):
    """Render :data:`nodehost.config.noeffect.NO_EFFECT` as a definition list."""

    def run(self) -> list[nodes.Node]:
        from nodehost.config.noeffect import NO_EFFECT

        items = ((f":confval:`{path}`", _escape(why)) for path, why in NO_EFFECT.items())
        return self.parse_text_to_nodes(definition_list(items))


class ExitCodesDirective(SphinxDirective):
    """Render :data:`nodehost.errors.EXIT_CODES` as a definition list."""

    def run(self) -> list[nodes.Node]:
        from nodehost.errors import EXIT_CODES

        items = ((f"``{code}``", meaning) for code, meaning in EXIT_CODES.items())
        return self.parse_text_to_nodes(definition_list(items))


def resolve_short_name(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element
) -> nodes.Element | None:
    """Resolve a Python name the code writes short or through a re-export.

    Type hints imported under ``TYPE_CHECKING`` reach autodoc as bare names
    (``StartOptions``), and docstrings name records as plugins import them
    (``nodehost.ComponentRecord``): both mean the one documented object whose
    full name ends the same way.  A name that matches none, or more than one,
    stays unresolved (and fails the nitpicky build).
    """
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    last = node["reftarget"].rsplit(".", 1)[-1]
    found = [name for name, _ in domain.objects.items() if name.rsplit(".", 1)[-1] == last]
    if len(found) != 1:
        return None
    return domain.resolve_xref(
        env, node.get("refdoc", ""), app.builder, "obj", found[0], node, contnode
    )


def load_lazy_commands(app: Sphinx) -> None:
    """Put every lazily loaded command into its group's ``commands`` for sphinx-click.

    sphinx-click lists a group's ``commands`` and asks ``list_commands`` only
    when there are none, so a group with both (``nodehost config``: ``validate``
    eager, ``create`` lazy) would lose its lazy ones from the reference.
    """
    import click

    from nodehost.cli import cli

    pending: list[click.Command] = [cli]
    while pending:
        group = pending.pop()
        if isinstance(group, click.Group):
            context = click.Context(group)
            for name in group.list_commands(context):
                command = group.get_command(context, name)
                if command is not None:
                    group.commands.setdefault(name, command)
                    pending.append(command)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("nodehost-config-schema", ConfigSchemaDirective)
    app.add_directive("nodehost-no-effect", NoEffectDirective)
    app.add_directive("nodehost-exit-codes", ExitCodesDirective)
    app.connect("missing-reference", resolve_short_name)
    app.connect("builder-inited", load_lazy_commands)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
