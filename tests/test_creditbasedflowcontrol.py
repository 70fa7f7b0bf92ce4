"""Credit-based flow control (model/creditbasedflowcontrol.py): the network mode's buffers,
credits and backlog against what Flink's classes do, the coarse default left as it was, and
the network family's unsafe variants breaking on actions their safe twin survives.

The network family's small scenario::

    tm0: source(0) ─┐ hash (remote, one connection tm0 -> tm1)
    tm0: source(1) ─┴──► tm1: agg(0) -> sink(0)
"""

from __future__ import annotations

import attrs
import pytest

from model.actions import AnnounceCredit, Deliver, SendBuffer, SourceEmit, SourceEnd, TriggerCheckpoint
from model.channels import Channels
from model.cluster import Cluster, RuntimeConfig, drain
from model.creditbasedflowcontrol import EXCLUSIVE, FLOATING, CreditBasedChannels
from model.errors import FlinkspecError
from model.events import CheckpointBarrier
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


def _cluster(name: str, **config) -> Cluster:
    sc = small_scenario(variant(name))
    if config:
        sc = attrs.evolve(sc, config=attrs.evolve(sc.config, **config))
    return Cluster.from_scenario(sc)


def _channel_of(c, source_index: int) -> int:
    return next(ch.id for ch in c.eg.channels if ch.producer == c.source_tasks[source_index].id)


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
                                             config=variant(unsafe).config))
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
    bad = Cluster.from_scenario(attrs.evolve(sc, config=attrs.evolve(sc.config, floating_buffers_per_gate=0,
                                                                      channel_capacity=4)))
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
