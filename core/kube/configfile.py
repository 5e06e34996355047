"""Component config files (``KubeletConfiguration``, ``KubeProxyConfiguration``): write and read.

nodehost writes them as YAML with a header naming the NodeConfig they came
from; the stand-ins read them back.  yaml is imported only here, when a file
is rendered or read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodehost.fileread import CONFIG_LIMIT, read_file


def render_config_file(document: Mapping[str, Any], source: str) -> bytes:
    """The file's bytes: a comment naming ``source``, then ``document`` as block YAML.

    Keys keep their order (put ``apiVersion`` and ``kind`` first).
    """
    from nodehost.config.dump import dump_yaml

    header = f"# Written by nodehost from {source}; it is rewritten at each start.\n"
    body = dump_yaml(dict(document))
    return (header + body).encode()


def read_config_file(path: str) -> Any:
    """The parsed document at ``path``; ``ValueError`` with one line saying what is wrong.

    The message is the reason only (``open /x: no such file or directory``,
    ``yaml: line 3: ...``), for the caller to prefix.
    """
    import yaml

    try:
        data = read_file(path, CONFIG_LIMIT)
    except OSError as error:
        raise ValueError(f"open {path}: {(error.strerror or str(error)).lower()}") from None
    try:
        return yaml.safe_load(data)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise ValueError(f"yaml: {where}{problem}") from None
