"""Registry mirrors, TLS and credentials for the containerd nodehost runs.

``containerRuntime.registries``, in the shape of k3s' ``registries.yaml``::

    containerRuntime:
      registries:
        mirrors:
          docker.io:                           # the registry an image name names
            endpoint:                          # tried in order, then the registry itself
              - https://mirror.example:5000
              - http://127.0.0.1:5000
        configs:
          mirror.example:5000:                 # a registry or endpoint host (host[:port])
            auth:                              # username + password, or auth, or identitytoken
              username: puller
              password: secret
            tls:
              ca_file: /etc/nodehost/mirror-ca.pem
              cert_file: /etc/nodehost/mirror-client.pem
              key_file: /etc/nodehost/mirror-client-key.pem
              insecure_skip_verify: false

Rendered for containerd 1.6+ (:func:`hosts_files`, :func:`cri_registry_lines`):

* the CRI plugin's ``registry.config_path`` is ``<state-dir>/runtime/hosts/<digest>``
  (a folder per content: a host removed from the config leaves no file behind
  that containerd would still read), holding one ``<HOST>/hosts.toml`` per
  mirrored registry and per host with TLS settings: ``server`` (the registry
  itself; ``docker.io`` is ``https://registry-1.docker.io``), its TLS settings,
  then a ``[host."ENDPOINT"]`` per mirror endpoint (``pull`` and ``resolve``)
  with the TLS settings of that endpoint's host;
* credentials go to ``registry.configs."HOST".auth`` in ``containerd.toml``,
  which containerd looks up by the host it talks to; the file is then written
  0600.  Credentials appear in no plan note, log line or ``/status``.

``rewrite`` (k3s' own containerd patch; :mod:`.rewrite`) has no equivalent
in stock containerd's registry hosts: a rewritten registry's ``hosts.toml``
names one endpoint, the loopback proxy of the ``mirror-rewrite`` component
(:mod:`.mirrorproxy`), which rewrites the repository names and forwards to the
mirror endpoints; that proxy writes the file once it listens.  TLS files must be
absolute paths of readable files.  :func:`probe_mirrors` asks each mirror
endpoint for ``/v2/`` with the endpoint's TLS settings and credentials
(``nodehost check``'s ``runtime.mirror.<HOST>`` lines; the ``images``
component's ``/status`` details).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from nodehost.config.sections import SectionReader
from nodehost.frozen import frozen
from nodehost.pluginhost.records import Problem

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.plugins.runtime.rewrite import Rule

KEY = "registries"
#: Where ``docker.io`` images really come from (containerd's own default for it).
DOCKER_HUB = ("docker.io", "https://registry-1.docker.io")
HOSTS_DIR = "hosts"
AUTH_FORMS = "give exactly one of: username and password, auth, identitytoken"
#: A registry host (``host[:port]``, ``[v6][:port]``); compiled on first use (``re``'s
#: cache), not at import.
_HOST = r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$|^\[[0-9a-fA-F:]+\](:[0-9]{1,5})?$"

SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "description": "Registry mirrors, TLS and credentials (k3s registries.yaml's shape).",
    "properties": {
        "mirrors": {
            "type": ["object", "null"],
            "description": "Registry host -> {endpoint: [URL...], rewrite: {RE2: replacement}}: "
            "where its images are pulled, and under which repository names.",
        },
        "configs": {
            "type": ["object", "null"],
            "description": "Registry or endpoint host -> {auth: {...}, tls: {...}}.",
        },
    },
    "additionalProperties": False,
}


@frozen
class Tls:
    """TLS settings for talking to one host (files are absolute paths)."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    insecure_skip_verify: bool = False


@frozen
class Auth:
    """Credentials for one host; never shown (``repr`` hides them)."""

    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    auth: str | None = field(default=None, repr=False)
    identitytoken: str | None = field(default=None, repr=False)


Mirrors = tuple[tuple[str, tuple[str, ...]], ...]
Rewrites = tuple[tuple[str, tuple["Rule", ...]], ...]


@frozen
class Registries:
    """The section, read: ``mirrors`` (host -> endpoints), ``tls`` and ``auth`` by host,
    ``rewrites`` (host -> rules, for mirrored hosts that have some)."""

    mirrors: Mirrors = ()
    tls: tuple[tuple[str, Tls], ...] = ()
    auth: tuple[tuple[str, Auth], ...] = ()
    rewrites: Rewrites = ()

    def __bool__(self) -> bool:
        return bool(self.mirrors or self.tls or self.auth)

    def hosts(self) -> list[str]:
        """The hosts that get a ``hosts.toml``: mirrored registries, then hosts with TLS."""
        names = [host for host, _ in self.mirrors]
        return names + [host for host, _ in self.tls if host not in names]


def read_registries(reader: SectionReader) -> Registries:
    """``containerRuntime.registries`` from the runtime's ``reader``; problems go to it."""
    raw = reader.raw_value(KEY)
    if raw is None:
        return Registries()
    section = SectionReader(reader.path(KEY), raw)
    mirrors, rewrites = _mirrors(section)
    tls, auth = _configs(section)
    section.unknown_keys()
    reader.problems.extend(section.problems)
    return Registries(mirrors, tls, auth, rewrites)


def _mirrors(section: SectionReader) -> tuple[Mirrors, Rewrites]:
    found, rewrites = [], []
    for host, raw in _hosts(section, "mirrors"):
        mirror = SectionReader(f"{section.path('mirrors')}.{host}", raw)
        endpoints = _endpoints(mirror)
        rules = _rewrite(mirror)
        mirror.unknown_keys()
        section.problems.extend(mirror.problems)
        found.append((host, endpoints))
        if rules:
            rewrites.append((host, rules))
    return tuple(found), tuple(rewrites)


def _rewrite(mirror: SectionReader) -> tuple[Rule, ...]:
    """``rewrite``: RE2 pattern -> replacement, in order (:mod:`.rewrite`)."""
    from nodehost.plugins.runtime.rewrite import NotRe2, compile_rule

    raw = mirror.raw_value("rewrite")
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        mirror.invalid("rewrite", str(raw), "must be a mapping of regular expression: replacement")
        return ()
    rules = []
    for pattern, replacement in raw.items():
        path = f"rewrite.{pattern}"
        if not isinstance(pattern, str) or not isinstance(replacement, str):
            mirror.invalid(path, str(replacement), "pattern and replacement must be strings")
            continue
        try:
            rules.append(compile_rule(pattern, replacement))
        except NotRe2 as error:
            mirror.invalid(path, pattern, str(error))
    return tuple(rules)


def _endpoints(mirror: SectionReader) -> tuple[str, ...]:
    raw = mirror.raw_value("endpoint")
    if raw is None:
        mirror.problems.append(Problem.required(mirror.path("endpoint")))
        return ()
    if not isinstance(raw, list) or not all(isinstance(url, str) for url in raw):
        mirror.invalid("endpoint", raw, "must be a list of URLs")
        return ()
    good = []
    for index, url in enumerate(raw):
        problem = endpoint_problem(url)
        if problem:
            mirror.invalid(f"endpoint[{index}]", url, problem)
        else:
            good.append(url.rstrip("/"))
    return tuple(good)


def endpoint_problem(url: str) -> str | None:
    """Why ``url`` cannot be a mirror endpoint (``http(s)://host[:port][/path]``), or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a bad port
    except ValueError:
        return "must be an http:// or https:// URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// URL"
    if parts.query or parts.fragment or parts.username or parts.password:
        return "must have no credentials, query or fragment (credentials go in configs)"
    return None


def _configs(
    section: SectionReader,
) -> tuple[tuple[tuple[str, Tls], ...], tuple[tuple[str, Auth], ...]]:
    tls_found, auth_found = [], []
    for host, raw in _hosts(section, "configs"):
        config = SectionReader(f"{section.path('configs')}.{host}", raw)
        auth = _auth(config)
        tls = _tls(config)
        config.unknown_keys()
        section.problems.extend(config.problems)
        if auth is not None:
            auth_found.append((host, auth))
        if tls is not None:
            tls_found.append((host, tls))
    return tuple(tls_found), tuple(auth_found)


def _auth(config: SectionReader) -> Auth | None:
    raw = config.raw_value("auth")
    if raw is None:
        return None
    reader = SectionReader(config.path("auth"), raw)
    username, password = reader.text("username"), reader.text("password")
    encoded, token = reader.text("auth"), reader.text("identitytoken")
    reader.unknown_keys()
    forms = sum([bool(username or password), bool(encoded), bool(token)])
    if forms == 0:
        reader.problems.append(Problem.required(reader.section, AUTH_FORMS))
    elif forms > 1:
        reader.problems.append(Problem.forbidden(reader.section, AUTH_FORMS))
    elif (username or password) and not (username and password):
        reader.problems.append(
            Problem.required(reader.path("password" if username else "username"))
        )
    elif encoded and not _is_basic_auth(encoded):
        reader.invalid("auth", "(hidden)", "must be base64 of username:password")
    config.problems.extend(reader.problems)
    return Auth(username, password, encoded, token)


def _tls(config: SectionReader) -> Tls | None:
    from nodehost.config.validate import validate_file

    raw = config.raw_value("tls")
    if raw is None:
        return None
    reader = SectionReader(config.path("tls"), raw)
    files = {key: reader.absolute_path(key) for key in ("ca_file", "cert_file", "key_file")}
    skip = reader.boolean("insecure_skip_verify", False)
    reader.unknown_keys()
    for key, path in files.items():
        if path is not None:
            reader.problems.extend(validate_file(path, reader.path(key)))
    if bool(files["cert_file"]) != bool(files["key_file"]):
        reader.problems.append(Problem.forbidden(reader.section, "cert_file needs key_file"))
    config.problems.extend(reader.problems)
    return Tls(files["ca_file"], files["cert_file"], files["key_file"], skip)


def _hosts(section: SectionReader, key: str) -> list[tuple[str, Mapping[str, Any]]]:
    raw = section.raw_value(key)
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        section.invalid(key, raw, "must be a mapping of registry hosts")
        return []
    found = []
    for host, value in raw.items():
        if not isinstance(host, str) or not re.match(_HOST, host):
            section.invalid(f"{key}.{host}", str(host), "must be a registry host: host[:port]")
            continue
        if not isinstance(value, Mapping):
            section.invalid(f"{key}.{host}", str(value), "must be a mapping")
            continue
        found.append((host, value))
    return found


def _is_basic_auth(encoded: str) -> bool:
    import base64
    import binascii

    try:
        return b":" in base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return False


# --- rendering -----------------------------------------------------------------------------


def upstream(host: str) -> str:
    """The registry ``host`` itself as a URL (``docker.io`` is Docker Hub's registry)."""
    return DOCKER_HUB[1] if host == DOCKER_HUB[0] else f"https://{host}"


def endpoint_host(url: str) -> str:
    """``host[:port]`` of an endpoint URL (the key its ``configs`` entry has)."""
    return urlsplit(url).netloc


def _tls_lines(tls: Tls | None, pad: str) -> list[str]:
    if tls is None:
        return []
    lines = []
    if tls.ca_file:
        lines.append(f"{pad}ca = {toml_string(tls.ca_file)}")
    if tls.cert_file and tls.key_file:
        lines.append(f"{pad}client = [[{toml_string(tls.cert_file)}, {toml_string(tls.key_file)}]]")
    if tls.insecure_skip_verify:
        lines.append(f"{pad}skip_verify = true")
    return lines


def hosts_toml(registries: Registries, host: str, through: str | None = None) -> bytes:
    """The ``hosts.toml`` of ``host``: its server, then its mirror endpoints in order -- or,
    when ``through`` (the rewriting proxy's URL) is given, that one endpoint."""
    tls = dict(registries.tls)
    lines = [
        "# Written by nodehost (the runtime component); changes are overwritten at start.",
        f"server = {toml_string(upstream(host))}",
        *_tls_lines(tls.get(host), ""),
    ]
    for url in [through] if through else dict(registries.mirrors).get(host, ()):
        lines += ["", f"[host.{toml_string(url)}]", '  capabilities = ["pull", "resolve"]']
        lines += (
            ["  override_path = true"] if through else _tls_lines(tls.get(endpoint_host(url)), "  ")
        )
    return ("\n".join(lines) + "\n").encode()


def hosts_dir(registries: Registries, component_dir: str) -> str:
    """containerd's ``config_path``: a folder named by the digest of what it holds."""
    import hashlib  # loads OpenSSL's digests: only for a node with registry hosts

    rules = [
        (host, [(r.pattern, r.replacement) for r in found]) for host, found in registries.rewrites
    ]
    digest = hashlib.sha256(repr((registries.mirrors, registries.tls, rules)).encode()).hexdigest()
    return os.path.join(component_dir, HOSTS_DIR, digest[:16])


def hosts_files(registries: Registries, component_dir: str) -> list[tuple[str, bytes]]:
    """``(path, content)`` of every ``hosts.toml`` but those of rewritten hosts, which the
    rewriting proxy writes once it listens (:func:`hosts_toml_path`)."""
    rewritten = dict(registries.rewrites)
    return [
        (hosts_toml_path(registries, component_dir, host), hosts_toml(registries, host))
        for host in registries.hosts()
        if host not in rewritten
    ]


def hosts_toml_path(registries: Registries, component_dir: str, host: str) -> str:
    """Where containerd reads ``host``'s ``hosts.toml``."""
    return os.path.join(hosts_dir(registries, component_dir), _folder_name(host), "hosts.toml")


def _folder_name(host: str) -> str:
    """containerd's folder name for a host: ``host:port`` as is (``[v6]:port`` too)."""
    return host


def cri_registry_lines(registries: Registries, config_path: str | None) -> list[str]:
    """The ``containerd.toml`` lines of the CRI registry: ``config_path``, then credentials."""
    if not registries:
        return []
    cri = 'plugins."io.containerd.grpc.v1.cri".registry'
    lines = [f"[{cri}]"]
    if config_path is not None:
        lines.append(f"  config_path = {toml_string(config_path)}")
    for host, auth in registries.auth:
        lines += ["", f"[{cri}.configs.{toml_string(host)}.auth]"]
        for key in ("username", "password", "auth", "identitytoken"):
            value = getattr(auth, key)
            if value:
                lines.append(f"  {key} = {toml_string(value)}")
    return [*lines, ""]


def describe(registries: Registries) -> list[str]:
    """Plan notes: mirrors and which hosts have TLS settings or credentials (never the values)."""
    rewritten = dict(registries.rewrites)
    notes = [
        f"registry {host}: mirrors {', '.join(endpoints)} (then {upstream(host)})"
        + (
            f"; names rewritten by {len(rewritten[host])} rule(s) through the loopback "
            "mirror-rewrite proxy"
            if host in rewritten
            else ""
        )
        for host, endpoints in registries.mirrors
    ]
    if registries.tls:
        notes.append("registry TLS settings for " + ", ".join(host for host, _ in registries.tls))
    if registries.auth:
        notes.append(
            "registry credentials for "
            + ", ".join(host for host, _ in registries.auth)
            + " (in containerd.toml, mode 0600)"
        )
    return notes


# --- do the mirrors answer? ----------------------------------------------------------------


@frozen
class MirrorAnswer:
    """How one mirror endpoint answered ``GET /v2/``: ``ok`` and a line saying what happened."""

    registry: str
    endpoint: str
    ok: bool
    detail: str


def probe_mirrors(registries: Registries, timeout: float = 5.0) -> list[MirrorAnswer]:
    """Ask every mirror endpoint for ``/v2/`` (blocking; ``timeout`` seconds each), as
    containerd talks to it: the endpoint host's ``tls`` settings (verified unless
    ``insecure_skip_verify``) and its ``auth`` (basic: username and password, or ``auth``).

    A registry answers 200, or 401 when it wants credentials: both count as
    answering -- but a 401 to the credentials given, with a ``Basic`` challenge,
    says they are refused.  (A ``Bearer`` challenge asks for a token exchange,
    which only a pull makes; an ``identitytoken`` is not sent here.)
    """
    tls, auth = dict(registries.tls), dict(registries.auth)
    return [
        _probe(host, url, tls.get(endpoint_host(url)), auth.get(endpoint_host(url)), timeout)
        for host, endpoints in registries.mirrors
        for url in endpoints
    ]


def _probe(
    registry: str, url: str, tls: Tls | None, auth: Auth | None, timeout: float
) -> MirrorAnswer:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url + "/v2/", method="GET")
    basic = basic_credentials(auth)
    if basic:  # for this host only: not carried along a redirect to another one
        request.add_unredirected_header("Authorization", f"Basic {basic}")
    challenge = ""
    try:
        context = ssl_context(tls)
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
            code = answer.status
    except urllib.error.HTTPError as error:
        code, challenge = error.code, error.headers.get("WWW-Authenticate", "")
    except (OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        return MirrorAnswer(registry, url, False, f"does not answer /v2/: {reason}")
    if code == 401 and basic and challenge.lower().startswith("basic"):
        why = f"refuses the credentials of configs.{endpoint_host(url)} (HTTP 401)"
        return MirrorAnswer(registry, url, False, why)
    if code in (200, 401):
        return MirrorAnswer(registry, url, True, f"answers /v2/ (HTTP {code})")
    return MirrorAnswer(registry, url, False, f"answers /v2/ with HTTP {code}, not a registry")


def basic_credentials(auth: Auth | None) -> str | None:
    """The base64 ``username:password`` of ``auth`` (given as a pair, or as ``auth``)."""
    import base64

    if auth is None:
        return None
    if auth.username and auth.password:
        return base64.b64encode(f"{auth.username}:{auth.password}".encode()).decode()
    return auth.auth or None


def ssl_context(tls: Tls | None) -> Any:
    """A client TLS context for ``tls``: its CA (else the system's), client certificate,
    verification off only with ``insecure_skip_verify``."""
    import ssl

    context = ssl.create_default_context(cafile=tls.ca_file if tls else None)
    if tls and tls.cert_file and tls.key_file:
        context.load_cert_chain(tls.cert_file, tls.key_file)
    if tls and tls.insecure_skip_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    import json

    return json.dumps(text)
