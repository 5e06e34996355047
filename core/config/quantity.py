"""Kubernetes resource quantities (``512Mi``, ``1G``, ``-1000Mi``, ``1.5e3``), parsed exactly.

Only what NodeConfig needs: :func:`parse_quantity` turns the text into a
:class:`Quantity` that keeps the original text (for dumping) and its value as
an integer, rounded away from zero like Kubernetes' ``Quantity.Value()``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from fractions import Fraction

#: Kubernetes' own wording for a malformed quantity.
QUANTITY_FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)

#: A quantity's sign, digits, fraction and suffix; the patterns are
#: compiled on first use (``re``'s cache), not at import.
_NUMBER = r"(?s)^([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)$"
_BINARY_SI = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
#: suffix -> (numerator, denominator); ``fractions`` (and ``decimal`` with it) is
#: imported only when a quantity is parsed.
_DECIMAL_SI = {
    "n": (1, 10**9),
    "u": (1, 10**6),
    "m": (1, 10**3),
    "": (1, 1),
    "k": (10**3, 1),
    "M": (10**6, 1),
    "G": (10**9, 1),
    "T": (10**12, 1),
    "P": (10**15, 1),
    "E": (10**18, 1),
}
_EXPONENT = r"^[eE]([+-]?[0-9]+)$"
_MAX_DIGITS = 64
_MAX_EXPONENT = 1000


@frozen
class Quantity:
    """A parsed quantity: ``text`` as written, ``value`` in base units (bytes for sizes)."""

    text: str
    value: int

    def __str__(self) -> str:
        return self.text


def _multiplier(suffix: str) -> Fraction:
    from fractions import Fraction

    if suffix in _BINARY_SI:
        return Fraction(_BINARY_SI[suffix])
    if suffix in _DECIMAL_SI:
        return Fraction(*_DECIMAL_SI[suffix])
    exponent = re.match(_EXPONENT, suffix)
    if exponent is None or len(exponent.group(1).lstrip("+-")) > 4:
        raise ValueError(QUANTITY_FORMAT_ERROR)
    power = int(exponent.group(1))
    if abs(power) > _MAX_EXPONENT:
        raise ValueError(f"quantity exponent {power} is out of range")
    return Fraction(10) ** power


def _round_away_from_zero(amount: Fraction) -> int:
    magnitude = -(-abs(amount.numerator) // amount.denominator)
    return magnitude if amount >= 0 else -magnitude


def parse_quantity(text: str) -> Quantity:
    """Parse ``text`` with Kubernetes' quantity grammar; raise ``ValueError`` if it is not one.

    ``<sign>?<digits>[.<digits>]<suffix>`` where the suffix is a binary SI
    suffix (``Ki`` .. ``Ei``), a decimal SI suffix (``n u m "" k M G T P E``) or
    a decimal exponent (``e3``, ``E-2``).
    """
    from fractions import Fraction

    stripped = text.strip()
    match = re.match(_NUMBER, stripped)
    if match is None:
        raise ValueError(QUANTITY_FORMAT_ERROR)
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    if not whole and not fraction:
        raise ValueError(QUANTITY_FORMAT_ERROR)
    if len(whole) + len(fraction) > _MAX_DIGITS:
        raise ValueError(f"quantity {stripped!r} has too many digits")
    amount = Fraction(int(whole or "0")) + (
        Fraction(int(fraction), 10 ** len(fraction)) if fraction else Fraction(0)
    )
    amount *= _multiplier(suffix)
    if sign == "-":
        amount = -amount
    return Quantity(stripped, _round_away_from_zero(amount))
