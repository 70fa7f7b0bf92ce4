"""The breadth-first search spilled to disk: the set of fingerprints seen, the level being built
and the frontier kept within a memory budget, the rest in files, as TLC's disk-based
fingerprint set and state queue keep them (``properties.explore``; ``Limits.spill_memory``).

* **The seen set** (:class:`SeenSet`): the fingerprints (``Run.fingerprint``: 32 hex digits, a
  16-byte BLAKE2b digest) in a Python set while it holds fewer than its budget; past it, the set
  is written out as a *run*: a file of the 16-byte digests, sorted, and emptied. At most
  ``MAX_RUNS`` runs are kept: more are merged into one. A child not in the set in memory is a
  *candidate*: at the end of its level the candidates, in fingerprint order, are looked up in
  every run by one forward pass over it (:class:`Lookup`), and those found there are dropped.
* **The level being built** (``properties.explore.Level`` with a spill): the new states, kept
  as their traces, written out in fingerprint order (a pickled batch of records at a time) each
  time the level holds more than its budget; at the level's end the files and what is left in
  memory are merged by fingerprint (:func:`merged`), each state once, by the one rule of the
  search (``Level.add``: the smallest key keeps it, the sleep sets are intersected).
* **The frontier** (:class:`SpilledFrontier`): the new states of a level, once more than the
  budget holds, written in trace-key order in sorted chunks and read back, merged, in that
  order when the next level is expanded (``properties.explore.Rebuilder`` rebuilds each state
  from its trace).
* Every file of a level or chunk of a frontier is open while they are merged, each holding a
  batch of records: past ``MAX_FILES`` they are merged into one (:func:`merge_files`).

Every file lives in one folder made for the search (``tempfile.mkdtemp`` under
``Limits.spill_dir``, or the system's temporary folder), removed when the search ends, by a
limit, a stop request, a violation or an error. The bytes the files hold are counted against
``Limits.max_disk``; past it, or when the disk is full, :class:`SpillLimit` ends the search
``bounded`` with that reason. This module knows fingerprints, records and files only; the
search's rules stay in ``properties.explore``.
"""

from __future__ import annotations

import errno
import heapq
import pickle
import shutil
import tempfile
from bisect import bisect_left, bisect_right
from pathlib import Path

from model.errors import FlinkspecError

#: bytes of a fingerprint on disk (``Run.fingerprint`` is 32 hex digits)
FP_BYTES = 16
#: bytes a fingerprint costs in the set in memory (a 32-character str and its slot; measured,
#: docs/exploration.md "Memory")
SEEN_ENTRY = 100
#: bytes a new state kept as its trace costs in the level being built (its key, trace tuple,
#: sleep set and fingerprint; measured as above)
LEVEL_ENTRY = 500
#: runs of the seen set kept before they are merged into one
MAX_RUNS = 8
#: fingerprints read from a run at a time (128 KB), and at most the candidates looked up at a time
BLOCK = 1 << 13
#: records pickled at a time
BATCH = 1024
#: files of one level, or chunks of one frontier, read at once before they are merged into one
#: (each open file holds a batch of records in memory)
MAX_FILES = 32


class SpillLimit(Exception):
    """The search cannot spill any more: ``reason`` is the bound on the spill's bytes
    (``max_disk=...``) or the full disk."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Spill:
    """The spill folder of one search and its budget: ``memory`` bytes for the seen set in
    memory and the level being built (half each); ``max_disk`` bytes at most in its files
    (``max_disk_label`` names the bound in a result)."""

    def __init__(self, memory: int, parent=None, max_disk: int | None = None, max_disk_label: str | None = None):
        self.parent = None if parent is None else str(parent)
        #: the folder, made when the first file is written (a search that never spills makes none)
        self.dir: Path | None = None
        self.memory = memory
        #: fingerprints the seen set holds in memory before it is written out
        self.seen_budget = max(memory // 2 // SEEN_ENTRY, 1)
        #: states the level being built (and the frontier) hold in memory before they are written out
        self.level_budget = max(memory // 2 // LEVEL_ENTRY, 1)
        self.max_disk = max_disk
        self.max_disk_label = max_disk_label or f"max_disk={max_disk}"
        #: bytes the files hold now, and at most so far
        self.disk = 0
        self.peak_disk = 0
        #: what was written: the seen set's runs, the level's files, the frontier's chunks
        self.written = {"seen": 0, "level": 0, "frontier": 0}
        self._names = 0

    def path(self, what: str) -> Path:
        """A new file's path (the folder is made first if need be; if it cannot be: :class:`SpillLimit`)."""
        if self.dir is None:
            try:
                self.dir = Path(tempfile.mkdtemp(prefix="flinkspec-explore-spill-", dir=self.parent))
            except OSError as e:
                where = self.parent if self.parent is not None else tempfile.gettempdir()
                raise SpillLimit(f"no spill folder in {where}: {e.strerror or e}") from None
        self._names += 1
        self.written[what] += 1
        return self.dir / f"{what}-{self._names}"

    def write(self, path: Path, chunks) -> int:
        """Write the byte strings ``chunks`` to ``path``; its size. Past ``max_disk`` or on a full
        disk: :class:`SpillLimit` (the part written is removed)."""
        n = 0
        try:
            with open(path, "wb") as f:
                for c in chunks:
                    if self.max_disk is not None and self.disk + n + len(c) > self.max_disk:
                        raise SpillLimit(self.max_disk_label)
                    f.write(c)
                    n += len(c)
        except SpillLimit:
            path.unlink(missing_ok=True)
            raise
        except OSError as e:
            path.unlink(missing_ok=True)
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise SpillLimit(f"disk full ({self.dir})") from None
            raise FlinkspecError(f"cannot write the search's spill file {path}: {e.strerror or e}") from None
        self.disk += n
        self.peak_disk = max(self.peak_disk, self.disk)
        return n

    def remove(self, path: Path, size: int) -> None:
        path.unlink(missing_ok=True)
        self.disk -= size

    def close(self) -> None:
        """Remove the folder and every file in it."""
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)


def _fp_blocks(fps) -> "iter[bytes]":
    """The 16-byte digests ``fps`` (in order), joined a block at a time."""
    block = []
    for fp in fps:
        block.append(fp)
        if len(block) == BLOCK:
            yield b"".join(block)
            block = []
    if block:
        yield b"".join(block)


def _read_fps(path: Path):
    """The 16-byte digests of a run, in order."""
    with open(path, "rb") as f:
        while True:
            data = f.read(BLOCK * FP_BYTES)
            if not data:
                return
            yield from (data[i:i + FP_BYTES] for i in range(0, len(data), FP_BYTES))


class SeenSet:
    """The fingerprints seen (hex strings, as ``Run.fingerprint`` gives them): a set in memory,
    and with a ``spill``, sorted runs of 16-byte digests on disk (the module docstring).
    ``fp in seen`` asks the set in memory only: a fingerprint not there is a candidate, looked
    up on disk at the end of its level (:meth:`lookup`)."""

    def __init__(self, fps=(), spill: Spill | None = None):
        self.memory: set = set(fps)
        self.spill = spill
        #: the runs on disk: ``(path, fingerprints, bytes)``
        self.runs: list = []
        self.on_disk = 0
        #: how many times the set in memory was written out (worker processes then empty their copies)
        self.flushes = 0

    def __contains__(self, fp) -> bool:
        return fp in self.memory

    def __len__(self) -> int:
        return len(self.memory) + self.on_disk

    def update(self, fps) -> None:
        self.memory.update(fps)

    def __iter__(self):
        """Every fingerprint, in order (memory and disk merged)."""
        return heapq.merge(sorted(self.memory), *((d.hex() for d in _read_fps(p)) for p, _n, _b in self.runs))

    def digests(self):
        """Every fingerprint as its 16 bytes, in order."""
        return heapq.merge(sorted(bytes.fromhex(h) for h in self.memory), *(_read_fps(p) for p, _n, _b in self.runs))

    def settle(self) -> None:
        """Write the set in memory out as a run if it holds more than its budget; merge the
        runs if there are more than ``MAX_RUNS``."""
        if self.spill is not None and len(self.memory) > self.spill.seen_budget:
            digests = sorted(bytes.fromhex(h) for h in self.memory)
            self._add_run(digests, len(digests))
            self.memory.clear()
            self.flushes += 1
        self._merge()

    def _add_run(self, digests, count: int | None = None) -> None:
        path = self.spill.path("seen")
        counter = [0]

        def counted():
            for d in digests:
                counter[0] += 1
                yield d

        size = self.spill.write(path, _fp_blocks(counted()))
        n = counter[0] if count is None else count
        if n:
            self.runs.append((path, n, size))
            self.on_disk += n
        else:
            self.spill.remove(path, size)

    def _merge(self) -> None:
        if len(self.runs) <= MAX_RUNS:
            return
        old, self.runs = self.runs, []
        self.on_disk -= sum(n for _p, n, _b in old)
        self._add_run(heapq.merge(*(_read_fps(p) for p, _n, _b in old)))  # (no digest is in two runs)
        for p, _n, b in old:
            self.spill.remove(p, b)

    def lookup(self) -> "Lookup":
        return Lookup([p for p, _n, _b in self.runs])

    def adder(self) -> "Adder":
        return Adder(self)


class Lookup:
    """Looks candidates up in the runs of a seen set, batch after batch in increasing order:
    one forward pass over each run for the whole level."""

    def __init__(self, paths: list):
        self.cursors = [[open(p, "rb"), [], False] for p in paths]  # file, the block read, at its end

    def known(self, digests: list) -> set:
        """Those of ``digests`` (sorted, each above the last batch's) found on disk."""
        found = set()
        n = len(digests)
        for cur in self.cursors:
            f, block, end = cur
            i = 0
            while i < n and not end:
                if not block or block[-1] < digests[i]:
                    data = f.read(BLOCK * FP_BYTES)
                    if not data:
                        end = True
                        break
                    last = data[-FP_BYTES:]
                    if last < digests[i]:  # nothing of this batch in the block
                        block = [last]
                        continue
                    block = [data[j:j + FP_BYTES] for j in range(0, len(data), FP_BYTES)]
                    continue
                hi = bisect_right(digests, block[-1], i)
                for d in digests[i:hi]:
                    if block[bisect_left(block, d)] == d:
                        found.add(d)
                i = hi
            cur[1], cur[2] = block, end
        return found

    def close(self) -> None:
        for f, _b, _e in self.cursors:
            f.close()
        self.cursors = []


class Adder:
    """Adds new fingerprints, given in increasing order, to a seen set: into the set in memory
    while it has room, the rest into a new run (registered at :meth:`close`)."""

    def __init__(self, seen: SeenSet):
        self.seen = seen
        self.rest: list = []
        self.path = None
        self.file = None
        self.size = 0
        self.count = 0

    def add(self, fp: str) -> None:
        seen = self.seen
        if seen.spill is None or len(seen.memory) < seen.spill.seen_budget:
            seen.memory.add(fp)
            return
        self.rest.append(bytes.fromhex(fp))
        if len(self.rest) >= BLOCK:
            self._write()

    def _write(self) -> None:
        spill = self.seen.spill
        if self.path is None:
            self.path = spill.path("seen")
            spill.write(self.path, ())
        data = b"".join(self.rest)
        if spill.max_disk is not None and spill.disk + len(data) > spill.max_disk:
            raise SpillLimit(spill.max_disk_label)
        try:
            with open(self.path, "ab") as f:
                f.write(data)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise SpillLimit(f"disk full ({spill.dir})") from None
            raise FlinkspecError(f"cannot write the search's spill file {self.path}: {e.strerror or e}") from None
        spill.disk += len(data)
        spill.peak_disk = max(spill.peak_disk, spill.disk)
        self.size += len(data)
        self.count += len(self.rest)
        self.rest = []

    def close(self) -> None:
        if self.rest:
            self._write()
        if self.path is not None:
            seen = self.seen
            if self.count:
                seen.runs.append((self.path, self.count, self.size))
                seen.on_disk += self.count
            else:
                seen.spill.remove(self.path, self.size)
            seen.flushes += 1  # (the workers' copies never held these)
            seen._merge()


def write_records(spill: Spill, what: str, records) -> tuple:
    """Write ``records`` (in the order given) to a new file of the spill; ``(path, bytes)``."""
    path = spill.path(what)

    def batches():
        batch = []
        for r in records:
            batch.append(r)
            if len(batch) == BATCH:
                yield pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
                batch = []
        if batch:
            yield pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)

    return path, spill.write(path, batches())


def read_records(path: Path):
    """The records of a file :func:`write_records` wrote, in order."""
    with open(path, "rb") as f:
        while True:
            try:
                batch = pickle.load(f)
            except EOFError:
                return
            yield from batch


def merge_files(spill: Spill, what: str, files: list, key, combine=None) -> tuple:
    """The record files ``files`` (``(path, bytes)``, each in ``key`` order) merged into one new
    file (``combine``: what makes of the merged stream, e.g. one record a state); the old files
    removed."""
    stream = heapq.merge(*(read_records(p) for p, _b in files), key=key)
    out = write_records(spill, what, combine(stream) if combine is not None else stream)
    for p, b in files:
        spill.remove(p, b)
    return out


class SpilledFrontier:
    """A frontier written to disk in sorted chunks of ``(key, trace, sleep)``: iterated, it gives
    ``(trace, None, sleep)`` in key order (the chunks merged), as the frontier list does."""

    def __init__(self, spill: Spill, chunks: list, count: int):
        self.spill = spill
        self.chunks = chunks  # (path, bytes)
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        for _key, trace, sleep in heapq.merge(*(read_records(p) for p, _b in self.chunks), key=lambda r: r[0]):
            yield trace, None, sleep

    def close(self) -> None:
        for p, b in self.chunks:
            self.spill.remove(p, b)
        self.chunks = []
