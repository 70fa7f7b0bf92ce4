"""The exactly-once oracle's comparison: a structured diff of sink outputs.

Invariant upheld: ``diff_outputs(expected, actual, mode=...)`` is empty (``ok``) exactly
when ``actual`` has the promised relation to ``expected``:

* ``multiset`` -- equal as multisets of ``(key, value, timestamp)`` records (per key and
  window, order ignored): the check after draining a faulty run against the sequential,
  failure-free run with parallelism 1;
* ``upsert``   -- the final value per key is equal (last record per key in list order);
* ``prefix``   -- ``actual`` is a sub-multiset of ``expected``: nothing unexpected and no
  record more often than expected (missing records are fine: the run is not finished).
  Used while running: committed sink output is always part of the oracle's output.

This follows the "failure transparency" criterion of Veresov, Spenger, Carbone and Haller
(ECOOP 2024): a run with failures must be indistinguishable, at the sink, from a run
without. Flink promises no order across keys or windows, so none is checked.

Records are ``(key, value, timestamp)`` sequences (a fourth element, e.g. the sink subtask
of ``ExternalSystem.committed``, is ignored) or objects with ``key``/``value``/``timestamp``
attributes. The window of a window result is its timestamp (``window.maxTimestamp()``).

Leaves out: the sequential reference run itself (the lead's p=1 run) and order checks
within a key.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

import attrs

from model.errors import InvalidArgument

MODES = ("multiset", "upsert", "prefix")


@attrs.frozen(slots=True)
class DiffEntry:
    """One record value at ``(key, timestamp)`` seen ``actual`` times, expected ``expected``."""

    key: object
    timestamp: object
    value: object
    expected: int
    actual: int

    def to_dict(self) -> dict:
        return {
            "key": _jsonable(self.key),
            "timestamp": _jsonable(self.timestamp),
            "value": _jsonable(self.value),
            "expected": self.expected,
            "actual": self.actual,
        }


@attrs.frozen(slots=True)
class OutputDiff:
    """The difference between expected and actual sink output.

    ``missing``: expected more often than seen. ``duplicated``: an expected record seen more
    often than expected. ``unexpected``: a record that is not in the expected output at all
    (a wrong value, key or window). Entries are sorted by (key, timestamp, value).
    """

    mode: str
    missing: tuple = ()
    duplicated: tuple = ()
    unexpected: tuple = ()
    expected_count: int = 0
    actual_count: int = 0

    @property
    def ok(self) -> bool:
        return not (self.missing or self.duplicated or self.unexpected)

    def __bool__(self) -> bool:  # a diff is "truthy" when there is a difference
        return not self.ok

    def keys(self) -> list:
        """The keys with any difference, sorted."""
        ks = {e.key for e in self.missing} | {e.key for e in self.duplicated} | {e.key for e in self.unexpected}
        return sorted(ks, key=_order)

    def by_key(self) -> dict:
        """key -> {"missing": [...], "duplicated": [...], "unexpected": [...]} (sorted keys)."""
        out: dict = {}
        for name in ("missing", "duplicated", "unexpected"):
            for e in getattr(self, name):
                out.setdefault(e.key, {"missing": [], "duplicated": [], "unexpected": []})[name].append(e)
        return {k: out[k] for k in sorted(out, key=_order)}

    def to_dict(self) -> dict:
        return {
            "mode": self.mode,
            "ok": self.ok,
            "expected_count": self.expected_count,
            "actual_count": self.actual_count,
            "missing": [e.to_dict() for e in self.missing],
            "duplicated": [e.to_dict() for e in self.duplicated],
            "unexpected": [e.to_dict() for e in self.unexpected],
        }

    def describe(self, limit: int = 3) -> str:
        """A short human summary, e.g. ``multiset: 2 missing, 1 duplicated (...)``."""
        if self.ok:
            return f"{self.mode}: ok ({self.actual_count} actual records match {self.expected_count} expected)"
        parts = []
        for name in ("missing", "duplicated", "unexpected"):
            es = getattr(self, name)
            if es:
                n = sum(abs(e.expected - e.actual) if name != "unexpected" else e.actual for e in es)
                parts.append(f"{n} {name}")
        lines = [f"{self.mode}: " + ", ".join(parts) + f" (expected {self.expected_count} records, got {self.actual_count})"]
        for name in ("missing", "duplicated", "unexpected"):
            for e in getattr(self, name)[:limit]:
                lines.append(
                    f"  {name}: key={e.key!r} ts={e.timestamp!r} value={e.value!r} "
                    f"(expected {e.expected}, actual {e.actual})"
                )
            extra = len(getattr(self, name)) - limit
            if extra > 0:
                lines.append(f"  ... {extra} more {name}")
        return "\n".join(lines)


def _jsonable(x):
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, (tuple, list)):
        return [_jsonable(v) for v in x]
    return repr(x)


def _order(x):
    """A total, deterministic sort key over mixed key types."""
    if isinstance(x, bool):
        return (1, int(x), "")
    if isinstance(x, (int, float)):
        return (1, x, "")
    if isinstance(x, str):
        return (2, 0, x)
    if x is None:
        return (0, 0, "")
    return (3, 0, repr(x))


def _entry_order(e: DiffEntry):
    return (_order(e.key), _order(e.timestamp), _order(e.value))


def _normalize(records: Iterable, name: str) -> list:
    """Records as a list of ``(key, value, timestamp)`` tuples."""
    if records is None:
        raise InvalidArgument(f"{name}: must be a list of (key, value, timestamp) records, got None")
    out = []
    append = out.append
    for i, r in enumerate(records):
        t = type(r)
        if t is tuple or t is list:
            n = len(r)
            if n == 3:
                append(r if t is tuple else tuple(r))
                continue
            if n == 4:
                append((r[0], r[1], r[2]))
                continue
        elif hasattr(r, "key") and hasattr(r, "value") and hasattr(r, "timestamp"):
            append((r.key, r.value, r.timestamp))
            continue
        raise InvalidArgument(
            f"{name}[{i}] = {r!r}: a sink record must be (key, value, timestamp) "
            "(optionally followed by the sink subtask)"
        )
    return out


def _counter(records: list, name: str) -> Counter:
    try:
        return Counter(records)
    except TypeError:
        for i, r in enumerate(records):
            try:
                hash(r)
            except TypeError:
                raise InvalidArgument(f"{name}[{i}] = {r!r}: key, value and timestamp must be hashable") from None
        raise  # pragma: no cover


def diff_outputs(expected: Iterable, actual: Iterable, *, mode: str = "multiset") -> OutputDiff:
    """Compare sink outputs; see the module docstring for the modes."""
    if mode not in MODES:
        raise InvalidArgument(f"mode={mode!r}: must be one of {', '.join(MODES)}")
    exp = _normalize(expected, "expected")
    act = _normalize(actual, "actual")
    if mode == "upsert":
        return _diff_upsert(exp, act)
    ce = _counter(exp, "expected")
    ca = _counter(act, "actual")
    missing = []
    duplicated = []
    unexpected = []
    if ce != ca:
        for rec, n in ce.items():
            m = ca.get(rec, 0)
            if m < n and mode == "multiset":
                missing.append(DiffEntry(rec[0], rec[2], rec[1], n, m))
            elif m > n:
                duplicated.append(DiffEntry(rec[0], rec[2], rec[1], n, m))
        for rec, m in ca.items():
            if rec not in ce:
                unexpected.append(DiffEntry(rec[0], rec[2], rec[1], 0, m))
    missing.sort(key=_entry_order)
    duplicated.sort(key=_entry_order)
    unexpected.sort(key=_entry_order)
    return OutputDiff(mode, tuple(missing), tuple(duplicated), tuple(unexpected), len(exp), len(act))


def _final_per_key(records: list) -> dict:
    final = {}
    for k, v, ts in records:
        final[k] = (v, ts)
    return final


def _diff_upsert(exp: list, act: list) -> OutputDiff:
    fe = _final_per_key(exp)
    fa = _final_per_key(act)
    missing = []
    unexpected = []
    for k, (v, ts) in fe.items():
        got = fa.get(k)
        if got is None:
            missing.append(DiffEntry(k, ts, v, 1, 0))
        elif got[0] != v:
            missing.append(DiffEntry(k, ts, v, 1, 0))
            unexpected.append(DiffEntry(k, got[1], got[0], 0, 1))
    for k, (v, ts) in fa.items():
        if k not in fe:
            unexpected.append(DiffEntry(k, ts, v, 0, 1))
    missing.sort(key=_entry_order)
    unexpected.sort(key=_entry_order)
    return OutputDiff("upsert", tuple(missing), (), tuple(unexpected), len(fe), len(fa))
