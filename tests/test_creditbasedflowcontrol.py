"""Credit-based flow control (model/creditbasedflowcontrol.py): the network mode's buffers,
credits and backlog against what Flink's classes do, the coarse default left as it was, and
the network family's unsafe variants breaking on actions their safe twin survives.

The network family's small scenario::

    tm0: source(0) ─┐ hash (remote, one connection tm0 -> tm1)
    tm0: source(1) ─┴──► tm1: agg(0) -> sink(0)
"""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import attrs
import pytest

from model.actions import AnnounceCredit, Deliver, SendBuffer, SourceEmit, SourceEnd, TriggerCheckpoint
from model.channels import Channels
from model.cluster import Cluster, RuntimeConfig, drain
from model import seams
from model import creditbasedflowcontrol
from model.creditbasedflowcontrol import EXCLUSIVE, FLOATING, UNBACKED, CreditBasedChannels, is_event
from model.errors import FlinkspecError
from model.events import END_OF_PARTITION, CancelCheckpointMarker, CheckpointBarrier, EndOfPartitionEvent, Watermark
from model.variants import small_scenario, variant
from spec.network import (credit_never_negative, network_buffers_conserved, network_stall_confined_to_gate,
                          received_within_credit)

NETWORK_INVARIANTS = (credit_never_negative, received_within_credit, network_buffers_conserved,
                      network_stall_confined_to_gate)


class _Run:
    """What the network invariants read of a run: its cluster."""

    def __init__(self, cluster):
        self.cluster = cluster


def _violations(c) -> list:
    return [v.invariant for inv in NETWORK_INVARIANTS for v in [inv(_Run(c))] if v is not None]


def _cluster(name: str, **settings) -> Cluster:
    """The variant's small scenario with ``settings`` (``Scenario.with_settings``)."""
    sc = small_scenario(variant(name))
    if settings:
        sc = sc.with_settings(**settings)
    return Cluster.from_scenario(sc)


def _channel_of(c, source_index: int) -> int:
    return next(ch.id for ch in c.eg.channels if ch.producer == c.source_tasks[source_index].id)


# -- the stack alone: CreditBasedChannels driven call by call ----------------------------------------
#
# Two producers (subtasks 0 and 1) on TaskManager tm0 and one consumer (subtask 9) on tm1, unless a
# test places them otherwise; records are tuples, as in the model's channels. Each call's effect is
# asserted on the tables right after it, as RemoteInputChannel, BufferManager and LocalBufferPool
# would leave them.

CONSUMER = 9
REC = ("k", 1, 0)


def _net(n=2, gates=None, b=2, f=1, aligned=True, blocking=None, consumers=None) -> CreditBasedChannels:
    consumers = consumers or [CONSUMER] * n
    chans = [SimpleNamespace(producer=i, consumer=q) for i, q in zip(range(n), consumers)]
    return CreditBasedChannels(chans, blocking or [False] * n, [list(range(n))] if gates is None else gates,
                               b, f, aligned)


def _placed(tms=None, **kw) -> CreditBasedChannels:
    """The stack placed: producer i on ``tms[i]`` (tm0 for all by default), the consumer on tm1."""
    net = _net(**kw)
    tms = tms or {}
    net.place(lambda s: "tm1" if s == CONSUMER else tms.get(s, "tm0"))
    return net


def test_a_new_stack_has_no_remote_channel_yet_and_full_gate_pools():
    net = _net(n=3, gates=[[0], [1]], b=2, f=3)
    assert net.network is True
    assert net.gate_channels == ((0,), (1,)) and net.gate_of == [0, 1, -1]  # channel 2 in no gate
    assert net.remote == [False] * 3 and net.conn_of == [-1] * 3
    for table in (net.arrived, net.credit, net.unannounced, net.required, net.exclusive, net.floating):
        assert table == [0, 0, 0]
    assert net.held == [deque(), deque(), deque()] and net.held[0] is not net.held[1]
    assert net.waiting == [False] * 3
    assert net.pool == [3, 3] and net.listeners == [[], []] and net.listeners[0] is not net.listeners[1]
    assert net.staged == []
    assert (net.buffers_per_channel, net.floating_per_gate, net.aligned_blocks) == (2, 3, True)
    assert net.credit_based is True and net.reader_checks_credit is True
    assert net.is_credit_based is True and net.checks_credit is True


def test_a_stack_without_input_gates_has_no_channel_in_a_gate():
    net = _net(n=2, gates=[])
    assert net.gate_of == [-1, -1] and net.gate_channels == () and net.pool == [] and net.listeners == []


def test_the_flags_are_read_from_their_definitions_when_the_stack_is_built():
    with seams.active(("pre-credit-network-stack",)):
        pre = _net()
    with seams.active(("sender-ignores-credit",)):
        ignoring = _net()
    assert (pre.credit_based, pre.reader_checks_credit) == (False, True)
    assert (ignoring.credit_based, ignoring.reader_checks_credit) == (True, False)


def test_placement_numbers_one_connection_per_pair_of_task_managers_and_sets_up_remote_channels():
    # 0: tm0 -> tm1, 1: tm2 -> tm1, 2: tm0 -> tm1 (0's connection), 3: tm1 -> tm1 (local),
    # 4: blocking (batch, read as in the coarse mode), 5: its producer not deployed
    net = _net(n=6, b=2, f=1, blocking=[False, False, False, False, True, False])
    net.unannounced[0] = net.arrived[0] = 5  # whatever a channel held before it became remote
    net.place(lambda s: {0: "tm0", 1: "tm2", 2: "tm0", 3: "tm1", 4: "tm0", 5: None}.get(s, "tm1"))
    assert net.remote == [True, True, True, False, False, False]
    assert net.conn_of == [0, 1, 0, -1, -1, -1]
    assert net.staged == [None, None]
    # requestSubpartition with the exclusive buffers as initial credit
    assert net.exclusive == [2, 2, 2, 0, 0, 0] and net.credit == [2, 2, 2, 0, 0, 0]
    assert net.required == [2, 2, 2, 0, 0, 0]
    assert net.unannounced[0] == 0 and net.arrived[0] == 0
    assert net.floating == [0] * 6 and net.pool == [1]


def test_the_pre_credit_stack_announces_no_initial_credit():
    with seams.active(("pre-credit-network-stack",)):
        net = _net(b=2)
    net.place(lambda s: "tm1" if s == CONSUMER else "tm0")
    assert net.exclusive == [2, 2] and net.credit == [0, 0] and net.required == [2, 2]


def test_a_channel_turned_local_releases_its_buffers_and_a_stopped_connection_keeps_its_stop():
    net = _placed(n=3, b=1, f=0, tms={0: "tm0", 1: "tm2", 2: "tm2"})
    assert net.conn_of == [0, 1, 1]
    net.staged[1] = 2                        # channel 2's connection (tm2 -> tm1) is not read
    net.floating[0] = 1
    # producer 0 moves to the consumer's TaskManager, 1 and 2 stay on tm2: channel 0 turns local
    net.place(lambda s: {0: "tm1", 1: "tm2", 2: "tm2"}.get(s, "tm1"))
    assert net.remote == [False, True, True] and net.conn_of == [-1, 0, 0]
    assert net.staged == [2]                  # under the connection's new index
    assert (net.exclusive[0], net.floating[0], net.credit[0], net.required[0]) == (0, 0, 0, 0)
    assert net.pool == [1]                    # the floating buffer back to the gate's pool
    assert (net.exclusive[1], net.credit[1]) == (1, 1)  # untouched


def test_a_staged_channel_that_turns_local_leaves_no_stop_behind():
    net = _placed(b=1, f=0)
    net.staged[0] = 1
    net.place(lambda s: "tm1")                # everything on one TaskManager
    assert net.staged == [] and net.remote == [False, False]


def test_a_reset_remote_channel_returns_every_floating_buffer_first_to_a_waiting_listener():
    """``releaseAllResources``: floating buffers (available or holding data) back to the gate's
    pool, which hands them to its registered listeners first; then fresh exclusive buffers."""
    net = _placed(b=1, f=0)
    net.floating[0] = 1
    net.queues[0].extend([REC, REC, REC])
    net.held[0].extend([FLOATING, EXCLUSIVE, FLOATING])
    net.arrived[0] = 3
    net.exclusive[0] = 0
    net.credit[0], net.unannounced[0], net.required[0] = 0, 1, 4
    net.waiting[0] = net.waiting[1] = True
    net.listeners[0] = [0, 1]
    net.required[1] = 2                       # channel 1 needs one buffer more
    net.staged = [0]
    net.blocked[0] = True
    net.reset(0)
    assert list(net.queues[0]) == [] and net.blocked[0] is False
    assert list(net.held[0]) == [] and net.staged == [None]
    assert (net.exclusive[0], net.floating[0], net.credit[0], net.unannounced[0], net.required[0],
            net.arrived[0]) == (1, 0, 1, 0, 1, 0)
    assert net.waiting == [False, False] and net.listeners == [[]]
    assert (net.floating[1], net.unannounced[1]) == (1, 1)  # the first of the three buffers
    assert net.pool == [2]                                   # the other two


def test_a_reset_local_channel_forgets_what_arrived():
    net = _placed(tms={0: "tm1"})
    assert net.remote == [False, True]
    net.queues[0].extend([REC])
    net.arrived[0] = 1
    net.reset(0)
    assert net.arrived[0] == 0 and list(net.queues[0]) == []
    assert (net.exclusive[0], net.credit[0]) == (0, 0)  # a LocalInputChannel has no buffers


def test_the_backlog_counts_the_unsent_data_buffers_and_is_zero_while_blocked():
    net = _placed()
    net.queues[0].extend([REC, REC, Watermark(5), CancelCheckpointMarker(1), REC, END_OF_PARTITION])
    net.arrived[0] = 1
    assert net.backlog(0) == 3               # REC, the watermark, REC: events are not backlog
    net.arrived[0] = 5
    assert net.backlog(0) == 0
    net.arrived[0] = 0
    assert net.backlog(0) == 4
    net.blocked[0] = True
    assert net.backlog(0) == 0


def test_a_subpartition_is_blocked_only_by_an_aligned_barrier_it_sent_or_the_alignment():
    net = _placed()
    net.queues[0].extend([REC, CheckpointBarrier(1, 0), REC])
    net.arrived[0] = 1
    assert net.sender_blocked(0) is False     # the barrier not sent yet
    net.arrived[0] = 2
    assert net.sender_blocked(0) is True      # sent, still in the receiver's queue
    net.queues[1].extend([CheckpointBarrier(2, 0, unaligned=True), REC])
    net.arrived[1] = 1
    assert net.sender_blocked(1) is False     # an unaligned barrier does not block
    net.blocked[1] = True
    assert net.sender_blocked(1) is True      # the consumer's alignment blocks the channel
    net.credit_based = False                  # the pre-credit stack never blocks
    assert net.sender_blocked(0) is False and net.sender_blocked(1) is False
    loose = _placed(aligned=False)            # a barrier that does not block upstream
    loose.queues[0].extend([CheckpointBarrier(1, 0)])
    loose.arrived[0] = 1
    loose.blocked[0] = True
    assert loose.sender_blocked(0) is False


def test_an_aligned_barrier_alone_in_the_receiver_s_queue_blocks_and_an_unaligned_one_does_not():
    net = _placed()
    net.queues[0].extend([CheckpointBarrier(1, 0), REC])
    net.arrived[0] = 1
    assert net.sender_blocked(0) is True
    net.queues[1].extend([CheckpointBarrier(1, 0, unaligned=True), REC])
    net.arrived[1] = 1
    assert net.sender_blocked(1) is False
    assert net.sender_refusal(0) == "channel 0's subpartition is blocked by an aligned barrier until the consumer resumes"
    assert net.sender_refusal(1) is None


def test_the_sender_refuses_with_the_reason_of_getAvailabilityAndBacklog():
    net = _placed(b=1, f=0)
    assert net.sender_refusal(0) == "channel 0's subpartition has no unsent buffer"
    net.queues[0].extend([REC])
    assert net.sender_refusal(0) is None      # credit 1
    net.credit[0] = 0
    assert net.sender_refusal(0) == "channel 0 has no credit for its next data buffer"
    net.queues[1].extend([CancelCheckpointMarker(3), REC])
    net.credit[1] = 0
    assert net.sender_refusal(1) is None      # an event needs no credit
    net.reader_checks_credit = False
    assert net.sender_refusal(0) is None
    net.reader_checks_credit = True
    net.blocked[0] = True
    assert net.sender_refusal(0) == "channel 0's subpartition is blocked by an aligned barrier until the consumer resumes"
    net.staged = [1]
    assert net.sender_refusal(0) == ("channel 0's connection is not read "
                                     "(a buffer of channel 1 waits for a buffer)")
    net.staged = [None]
    net.credit_based = False                  # pre-credit: no credit, no blocking
    assert net.sender_refusal(0) is None


class _ListenersRegisteredOnce(list):
    """A gate's buffer listeners, recorded: ``LocalBufferPool.addBufferListener`` is called once
    per wait (``BufferManager`` sets ``isWaitingForFloatingBuffers`` as it registers), so a
    channel already registered that registers again fails here, on the spot."""

    def append(self, c) -> None:
        assert c not in self, f"channel {c} registered as a buffer listener twice: {list(self)}"
        super().append(c)


def test_a_backlog_requests_floating_buffers_up_to_backlog_plus_initial_credit():
    net = _placed(b=2, f=3)
    net.listeners = [_ListenersRegisteredOnce()]
    net.on_sender_backlog(0, 2)
    assert (net.required[0], net.floating[0], net.pool, net.unannounced[0]) == (4, 2, [1], 2)
    assert net.waiting[0] is False and net.listeners == [[]]
    net.on_sender_backlog(0, 5)               # needs 7, has 4: the last of the pool, then waits
    assert (net.required[0], net.floating[0], net.pool, net.unannounced[0]) == (7, 3, [0], 3)
    assert net.waiting[0] is True and net.listeners == [[0]]
    net.on_sender_backlog(0, 6)               # already a listener: registered once
    assert net.required[0] == 8 and net.listeners == [[0]] and net.unannounced[0] == 3
    net.on_sender_backlog(1, 0)               # has its 2 exclusive buffers: nothing requested
    assert (net.required[1], net.floating[1], net.waiting[1]) == (2, 0, False)
    net.on_sender_backlog(0, 0)               # a smaller backlog lowers the requirement only
    assert (net.required[0], net.floating[0]) == (2, 3)


def test_an_event_is_sent_without_credit_and_tells_the_receiver_the_backlog():
    net = _placed(b=2, f=1)
    net.queues[0].extend([CancelCheckpointMarker(1), REC, REC])
    net.credit[0] = 0
    net.send(0)
    assert net.arrived[0] == 1 and net.credit[0] == 0 and list(net.held[0]) == []
    # onSenderBacklog(2): requestFloatingBuffers(2 + 2): the pool's one, then a listener
    assert net.required[0] == 4 and net.floating[0] == 1 and net.pool == [0]
    assert net.waiting[0] is True and net.listeners == [[0]] and net.unannounced[0] == 1


def test_a_data_buffer_takes_a_credit_and_a_buffer_floating_first():
    net = _placed(b=2, f=1)
    net.queues[0].extend([REC, REC])
    net.floating[0] = 1
    net.pool = [0]
    net.send(0)
    assert net.credit[0] == 1 and list(net.held[0]) == [FLOATING] and net.arrived[0] == 1
    assert net.required[0] == 3               # backlog 1 + initialCredit 2
    assert (net.floating[0], net.exclusive[0]) == (0, 2)
    assert net.waiting[0] is True and net.listeners == [[0]]
    net.send(0)
    assert net.credit[0] == 0 and list(net.held[0]) == [FLOATING, EXCLUSIVE] and net.arrived[0] == 2
    assert net.required[0] == 2               # backlog 0 + 2


def test_take_buffer_prefers_a_floating_buffer_then_an_exclusive_one():
    net = _placed(b=1)
    net.floating[0] = 1
    assert net._take_buffer(0) == FLOATING and (net.floating[0], net.exclusive[0]) == (0, 1)
    assert net._take_buffer(0) == EXCLUSIVE and (net.floating[0], net.exclusive[0]) == (0, 0)
    assert net._take_buffer(0) == UNBACKED and (net.floating[0], net.exclusive[0]) == (0, 0)


def test_the_pre_credit_receiver_takes_a_channel_buffer_then_the_gate_pool_then_stops_reading():
    with seams.active(("pre-credit-network-stack",)):
        net = _net(n=3, gates=[[0, 1], [2]], b=1, f=1)
    net.place(lambda s: "tm1" if s == CONSUMER else "tm0")
    for c in (0, 1):
        net.queues[c].extend([CancelCheckpointMarker(1), REC, REC])
    net.send(0)                               # an event: no buffer, no backlog request
    assert net.arrived[0] == 1 and net.required[0] == 1 and net.unannounced[0] == 0
    net.send(0)
    assert list(net.held[0]) == [EXCLUSIVE] and net.arrived[0] == 2 and net.credit[0] == 0
    net.send(0)
    assert list(net.held[0]) == [EXCLUSIVE, FLOATING] and net.pool == [0, 1] and net.arrived[0] == 3
    net.arrived[1] = 1
    net.exclusive[1] = 0
    net.send(1)                               # no buffer anywhere in its gate: the connection stops
    assert net.staged == [1] and net.arrived[1] == 1 and list(net.held[1]) == []
    assert net.pool == [0, 1]                 # the other gate's pool is not its


def test_add_credit_hands_all_the_unannounced_credit_to_the_sender():
    net = _placed(b=1)
    net.unannounced[0] = 3
    net.announce(0)
    assert (net.credit[0], net.unannounced[0]) == (4, 0)
    net.announce(0)
    assert (net.credit[0], net.unannounced[0]) == (4, 0)


def test_the_add_credit_lost_seam_drops_the_credit():
    net = _placed(b=1)
    net.unannounced[0] = 3
    with seams.active(("add-credit-lost",)):
        net.announce(0)
    assert (net.credit[0], net.unannounced[0]) == (1, 0)


def test_a_consumed_data_buffer_recycles_the_oldest_held_buffer_and_an_event_none():
    net = _placed(b=1, f=0)
    net.queues[0].extend([REC, CancelCheckpointMarker(1), REC])
    net.held[0].extend([FLOATING, EXCLUSIVE])
    net.arrived[0] = 3
    net.exclusive[0] = 0
    net.consumed(0, net.queues[0].popleft())
    assert net.arrived[0] == 2 and list(net.held[0]) == [EXCLUSIVE] and net.pool == [1]
    net.consumed(0, net.queues[0].popleft())  # the event's unpooled buffer is just freed
    assert net.arrived[0] == 1 and list(net.held[0]) == [EXCLUSIVE] and net.pool == [1]
    net.consumed(0, net.queues[0].popleft())
    assert net.arrived[0] == 0 and list(net.held[0]) == [] and net.exclusive[0] == 1
    assert net.unannounced[0] == 1


def test_a_recycled_exclusive_buffer_is_one_more_credit_unless_the_channel_has_more_than_it_requires():
    """``BufferManager.recycle`` -> ``addExclusiveBuffer``: with more buffers than required a
    floating one goes back to the pool (the total stays), else the exclusive one is new credit."""
    net = _placed(b=2, f=0)
    net.exclusive[0], net.floating[0], net.required[0] = 1, 1, 2
    net.recycle(0, EXCLUSIVE)                 # 3 > 2: a floating buffer back
    assert (net.exclusive[0], net.floating[0], net.unannounced[0], net.pool) == (2, 0, 0, [1])
    net.exclusive[0], net.floating[0], net.required[0] = 0, 1, 2
    net.recycle(0, EXCLUSIVE)                 # 2 == 2: kept, one credit more
    assert (net.exclusive[0], net.floating[0], net.unannounced[0], net.pool) == (1, 1, 1, [1])
    net.exclusive[0], net.floating[0], net.required[0] = 2, 0, 1
    net.recycle(0, EXCLUSIVE)                 # more than required but no floating buffer
    assert (net.exclusive[0], net.floating[0], net.unannounced[0], net.pool) == (3, 0, 2, [1])


def test_a_recycled_floating_buffer_goes_to_the_pool_and_an_unbacked_one_nowhere():
    net = _placed(b=1, f=0)
    net.recycle(0, FLOATING)
    assert net.pool == [1] and (net.floating[0], net.unannounced[0], net.exclusive[0]) == (0, 0, 1)
    net.recycle(0, UNBACKED)
    assert net.pool == [1] and (net.floating[0], net.unannounced[0], net.exclusive[0]) == (0, 0, 1)


def test_the_pool_hands_a_buffer_to_the_first_listener_that_still_needs_one():
    """``LocalBufferPool.recycle``: a listener with enough buffers is dropped (BUFFER_NOT_USED),
    one that needs more after this buffer registers again at the end (BUFFER_USED_NEED_MORE)."""
    net = _placed(n=3, b=1, f=0)
    net.required = [1, 3, 2]                  # 0 has enough; 1 needs two, 2 needs one
    net.waiting = [True, True, True]
    net.listeners[0] = [0, 1, 2]
    net._recycle_floating(0)
    assert net.listeners == [[2, 1]] and net.waiting == [False, True, True]
    assert (net.floating[1], net.unannounced[1], net.pool) == (1, 1, [0])
    net._recycle_floating(0)
    assert net.listeners == [[1]] and net.waiting == [False, True, False]
    assert (net.floating[2], net.unannounced[2]) == (1, 1)
    net._recycle_floating(0)
    assert net.listeners == [[]] and net.waiting == [False, False, False]
    assert (net.floating[1], net.unannounced[1]) == (2, 2)
    net._recycle_floating(0)
    assert net.pool == [1]


def test_a_freed_buffer_resumes_reading_only_a_connection_stopped_for_the_same_gate():
    with seams.active(("pre-credit-network-stack",)):
        net = _net(n=2, gates=[[0], [1]], b=1, f=0)
    net.place(lambda s: {0: "tm0", 1: "tm2"}.get(s, "tm1"))
    assert net.conn_of == [0, 1]
    for c in (0, 1):
        net.queues[c].extend([REC, REC])
        net.held[c].append(EXCLUSIVE)
        net.exclusive[c] = 0
        net.arrived[c] = 1
    net.staged = [0, 1]
    net._unstage(0)                           # nothing free in gate 0 yet
    assert net.staged == [0, 1]
    net.consumed(0, net.queues[0].popleft())  # its exclusive buffer back: channel 0's buffer placed
    assert net.staged == [None, 1]
    assert list(net.held[0]) == [EXCLUSIVE] and net.arrived[0] == 1 and net.exclusive[0] == 0
    assert list(net.held[1]) == [EXCLUSIVE] and net.arrived[1] == 1
    net.pool[1] = 1
    net._unstage(1)                           # a buffer in gate 1's pool
    assert net.staged == [None, None] and list(net.held[1]) == [EXCLUSIVE, FLOATING] and net.pool == [0, 0]


def test_the_stall_names_a_stopped_connection_and_the_channels_it_holds_up():
    net = _placed(n=3, b=1, f=0, tms={2: "tm2"})
    net.queues[0].extend([REC])               # behind the stop
    net.queues[1].extend([REC])
    net.queues[2].extend([REC])               # another connection
    net.staged = [1, None]
    assert net.stall() == "connection 0 is not read: a buffer of channel 1 waits for a free buffer, holding up channel 0"
    net.arrived[0] = 1                        # nothing unsent on channel 0
    assert net.stall() == "connection 0 is not read: a buffer of channel 1 waits for a free buffer"


def test_the_stall_names_the_channels_without_credit_and_none_to_announce():
    net = _placed(n=3, b=1, f=0, tms={2: "tm1"})  # channel 2 is local
    assert net.stall() is None
    for c in range(3):
        net.queues[c].extend([REC])
    net.credit = [0, 0, 0]
    assert net.stall() == "channel 0, channel 1 has no credit for its next data buffer"
    net.unannounced[1] = 1                    # credit on its way
    assert net.stall() == "channel 0 has no credit for its next data buffer"
    net.queues[0].appendleft(CancelCheckpointMarker(1))  # an event needs none
    assert net.stall() is None


def test_an_unaligned_barrier_arrives_on_a_remote_channel_only():
    net = _placed(tms={1: "tm1"})
    net.add_priority_event(0)
    net.add_priority_event(1)
    assert net.arrived == [1, 0]


def test_the_unsent_elements_bound_the_producer():
    net = _placed(tms={1: "tm1"})             # 0 remote, 1 local
    net.queues[0].extend([REC, REC, REC])
    net.arrived[0] = 1
    net.queues[1].extend([REC, REC])
    assert (net.unsent(0), net.unsent(1)) == (2, 2)
    assert net.backpressured([0], 3) is False and net.backpressured([0], 2) is True
    assert net.backpressured([0, 1], 3) is False and net.backpressured([1, 0], 2) is True
    assert net.backpressured([], 0) is False


def test_the_viewer_reads_every_table_of_a_remote_channel():
    net = _placed(b=2, f=1)
    net.queues[0].extend([REC, REC, Watermark(3)])
    net.send(0)
    assert net.buffers(0) == {"arrived": 1, "unsent": 2, "credit": 1, "unannounced": 1, "backlog": 2,
                              "exclusive": 1, "floating": 1, "held": EXCLUSIVE, "gate_pool": 0,
                              "blocked_upstream": False, "connection": "0"}
    net.staged = [1]
    assert net.buffers(0)["connection"] == "0, not read: a buffer of channel 1 waits for a free buffer"


def test_is_event_is_the_event_classes_exactly():
    assert creditbasedflowcontrol._EVENTS == (CheckpointBarrier, CancelCheckpointMarker, EndOfPartitionEvent)
    assert is_event(CheckpointBarrier(1, 0)) and is_event(CancelCheckpointMarker(1)) and is_event(END_OF_PARTITION)
    assert not is_event(REC) and not is_event(Watermark(1)) and not is_event(None)


def test_the_kinds_of_held_buffers_are_distinct_letters_as_the_viewer_joins_them():
    """The viewer shows a channel's held buffers as one letter each (``buffers``'s "held")."""
    kinds = (EXCLUSIVE, FLOATING, UNBACKED)
    assert all(isinstance(k, str) and len(k) == 1 for k in kinds) and len(set(kinds)) == 3
    net = _placed(b=1, f=1)
    net.queues[0].extend([REC, REC, REC])
    net.floating[0] = 1
    net.pool = [0]
    for _ in range(3):
        net.send(0)
    assert net.buffers(0)["held"] == FLOATING + EXCLUSIVE + UNBACKED


# -- the stack in whole clusters of the network family ------------------------------------------------


def test_the_coarse_mode_is_the_default_and_offers_no_network_action():
    assert RuntimeConfig().buffers_per_channel is None
    c = Cluster.from_scenario(small_scenario(variant("aligned-2pc")))
    assert type(c.net) is Channels and not c.net.network
    assert not [a for a in c.candidate_actions() if type(a) in (SendBuffer, AnnounceCredit)]


def test_bad_buffer_counts_are_refused_in_one_line():
    for bad in (dict(buffers_per_channel=0), dict(buffers_per_channel="2"), dict(floating_buffers_per_gate=-1)):
        with pytest.raises(FlinkspecError, match="buffers_per_channel|floating_buffers_per_gate"):
            RuntimeConfig(**bad)


def test_remote_channels_share_one_connection_and_start_with_their_exclusive_credit():
    c = _cluster("network-credit-aligned")
    net = c.net
    assert isinstance(net, CreditBasedChannels)
    assert net.remote == [True, True] and net.conn_of == [0, 0]  # sources on tm0, the keyed count on tm1
    assert net.credit == [1, 1] and net.exclusive == [1, 1] and net.pool == [1]
    assert _violations(c) == []


def test_a_data_buffer_needs_credit_an_event_does_not_and_the_backlog_tops_up_the_buffers():
    c = _cluster("network-credit-aligned")
    net = c.net
    ch = _channel_of(c, 0)
    c.step(SourceEmit(c.source_tasks[0].id))  # a record into ch's subpartition
    c.step(SendBuffer(ch))
    # the record took the exclusive buffer; onSenderBacklog(0) requests 0 + initialCredit buffers:
    # the gate's floating buffer, one unannounced credit
    assert net.credit[ch] == 0 and list(net.held[ch]) == [EXCLUSIVE] and net.arrived[ch] == 1
    assert net.floating[ch] == 1 and net.pool == [0] and net.unannounced[ch] == 1
    c.step(SourceEnd(c.source_tasks[0].id))  # MAX_WATERMARK (a data buffer) and EndOfPartition (an event)
    assert "no credit" in c.why_not_enabled(SendBuffer(ch))
    c.step(Deliver(ch))  # the exclusive buffer is back; the channel has more than it requires:
    assert net.exclusive[ch] == 1 and net.floating[ch] == 0 and net.pool == [1]  # addExclusiveBuffer
    assert net.unannounced[ch] == 1 and net.credit[ch] == 0                       # gave the floating one back
    c.step(AnnounceCredit(ch))  # AddCredit
    assert net.credit[ch] == 1 and net.unannounced[ch] == 0
    c.step(SendBuffer(ch))  # the watermark
    assert net.credit[ch] == 0 and "no credit" not in (c.why_not_enabled(SendBuffer(ch)) or "")
    c.step(SendBuffer(ch))  # EndOfPartition: an event, no credit needed
    assert net.credit[ch] == 0 and net.arrived[ch] == 2
    assert _violations(c) == []


def test_a_backlog_requests_floating_buffers_from_the_gate_and_a_recycled_one_goes_to_a_listener():
    c = _cluster("network-credit-aligned", channel_capacity=3)
    net = c.net
    a, b = _channel_of(c, 0), _channel_of(c, 1)
    src = c.source_tasks[0].id
    c.step(SourceEmit(src))
    c.step(SourceEnd(src))  # a record, MAX_WATERMARK, EndOfPartition in a's subpartition
    c.step(SendBuffer(a))   # the record, with a backlog of 1 (the watermark)
    # onSenderBacklog(1): requestFloatingBuffers(1 + 1): the gate's only floating buffer
    assert net.required[a] == 2 and net.floating[a] == 1 and net.pool == [0] and net.unannounced[a] == 1
    c.step(AnnounceCredit(a))
    c.step(SendBuffer(a))   # the watermark takes the floating buffer first (takeBuffer)
    assert list(net.held[a]) == [EXCLUSIVE, FLOATING]
    # the watermark's backlog is 0: a requires 1 buffer and has none available, the pool is
    # empty: a registers as a buffer listener; so does b, whose record comes with a backlog of 1
    assert net.required[a] == 1 and net.waiting[a]
    c.step(SourceEmit(c.source_tasks[1].id))
    c.step(SourceEnd(c.source_tasks[1].id))
    c.step(SendBuffer(b))
    assert net.required[b] == 2 and net.listeners == [[a, b]]
    c.step(Deliver(a))      # a's record: its exclusive buffer back to a (a needs no more)
    assert net.exclusive[a] == 1
    c.step(Deliver(a))      # a's watermark: the floating buffer passes a (BUFFER_NOT_USED) to b
    assert net.floating[b] == 1 and not net.waiting[a] and net.waiting[b] and net.listeners == [[b]]
    assert net.pool == [0] and net.unannounced[b] >= 1
    assert _violations(c) == []


def test_an_aligned_barrier_blocks_its_subpartition_until_the_alignment_ends():
    c = _cluster("network-credit-aligned")
    net = c.net
    a, b = _channel_of(c, 0), _channel_of(c, 1)
    c.step(TriggerCheckpoint())
    c.step(SourceEmit(c.source_tasks[0].id))  # a record behind the barrier on a
    c.step(SendBuffer(a))  # the barrier (an event: no credit)
    assert "blocked by an aligned barrier" in c.why_not_enabled(SendBuffer(a))
    assert net.backlog(a) == 0  # a blocked subpartition announces no backlog
    c.step(Deliver(a))  # the consumer blocks a for the alignment
    assert net.blocked[a] and "blocked by an aligned barrier" in c.why_not_enabled(SendBuffer(a))
    c.step(SendBuffer(b))
    c.step(Deliver(b))  # the alignment ends: resumeConsumption
    assert not net.blocked[a] and c.why_not_enabled(SendBuffer(a)) is None
    assert _violations(c) == []


def test_an_unaligned_barrier_arrives_at_once_ahead_of_the_received_buffers():
    c = _cluster("network-credit-unaligned")
    net = c.net
    a = _channel_of(c, 0)
    c.step(SourceEmit(c.source_tasks[0].id))
    c.step(SendBuffer(a))
    assert net.arrived[a] == 1
    c.step(TriggerCheckpoint())  # the barrier overtakes the received record (a priority event)
    assert net.arrived[a] == 2 and net.prio[a] == 1
    assert type(net.queues[a][0]) is CheckpointBarrier and net.queues[a][0].unaligned
    assert c.why_not_enabled(Deliver(a)) is None
    c.step(Deliver(a))
    assert net.arrived[a] == 1 and list(net.held[a]) == [EXCLUSIVE]
    assert _violations(c) == []


@pytest.mark.parametrize("name", ["network-credit-aligned", "network-credit-unaligned"])
def test_safe_network_runs_keep_every_network_invariant_and_drain_with_every_buffer_back(name):
    """Random walks of the variant's generated scenarios (failures reset channels)."""
    import random  # only this test draws random walks

    from model.variants import generate  # the walks' scenarios: failures included (channels reset)

    for seed in range(8):
        c = Cluster.from_scenario(generate(variant(name), seed))
        rng = random.Random(seed)
        for _ in range(150):
            acts = c.enabled_actions()
            if not acts:
                break
            c.step(rng.choice(acts))
            assert _violations(c) == [], (seed, c.trace)
            net = c.net
            # every available buffer is credit, announced or not (RemoteInputChannel's accounting)
            assert all(net.credit[ch] + net.unannounced[ch] == net.exclusive[ch] + net.floating[ch]
                       for ch in range(len(net.queues)) if net.remote[ch]), (seed, c.trace)
        drain(c)
        net = c.net
        assert all(not net.held[ch] and net.exclusive[ch] == net.buffers_per_channel
                   for ch in range(len(net.queues)) if net.remote[ch]), seed
        assert _violations(c) == []


def _same_actions(unsafe: str, script):
    """Run ``script`` on network-credit-aligned, then the same actions on ``unsafe``'s seam:
    (safe cluster, unsafe cluster, the violations the unsafe one reached)."""
    safe = _cluster("network-credit-aligned")
    script(safe)
    bad = Cluster.from_scenario(attrs.evolve(small_scenario(variant("network-credit-aligned")),
                                             config=variant(unsafe).config, seams=variant(unsafe).seams,
                                             scope=variant(unsafe).scope))
    seen = []
    for a in safe.trace:
        assert a in bad.enabled_actions(), a
        bad.step(a)
        seen += _violations(bad)
    return safe, bad, seen


def test_variant_buffer_leak_loses_the_buffer_the_safe_stack_recycles():
    def script(c):
        a = _channel_of(c, 0)
        c.step(SourceEmit(c.source_tasks[0].id))
        c.step(SendBuffer(a))
        c.step(Deliver(a))

    safe, bad, seen = _same_actions("network-buffer-leak", script)
    assert _violations(safe) == [] and safe.net.unannounced[_channel_of(safe, 0)] == 1
    assert "network_buffers_conserved" in seen


def test_variant_send_without_credit_overdraws_where_the_safe_sender_waits():
    cfg = dict(floating_buffers_per_gate=0)
    safe = _cluster("network-credit-aligned", **cfg)
    a = _channel_of(safe, 0)
    src = safe.source_tasks[0].id
    safe.step(SourceEmit(src))
    safe.step(SendBuffer(a))
    safe.step(SourceEnd(src))
    assert "no credit" in safe.why_not_enabled(SendBuffer(a))
    bad = _cluster("network-send-without-credit", **cfg)
    for act in safe.trace:
        bad.step(act)
    bad.step(SendBuffer(a))  # the watermark, without credit and without a buffer for it
    assert set(_violations(bad)) >= {"credit_never_negative", "received_within_credit"}


def test_variant_pre_credit_deadlocks_where_the_credit_based_stack_completes_the_checkpoint():
    """The explorer's 9-step deadlock: barrier on b, b blocked; b's record and watermark take the
    receiver's only buffer and stop the connection; a's barrier never arrives. The credit-based
    stack keeps b's subpartition blocked after the barrier, so a's barrier arrives."""
    cfg = dict(floating_buffers_per_gate=0)
    bad = _cluster("network-pre-credit", **cfg)
    a, b = _channel_of(bad, 0), _channel_of(bad, 1)
    src_a, src_b = bad.source_tasks[0].id, bad.source_tasks[1].id
    for act in (SourceEmit(src_a), TriggerCheckpoint(), SendBuffer(b), Deliver(b), SourceEmit(src_b),
                SendBuffer(b), SourceEnd(src_b), SendBuffer(b)):
        bad.step(act)
    assert bad.net.staged == [b]
    assert "not read" in bad.why_not_enabled(SendBuffer(a))
    with pytest.raises(FlinkspecError, match="stuck"):
        drain(bad)
    safe = _cluster("network-credit-aligned", **cfg)
    for act in (SourceEmit(src_a), TriggerCheckpoint(), SendBuffer(b), Deliver(b), SourceEmit(src_b)):
        safe.step(act)
    assert "blocked by an aligned barrier" in safe.why_not_enabled(SendBuffer(b))
    drain(safe)
    assert safe.is_drained() and 1 in safe.completed_ids


def test_variant_pre_credit_stall_holds_up_another_gates_channel():
    """With two keyed subtasks two input gates share the connection: a receiver without a
    buffer for one gate's channel stops the other gate's channel (the credit-based stack never
    stops reading the connection)."""
    from model.variants import Small  # only this test builds a second small scenario

    two = attrs.evolve(variant("network-pre-credit"), small=Small(sources=2, records=2, failures=0,
                                                                   network_consumers=2))
    sc = small_scenario(two)
    bad = Cluster.from_scenario(sc.with_settings(floating_buffers_per_gate=0, channel_capacity=4))
    net = bad.net
    assert len(net.gate_channels) == 2 and set(net.conn_of) == {0}
    src = bad.source_tasks[0].id
    for act in (SourceEmit(src), SourceEmit(src), SourceEnd(src)):  # records, a watermark and EoP to each gate
        bad.step(act)
    x = max((ch.id for ch in bad.eg.channels if ch.producer == src), key=net.unsent)  # (holds a record)
    bad.step(SendBuffer(x))  # a data buffer takes x's only buffer
    assert _violations(bad) == []
    bad.step(SendBuffer(x))  # the next finds none: the connection stops
    assert net.staged == [x]
    assert "network_stall_confined_to_gate" in _violations(bad)
    other = next(ch for ch in range(len(net.queues)) if net.gate_of[ch] != net.gate_of[x] and net.unsent(ch))
    assert "not read" in bad.why_not_enabled(SendBuffer(other))


def test_the_viewer_shows_buffers_credit_and_backlog_per_remote_channel_in_network_mode_only():
    from properties.timeline import snapshot  # the viewer's state panel (properties/timeline.py)

    c = _cluster("network-credit-aligned")
    a = _channel_of(c, 0)
    c.step(SourceEmit(c.source_tasks[0].id))
    c.step(SendBuffer(a))
    shown = snapshot(_Run(c))["channels"][f"ch{a}"]["network"]
    assert shown["arrived"] == 1 and shown["credit"] == 0 and shown["unannounced"] == 1
    assert shown["held"] == EXCLUSIVE and shown["floating"] == 1 and shown["gate_pool"] == 0
    assert shown["backlog"] == 0 and shown["blocked_upstream"] is False
    coarse = Cluster.from_scenario(small_scenario(variant("aligned-2pc")))
    assert all("network" not in ch for ch in snapshot(_Run(coarse))["channels"].values())


def test_a_new_placement_keeps_a_stopped_connection_stopped_and_makes_a_local_channel_coarse():
    c = _cluster("network-pre-credit", floating_buffers_per_gate=0)
    net = c.net
    a, b = _channel_of(c, 0), _channel_of(c, 1)
    src = c.source_tasks[1].id
    for act in (SourceEmit(src), SendBuffer(b), SourceEnd(src), SendBuffer(b)):
        c.step(act)
    assert net.staged == [b]
    agg = c.tasks[net.consumer_of[a]].id
    # a placement where source 0 shares the keyed count's TaskManager: channel a turns local
    # (its buffers go back), b's connection keeps its stop under its new index
    net.place(lambda s: "tm1" if s in (agg, c.source_tasks[0].id) else "tm0")
    assert not net.remote[a] and net.remote[b] and net.exclusive[a] == 0 and net.pool == [0]
    assert net.staged == [b] and net.conn_of[b] == 0
    assert _violations(c) == []
