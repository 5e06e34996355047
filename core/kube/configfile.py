"""Component config files (``KubeletConfiguration``, ``KubeProxyConfiguration``): write and read.

nodehost writes them as YAML with a header naming the NodeConfig they came
from; the stand-ins read them back (through the one bounded loader,
:mod:`nodehost.config.yamlsafe`).  yaml is imported only when a file is
rendered or read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodehost.fileread import CONFIG_LIMIT


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
    from nodehost.config.yamlsafe import YAMLFileError, read_yaml_file

    try:
        return read_yaml_file(path, CONFIG_LIMIT).data
    except YAMLFileError as error:
        raise ValueError(str(error)) from None
