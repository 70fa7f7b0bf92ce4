"""The stream elements besides records (``model.events``), each asserted as a value: Java's long
bounds, the shared constants, ``CheckpointBarrier``'s defaults and
``CheckpointOptions.withUnalignedUnsupported`` on every combination of its options."""

from __future__ import annotations

import copy
import itertools

import attrs
import pytest

from model import events
from model.events import (ACTIVE, END_OF_PARTITION, IDLE, MAX_WATERMARK, CancelCheckpointMarker, CheckpointBarrier,
                          EndOfPartitionEvent, Watermark, WatermarkStatus)


def test_the_long_bounds_are_javas():
    assert events.LONG_MIN == -9223372036854775808 == -(2**63)
    assert events.LONG_MAX == 9223372036854775807 == 2**63 - 1
    assert type(events.LONG_MIN) is int and type(events.LONG_MAX) is int


def test_the_constants():
    # Watermark.MAX_WATERMARK, WatermarkStatus.IDLE / ACTIVE, EndOfPartitionEvent.INSTANCE
    assert type(MAX_WATERMARK) is Watermark and MAX_WATERMARK.timestamp == events.LONG_MAX
    assert type(IDLE) is WatermarkStatus and IDLE.idle is True
    assert type(ACTIVE) is WatermarkStatus and ACTIVE.idle is False
    assert IDLE != ACTIVE
    assert type(END_OF_PARTITION) is EndOfPartitionEvent and END_OF_PARTITION == EndOfPartitionEvent()


# explicit ids: a node id must not depend on the values (a mutant may make a constant None)
@pytest.mark.parametrize("element", [Watermark(7), MAX_WATERMARK, IDLE, ACTIVE, CheckpointBarrier(3, 9, unaligned=True),
                                     CancelCheckpointMarker(4), END_OF_PARTITION],
                         ids=["watermark", "max-watermark", "idle", "active", "barrier", "cancel", "end-of-partition"])
def test_a_copy_of_an_element_is_the_element_itself(element):
    assert copy.copy(element) is element
    assert copy.deepcopy(element) is element
    assert copy.deepcopy({"k": [element]})["k"][0] is element


def test_value_makes_copies_return_the_object_itself():
    @events.value
    @attrs.frozen
    class Point:
        x: int

    p = Point(3)
    assert copy.copy(p) is p and copy.deepcopy(p) is p
    assert copy.deepcopy([p, {"k": p}])[1]["k"] is p


def test_a_barriers_options_default_to_an_aligned_checkpoint():
    b = CheckpointBarrier(5, 11)
    assert (b.id, b.timestamp) == (5, 11)
    assert b.savepoint is False and b.unaligned is False and b.timeoutable is False and b.forced_aligned is False
    assert attrs.astuple(b) == (5, 11, False, False, False, False)


@pytest.mark.parametrize("savepoint,unaligned,timeoutable", list(itertools.product((False, True), repeat=3)))
def test_with_unaligned_unsupported(savepoint, unaligned, timeoutable):
    b = CheckpointBarrier(8, 21, savepoint=savepoint, unaligned=unaligned, timeoutable=timeoutable)
    out = b.with_unaligned_unsupported()
    if unaligned or timeoutable:
        # FORCED_ALIGNED: aligned, never timing out, the same id, timestamp and kind
        assert attrs.astuple(out) == (8, 21, savepoint, False, False, True)
        assert type(out) is CheckpointBarrier
    else:
        assert out is b
