"""dnspython's import-time feature check, answered without ``importlib.metadata``.

Importing ``dns.name`` (every dnspython message does) imports ``dns._features``,
which imports ``importlib.metadata`` to ask once whether the ``idna``
distribution is installed and recent enough (names are then encoded with IDNA
2008).  That import brings ``email``, ``zipfile``, ``csv`` and
``importlib.resources`` along: about 2.8 MiB of a running node's resident set,
for one version number.

Importing this module before dnspython gives dnspython the same answer, from
its own requirement table and version parser with the version read from the
distribution's files (:func:`nodehost.pluginhost.entrypoints.distribution_version`),
and leaves ``importlib.metadata`` lazy (:func:`nodehost.deferred.defer_module`):
it loads on its first use, by dnspython's later checks of other features or by
anyone else.  Nothing changes when dnspython or ``importlib.metadata`` is
already imported, or when dnspython's table is not the one this module knows:
dnspython then asks ``importlib.metadata`` itself.
"""

from __future__ import annotations

import sys
from types import ModuleType

from nodehost.deferred import defer_module
from nodehost.pluginhost.entrypoints import distribution_version

#: The features dnspython checks while the modules the DNS server imports load (``dns.name``;
#: ``dns.query`` and ``dns.dnssec``, which check others, are not among them).
IMPORT_TIME_FEATURES = ("idna",)


def answer_import_time_features() -> None:
    """Settle :data:`IMPORT_TIME_FEATURES` in ``dns._features`` before ``dns.name`` imports."""
    if "dns._features" in sys.modules or "importlib.metadata" in sys.modules:
        return
    defer_module("importlib.metadata")
    import dns._features

    for feature in IMPORT_TIME_FEATURES:
        available = feature_available(dns._features, feature)
        if available is not None:
            dns._features.force(feature, available)


def feature_available(features: ModuleType, feature: str) -> bool | None:
    """What ``dns._features.have(feature)`` would answer, or None when it cannot be told
    here: every ``package>=version`` requirement of the feature met by the installed
    distribution's version, compared as dnspython compares them."""
    try:
        return _met(features, feature)
    except Exception:
        return None


def _met(features: ModuleType, feature: str) -> bool | None:
    requirements = getattr(features, "_requirements", {}).get(feature)
    parse = getattr(features, "_tuple_from_text", None)
    if not isinstance(requirements, list) or parse is None:
        return None
    for requirement in requirements:
        package, separator, minimum = str(requirement).partition(">=")
        if not separator:
            return None
        version = distribution_version(package)
        if version is None or parse(version) < parse(minimum):
            return False
    return True


answer_import_time_features()
