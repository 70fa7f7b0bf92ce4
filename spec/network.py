"""The network stack's credit-based flow control (``model.creditbasedflowcontrol``): what must
hold of buffers, credit and backlog in network mode (``RuntimeConfig.buffers_per_channel``).

In the coarse mode (the default) there are no buffers or credits and every invariant here
holds trivially. Progress -- no deadlock of the network stack -- is ``run_drains``
(spec/exactly_once.py: a run that no action can drain is stuck) together with
``checkpoints_keep_completing`` (spec/checkpoint.py: an alignment that never ends stalls every
later checkpoint).
"""

from __future__ import annotations

from model.creditbasedflowcontrol import EXCLUSIVE, FLOATING, UNBACKED, is_event
from spec.coverage import goal
from spec.invariant import Violation, invariant


def _remote(net):
    return [c for c in range(len(net.queues)) if net.remote[c]]


@invariant(
    "credit_never_negative",
    kind="always",
    concept="credit-based flow control (CreditBasedSequenceNumberingViewReader.numCreditsAvailable, "
            "RemoteInputChannel.unannouncedCredit)",
    statement="In network mode no remote channel's credit -- the sender's, or the receiver's unannounced "
              "credit -- is ever negative.",
)
def credit_never_negative(run) -> Violation | None:
    net = run.cluster.net
    if not net.network:
        return None
    for c in _remote(net):
        if net.credit[c] < 0 or net.unannounced[c] < 0:
            return Violation(invariant="credit_never_negative", expected=">= 0",
                             actual={"channel": c, "credit": net.credit[c], "unannounced": net.unannounced[c]},
                             message=f"channel {c}: credit {net.credit[c]}, unannounced {net.unannounced[c]}")
    return None


@invariant(
    "received_within_credit",
    kind="always",
    concept="credit-based flow control (a data buffer is sent only against a credit, so it finds a buffer: "
            "RemoteInputChannel.onBuffer)",
    statement="In network mode a remote channel never holds more data buffers than it gave credit for: every "
              "data buffer that crossed the network sits in one of the channel's exclusive or floating buffers.",
)
def received_within_credit(run) -> Violation | None:
    net = run.cluster.net
    if not net.network:
        return None
    for c in _remote(net):
        held = net.held[c]
        if UNBACKED in held:
            return Violation(invariant="received_within_credit", expected="every received data buffer in a buffer "
                             "the channel announced as credit", actual={"channel": c, "held": "".join(held)},
                             message=f"channel {c} received {held.count(UNBACKED)} data buffer(s) beyond its credit")
        q = net.queues[c]
        data = sum(1 for i in range(net.arrived[c]) if not is_event(q[i]))
        if data != len(held):
            return Violation(invariant="received_within_credit", expected=len(held), actual=data,
                             message=f"channel {c}: {data} data buffer(s) arrived, {len(held)} buffer(s) hold them")
    return None


@invariant(
    "network_buffers_conserved",
    kind="always",
    concept="network buffers (BufferManager, LocalBufferPool.recycle: a consumed buffer returns to its pool)",
    statement="In network mode no buffer leaks: each remote channel's exclusive buffers are available or hold an "
              "arrived element, each gate's floating buffers are in its pool, available at one of its channels or "
              "holding an arrived element, and the sender's credit never exceeds the receiver's available buffers.",
)
def network_buffers_conserved(run) -> Violation | None:
    net = run.cluster.net
    if not net.network:
        return None
    b = net.buffers_per_channel
    for c in _remote(net):
        used = sum(1 for k in net.held[c] if k == EXCLUSIVE)
        if net.exclusive[c] + used != b:
            return Violation(invariant="network_buffers_conserved", expected=b,
                             actual={"channel": c, "available": net.exclusive[c], "holding data": used},
                             message=f"channel {c}: {net.exclusive[c]} exclusive buffer(s) available and {used} "
                                     f"holding data, of {b}")
        if net.credit_based and net.credit[c] + net.unannounced[c] > net.exclusive[c] + net.floating[c]:
            return Violation(invariant="network_buffers_conserved", expected="credit <= available buffers",
                             actual={"channel": c, "credit": net.credit[c], "unannounced": net.unannounced[c],
                                     "available": net.exclusive[c] + net.floating[c]},
                             message=f"channel {c}: credit {net.credit[c] + net.unannounced[c]} for "
                                     f"{net.exclusive[c] + net.floating[c]} available buffer(s)")
    f = net.floating_per_gate
    for g, chans in enumerate(net.gate_channels):
        out = sum(net.floating[c] + sum(1 for k in net.held[c] if k == FLOATING) for c in chans)
        if net.pool[g] + out != f:
            return Violation(invariant="network_buffers_conserved", expected=f,
                             actual={"gate": g, "in pool": net.pool[g], "at channels": out},
                             message=f"gate {g}: {net.pool[g]} floating buffer(s) in the pool and {out} at its "
                                     f"channels, of {f}")
    return None


@invariant(
    "network_stall_confined_to_gate",
    kind="always",
    concept="credit-based flow control keeps a slow or blocked receiver from stopping the TCP connection that "
            "channels between two TaskManagers share",
    statement="In network mode a receiver that has no buffer for a channel's next buffer never holds up a channel "
              "of another input gate: no buffer waiting to cross a connection is stuck behind a buffer of another "
              "gate's channel that the connection cannot deliver.",
)
def network_stall_confined_to_gate(run) -> Violation | None:
    net = run.cluster.net
    if not net.network:
        return None
    for k, d in enumerate(net.staged):
        if d is None:
            continue
        g = net.gate_of[d]
        for c in _remote(net):
            if net.conn_of[c] == k and net.gate_of[c] != g and net.arrived[c] < len(net.queues[c]):
                return Violation(invariant="network_stall_confined_to_gate",
                                 expected="no other gate's channel held up by the stalled connection",
                                 actual={"stalled by channel": d, "held up": c},
                                 message=f"connection {k} stopped for channel {d} (gate {g}) holds up channel {c} "
                                         f"of gate {net.gate_of[c]}")
    return None


# -- coverage goals: the search reaches the network stack's mechanisms ------------------------------

def _network(scenario) -> bool:
    """The scenario runs in network mode (``RuntimeConfig.buffers_per_channel``)."""
    return scenario.config.buffers_per_channel is not None


@goal("sender_out_of_credit", "CreditBasedSequenceNumberingViewReader (no credit for the next data buffer)",
      "A remote channel's sender had a data buffer to send and no credit for it: credit held it back.",
      applies=_network, floor=5)
def sender_out_of_credit(run, new_events) -> bool:
    net = run.cluster.net
    if not net.network:
        return False
    return any(net.remote[c] and (net.sender_refusal(c) or "").endswith("no credit for its next data buffer")
               for c in range(len(net.queues)))


@goal("floating_buffers_exhausted", "BufferManager.requestFloatingBuffers (a buffer listener of the LocalBufferPool)",
      "A remote channel asked its gate for floating buffers when the gate's pool was empty and registered as a "
      "buffer listener.", applies=_network, floor=5)
def floating_buffers_exhausted(run, new_events) -> bool:
    net = run.cluster.net
    return net.network and any(net.listeners)


@goal("subpartition_blocked_with_data", "PipelinedSubpartition.isBlocked (an aligned barrier blocks upstream)",
      "A remote channel's subpartition held unsent buffers while an aligned barrier it had sent blocked it.",
      applies=lambda s: _network(s) and s.config.barrier_mode in ("aligned", "alternating"), floor=5)
def subpartition_blocked_with_data(run, new_events) -> bool:
    net = run.cluster.net
    if not net.network:
        return False
    return any(net.remote[c] and net.unsent(c) and net.sender_blocked(c) for c in range(len(net.queues)))
