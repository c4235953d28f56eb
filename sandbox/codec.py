"""Decoding of candidate values sent from inside the sandbox.

The child encodes return values as tagged JSON (see ``_server.encode``); this module rebuilds them in the
trusted parent from exact builtin types only. Nothing here runs candidate code: no pickle, no ``__eq__``,
``__repr__`` or ``__hash__`` of a candidate class, because no candidate class can be named by the format.
Any malformed input raises ``BadValue``; the caller scores that test as failed.
"""

from __future__ import annotations

import base64
import binascii
import collections
import decimal
import fractions

MAX_DEPTH = 70
MAX_NODES = 2_000_000


class BadValue(ValueError):
    """The data from the sandbox is not a valid encoded value."""


class Opaque:
    """Stands for a value that is not plain data (a ``re.Match``, an instance of a candidate class).

    Only its type name and truthiness cross the boundary, so ``assert f(x)`` and ``assert f(x) is not None``
    work, while it compares equal to nothing but itself (an always-equal object cannot pass).
    """

    __slots__ = ("truthy", "type_name")

    def __init__(self, type_name: str, truthy: bool):
        self.type_name = type_name
        self.truthy = truthy

    def __bool__(self) -> bool:
        return self.truthy

    def __repr__(self) -> str:
        return f"<{self.type_name} object from the sandbox>"


def decode(obj):
    budget = [MAX_NODES]
    return _decode(obj, 0, budget)


def _items(payload, depth, budget):
    if type(payload) is not list:
        raise BadValue("container payload must be a list")
    return [_decode(x, depth + 1, budget) for x in payload]


def _pairs(payload, depth, budget):
    if type(payload) is not list:
        raise BadValue("mapping payload must be a list")
    out = []
    for pair in payload:
        if type(pair) is not list or len(pair) != 2:
            raise BadValue("mapping entries must be pairs")
        out.append((_decode(pair[0], depth + 1, budget), _decode(pair[1], depth + 1, budget)))
    return out


def _decode(obj, depth, budget):
    budget[0] -= 1
    if budget[0] < 0:
        raise BadValue("value too large")
    if depth > MAX_DEPTH:
        raise BadValue("value nested too deeply")
    t = type(obj)
    if obj is None or t is bool or t is int or t is float or t is str:
        return obj
    if t is not list or not obj or type(obj[0]) is not str:
        raise BadValue("malformed value")
    tag, rest = obj[0], obj[1:]
    try:
        if tag == "I" and len(rest) == 1 and type(rest[0]) is str:
            if len(rest[0]) > 100_000:
                raise BadValue("integer too large")
            return int(rest[0], 16)
        if len(rest) == 1 and tag in ("L", "T", "S", "F", "DQ", "it"):
            items = _items(rest[0], depth, budget)
            if tag == "L":
                return items
            if tag == "T":
                return tuple(items)
            if tag == "S":
                return set(items)
            if tag == "F":
                return frozenset(items)
            if tag == "DQ":
                return collections.deque(items)
            return iter(items)
        if len(rest) == 1 and tag in ("D", "Counter", "OD", "DD"):
            pairs = _pairs(rest[0], depth, budget)
            if tag == "D":
                return dict(pairs)
            if tag == "Counter":
                return collections.Counter(dict(pairs))
            if tag == "OD":
                return collections.OrderedDict(pairs)
            return collections.defaultdict(None, pairs)
        if tag in ("B", "BA") and len(rest) == 1 and type(rest[0]) is str:
            raw = base64.b64decode(rest[0], validate=True)
            return raw if tag == "B" else bytearray(raw)
        if tag == "O" and len(rest) == 2 and type(rest[0]) is str and type(rest[1]) is bool:
            return Opaque(rest[0][:100], rest[1])
        if tag == "C" and len(rest) == 2 and all(type(x) in (int, float) for x in rest):
            return complex(rest[0], rest[1])
        if tag == "R" and len(rest) == 3 and all(type(x) is int for x in rest):
            return range(*rest)
        if tag == "Dec" and len(rest) == 1 and type(rest[0]) is str and len(rest[0]) < 10_000:
            return decimal.Decimal(rest[0])
        if tag == "Frac" and len(rest) == 2 and all(type(x) is str and len(x) < 10_000 for x in rest):
            return fractions.Fraction(int(rest[0]), int(rest[1]))
    except (TypeError, ValueError, ZeroDivisionError, binascii.Error, decimal.InvalidOperation) as exc:
        # unhashable set member, bad base64, zero step, ...
        raise BadValue(f"malformed {tag!r} value: {exc}") from None
    raise BadValue(f"unknown value tag {tag!r}")
