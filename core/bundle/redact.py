"""Removing secrets from what goes into a debug bundle.

Structured data (:func:`redact_data`): the value of every key whose name,
split into words (``client-key-data``, ``clientKeyData``, ``bootstrap_token``),
holds a secret word -- token, password, secret, credential(s), auth, bearer,
apikey, key data, private key -- is replaced by :data:`REDACTED`, whatever its
type, unless its last word says it names where a secret is (``tokenFile``,
``keyPath``, ``secretRef``); every other string goes through :func:`redact_text`.

Text (:func:`redact_text`): private-key PEM blocks, ``name = value`` and
``name: value`` pairs whose name is a secret word, ``Bearer`` tokens, user
information in URLs (``https://user:pass@host``), JSON Web Tokens and
Kubernetes bootstrap tokens (``abcdef.0123456789abcdef``).

The rules err on the side of removing: a bundle loses a little detail rather
than leak a credential.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

REDACTED = "<redacted>"

_SECRET_WORDS = frozenset(
    {
        "token", "tokens", "password", "passwd", "passphrase", "secret", "secrets",
        "credential", "credentials", "auth", "bearer", "apikey", "identitytoken",
    }
)  # fmt: skip
_REFERENCE_WORDS = frozenset({"file", "files", "path", "dir", "ref", "name"})
_SECRET_PAIRS = frozenset({("key", "data"), ("private", "key"), ("api", "key")})

_PEM_PRIVATE = re.compile(
    r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----.*?(-----END \1-----|\Z)", re.DOTALL
)
_SECRET_NAME = (
    r"[\w.-]*?(?:token|password|passwd|passphrase|secret|credentials?|auth|apikey"
    r"|api[-_]key|key[-_]data|private[-_]key)"
)
_PAIR = re.compile(
    rf"""(?ix)
    (?P<name>["']?{_SECRET_NAME}["']?)      # the name, maybe quoted
    (?P<sep>\s*[:=]\s*)                      # = or :
    (?P<value>"[^"]*"|'[^']*'|[^\s,;}}\]]+)  # the value, maybe quoted
    """
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]+")
_URL_USER = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_BOOTSTRAP_TOKEN = re.compile(r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def is_secret_name(name: str) -> bool:
    """Whether a key named ``name`` holds a secret (see the module docstring)."""
    words = [word.lower() for word in _WORD.findall(name)]
    if words and words[-1] in _REFERENCE_WORDS:
        return False  # tokenFile, keyPath: where a secret is, not the secret
    if any(word in _SECRET_WORDS for word in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


def redact_data(value: Any) -> Any:
    """A copy of ``value`` (mappings, lists, strings, scalars) with every secret replaced."""
    if isinstance(value, Mapping):
        return {
            key: REDACTED
            if is_secret_name(str(key)) and value[key] not in (None, "")
            else redact_data(item)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact_data(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, bytes):
        return redact_text(value.decode(errors="replace"))
    return value


def redact_text(text: str) -> str:
    """``text`` with every secret the module docstring lists replaced."""
    text = _PEM_PRIVATE.sub(
        lambda m: f"-----BEGIN {m.group(1)}-----\n{REDACTED}\n-----END {m.group(1)}-----", text
    )
    text = _PAIR.sub(_pair, text)
    text = _BEARER.sub(rf"\g<1>{REDACTED}", text)
    text = _URL_USER.sub(rf"\g<1>{REDACTED}@", text)
    text = _JWT.sub(REDACTED, text)
    return _BOOTSTRAP_TOKEN.sub(REDACTED, text)


def _pair(match: re.Match[str]) -> str:
    value = match.group("value")
    quote = value[0] if value[:1] in ('"', "'") else ""
    return f"{match.group('name')}{match.group('sep')}{quote}{REDACTED}{quote}"


def redact_document(data: bytes) -> bytes:
    """A file's content redacted: as YAML/JSON data when it parses as a mapping or list, else
    as text.  Structured input comes back as YAML (comments and order of keys kept as data)."""
    import yaml

    text = data.decode(errors="replace")
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError:
        parsed = None
    if isinstance(parsed, (Mapping, list)):
        return yaml.safe_dump(redact_data(parsed), sort_keys=False).encode()
    return redact_text(text).encode()
