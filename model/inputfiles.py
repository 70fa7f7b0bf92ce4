"""Strict reading of input files: the lowest part of flinkspec's one validation layer.

Every file flinkspec reads (a job spec, a counterexample) goes through these functions
before anything looks at its content:

* :func:`read_input` -- the path must name a regular file (a FIFO, a device or a directory
  is refused before it is opened, so reading never blocks) no larger than a bound;
* :func:`decode_utf8` -- UTF-8 only; the error names the byte offset (and the line);
* :func:`parse_json` / :func:`parse_toml` -- duplicate keys, ``NaN``/``Infinity``,
  integers outside the 64-bit range (and longer than :data:`MAX_INT_DIGITS` digits),
  nesting deeper than :data:`MAX_DEPTH` are refused;
* :func:`check_schema` -- validation against a JSON Schema (Draft 2020-12, the
  ``jsonschema`` library) in which an ``integer`` is a Python ``int`` and never a ``bool``
  or a float such as ``1.0``; the error names the field by its path and states the rule.

Every problem raises :class:`InputError` (a :class:`model.errors.FlinkspecError`: one line,
exit code 2): ``"<file>:<where>: <rule>"``. Values are quoted by :func:`short`, which cuts
them to a short prefix, so a 10 MB name is never echoed back. The rules and limits are
listed in ``docs/input-validation.md``.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tomllib
from typing import Any, Iterable

from model.errors import FlinkspecError

#: Largest input file read, in bytes (the committed counterexamples are a few kB).
MAX_FILE_BYTES = 16 * 1024 * 1024
#: Deepest nesting of arrays and objects accepted (the formats need 6).
MAX_DEPTH = 32
#: Integers must fit in a Java long (64 bit), and are refused before conversion when longer.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
MAX_INT_DIGITS = 20
#: Longest value quoted in an error message.
SHORT = 60


class InputError(FlinkspecError, ValueError):
    """An input file (or argument) breaks a rule: ``source`` names the file, ``where`` the
    line, byte or field, ``rule`` what is wrong. The message is ``"source:where: rule"``."""

    def __init__(self, source: str, where: str, rule: str):
        self.source, self.where, self.rule = str(source), str(where), rule
        head = short_text(self.source, 200)
        super().__init__(f"{head}:{self.where}: {rule}" if self.where else f"{head}: {rule}")


def short_text(text: str, limit: int = SHORT) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with its full length."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def short(value: Any, limit: int = SHORT) -> str:
    """The repr of ``value`` cut to a short prefix (for error messages)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    if isinstance(value, (list, tuple, dict)) and len(value) > 20:
        return f"a {type(value).__name__} of {len(value)} items"
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"a {type(value).__name__}"
    return short_text(text, limit)


# -- files -------------------------------------------------------------------------------------

def read_input(path, *, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (at most ``max_bytes``); anything else raises
    :class:`InputError`: a missing file, a directory, a FIFO or device (never opened, so
    never blocks), an unreadable or oversized file."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(p, "", f"cannot read the {what}: no such file") from None
    except OSError as e:
        raise InputError(p, "", f"cannot read the {what}: {e.strerror or type(e).__name__}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(p, "", f"is a directory, not a {what}")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(p, "", f"is not a regular file (a FIFO, socket or device); a {what} must be a file")
    if st.st_size > max_bytes:
        raise InputError(p, "", f"the {what} is {st.st_size} bytes, more than the limit of {max_bytes}")
    try:
        with open(p, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise InputError(p, "", f"cannot read the {what}: {e.strerror or type(e).__name__}") from None
    if len(raw) > max_bytes:
        raise InputError(p, "", f"the {what} is more than the limit of {max_bytes} bytes")
    return raw


def decode_utf8(raw: bytes, source: str) -> str:
    """``raw`` as text; not UTF-8 raises :class:`InputError` naming the line and byte offset."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise InputError(source, f"{line}", f"not UTF-8 text: {e.reason} at byte {e.start} "
                                            f"(byte value 0x{raw[e.start]:02x})") from None


# -- JSON and TOML -----------------------------------------------------------------------------

class _Refused(Exception):
    """Raised inside the JSON hooks; turned into an InputError with the position."""


def _pairs(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise _Refused(f"duplicate key {short(k)}")
        out[k] = v
    return out


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"integer of {len(text)} digits (integers must fit in 64 bits)")
    v = int(text)
    if not INT_MIN <= v <= INT_MAX:
        raise _Refused(f"integer {v} does not fit in 64 bits")
    return v


def _float(text: str) -> float:
    if len(text) > 40:
        raise _Refused(f"number {short(text)} is too long")
    v = float(text)
    if not math.isfinite(v):
        raise _Refused(f"number {short(text)} is out of range (infinite)")
    return v


def _constant(text: str):
    raise _Refused(f"{text} is not a number JSON allows (no NaN or Infinity)")


def parse_json(text: str, source: str, where: str = "") -> Any:
    """``text`` as strict JSON (see the module docstring); :class:`InputError` otherwise."""
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_int=_int, parse_float=_float,
                           parse_constant=_constant)
    except _Refused as e:
        raise InputError(source, where, str(e)) from None
    except json.JSONDecodeError as e:
        at = f"{where} column {e.colno}" if where else f"{e.lineno} column {e.colno}"
        raise InputError(source, at, f"malformed JSON: {e.msg}") from None
    except RecursionError:
        raise InputError(source, where, f"nesting deeper than {MAX_DEPTH} levels") from None
    check_depth(value, source, where)
    return value


def parse_toml(text: str, source: str) -> Any:
    """``text`` as TOML with the same bounds as :func:`parse_json` (TOML itself refuses
    duplicate keys; ``nan`` and ``inf`` are refused here)."""
    try:
        value = tomllib.loads(text, parse_float=_float)
    except _Refused as e:
        raise InputError(source, "", str(e)) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(source, "", f"malformed TOML: {short_text(str(e), 200)}") from None
    except RecursionError:
        raise InputError(source, "", f"nesting deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:  # an integer literal beyond Python's digit limit
        raise InputError(source, "", f"malformed TOML: {short_text(str(e), 120)}") from None
    check_depth(value, source, "")
    return value


def check_depth(value: Any, source: str, where: str = "") -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` and integers outside 64 bits (TOML's
    integers are parsed by tomllib itself); iterative, so it never recurses."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            children: Iterable = v.values()
        elif isinstance(v, list):
            children = v
        else:
            if type(v) is int and not INT_MIN <= v <= INT_MAX:
                raise InputError(source, where, f"integer {short(v)} does not fit in 64 bits")
            if type(v) is float and not math.isfinite(v):
                raise InputError(source, where, "a number is out of range (infinite or NaN)")
            continue
        if depth > MAX_DEPTH:
            raise InputError(source, where, f"nesting deeper than {MAX_DEPTH} levels")
        stack.extend((c, depth + 1) for c in children)


# -- JSON Schema -------------------------------------------------------------------------------

#: id(schema) -> (schema, validator); the schema is kept so its id is never reused
_VALIDATORS: dict[int, tuple] = {}


def _validator(schema: dict):
    entry = _VALIDATORS.get(id(schema))
    v = entry[1] if entry is not None and entry[0] is schema else None
    if v is None:
        # lazy: jsonschema (~0.1 s to import) is needed only once a file is read
        import jsonschema
        from jsonschema import validators  # lazy, as above

        base = jsonschema.Draft202012Validator
        checker = base.TYPE_CHECKER.redefine_many({
            "integer": lambda _c, x: type(x) is int,
            "number": lambda _c, x: type(x) in (int, float) and math.isfinite(x),
        })
        cls = validators.extend(base, type_checker=checker)
        base.check_schema(schema)
        v = cls(schema)
        if len(_VALIDATORS) > 64:
            _VALIDATORS.clear()
        _VALIDATORS[id(schema)] = (schema, v)
    return v


def field_path(path: Iterable) -> str:
    """A JSON path as ``a.b[2].c`` (the root is ``(top level)``)."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


_TYPE_NAMES = {"integer": "an integer", "string": "a string", "boolean": "true or false", "array": "an array",
               "object": "an object", "null": "null", "number": "a number"}


def _rule(err) -> str:
    """One sentence for a jsonschema error, never quoting more than a short prefix."""
    v, vv, inst = err.validator, err.validator_value, err.instance
    if v == "type":
        types = [vv] if isinstance(vv, str) else list(vv)
        return f"must be {' or '.join(_TYPE_NAMES.get(t, t) for t in types)}, not {short(inst)}"
    if v == "enum":
        return f"must be one of {', '.join(map(str, vv))}, not {short(inst)}"
    if v == "const":
        return f"must be {vv!r}, not {short(inst)}"
    if v == "minimum":
        return f"must be at least {vv}, not {short(inst)}"
    if v == "maximum":
        return f"must be at most {vv}, not {short(inst)}"
    if v == "minLength":
        return "must not be empty" if vv == 1 else f"must have at least {vv} characters"
    if v == "maxLength":
        return f"is {len(inst)} characters long, more than the limit of {vv}"
    if v == "minItems":
        return f"must have at least {vv} item(s)"
    if v == "maxItems":
        return f"has {len(inst)} items, more than the limit of {vv}"
    if v == "required":
        missing = [k for k in vv if isinstance(inst, dict) and k not in inst]
        return f"missing required key {short(missing[0]) if missing else ''}"
    if v == "additionalProperties":
        extra = sorted(k for k in inst if k not in err.schema.get("properties", {}))
        known = ", ".join(err.schema.get("properties", {}))
        return f"unknown key {short(extra[0]) if extra else ''} (known: {known})"
    if v == "propertyNames":
        return f"key {short(inst)} is not allowed"
    if v == "pattern":
        return f"{short(inst)} does not match the pattern {vv}"
    if v == "maxProperties":
        return f"has {len(inst)} keys, more than the limit of {vv}"
    if v == "uniqueItems":
        return "items must be unique"
    return f"{short(inst)} breaks the schema rule {v!r}"


def check_schema(instance: Any, schema: dict, source: str, where: str = "", prefix: Iterable = ()) -> None:
    """Validate ``instance`` against ``schema``; the first error (deepest, then first in
    document order) raises :class:`InputError` naming the field path and the rule."""
    errors = list(_validator(schema).iter_errors(instance))
    if not errors:
        return
    # prefer the error deepest in the document: "operators[1].parallelism" over "operators"
    err = max(errors, key=lambda e: (len(e.absolute_path), -errors.index(e)))
    if err.validator in ("anyOf", "oneOf") and err.context:
        err = max(err.context, key=lambda e: len(e.absolute_path))
    path = field_path([*prefix, *err.absolute_path])
    at = f"{where}: {path}" if where else path
    raise InputError(source, at, _rule(err))


def string_schema(max_length: int = 200, **extra) -> dict:
    return {"type": "string", "minLength": 1, "maxLength": max_length, **extra}


def int_schema(minimum: int = INT_MIN, maximum: int = INT_MAX) -> dict:
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


def read_json_or_toml(path, *, what: str) -> Any:
    """A ``.json`` or ``.toml`` file read with every check above; the parsed value."""
    p = os.fspath(path)
    ext = os.path.splitext(p)[1].lower()
    if ext not in (".toml", ".json"):
        raise InputError(p, "", f"unknown {what} format {ext or '(no extension)'!r} (use .toml or .json)")
    text = decode_utf8(read_input(p, what=what), p)
    return parse_toml(text, p) if ext == ".toml" else parse_json(text, p)
