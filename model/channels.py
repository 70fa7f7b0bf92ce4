"""The network stack: every channel of the ExecutionGraph, as data.

One FIFO channel per (producer subtask, consumer subtask) pair of an edge (Flink's
``ResultSubpartition`` on the producer side and ``InputChannel`` on the consumer side,
collapsed into one queue). Per channel ``c``:

* ``queues[c]``   -- the elements in flight (records as ``(key, value, ts)`` tuples, and
  events: watermarks, watermark status, barriers, cancel markers, EndOfPartition);
* ``prio[c]``     -- how many elements at the head are priority events (an unaligned
  barrier overtook the data behind it: ``PipelinedSubpartition.addPriorityEvent``);
* ``blocked[c]``  -- blocked by aligned checkpoint alignment (no credit for the channel);
* ``received[c]`` -- records the consumer took from it in the current attempt;
* ``blocking[c]`` -- the channel belongs to a BLOCKING result partition: its queue is the
  whole partition (append-only) and ``read_pos[c]`` is the consumer's position in it;
* ``producer_of[c]`` / ``consumer_of[c]`` -- subtask ids.

Invariant upheld: pipelined channels are consumed from the head in FIFO order, except that
priority events at the head go first; a blocking partition is read only after its producer
finished, from ``read_pos`` on.

Deliberately left out: network buffers and credits as numbers (a channel's capacity counts
elements, see ``ModelScope.channel_capacity``), buffer debloating, local vs remote channels.
This is the default, coarse mode; ``model.creditbasedflowcontrol.CreditBasedChannels`` (with
``RuntimeConfig.buffers_per_channel``) adds them.
"""

from __future__ import annotations

from collections import deque


class Channels:
    __slots__ = ("queues", "prio", "blocked", "received", "read_pos", "blocking", "producer_of", "consumer_of")
    #: whether the network stack's buffers and credits are modelled (a class attribute: not
    #: state; ``model.creditbasedflowcontrol.CreditBasedChannels`` sets it)
    network = False

    def __init__(self, channels, blocking):
        n = len(channels)
        self.queues: list[deque] = [deque() for _ in range(n)]
        self.prio = [0] * n
        self.blocked = [False] * n
        self.received = [0] * n
        self.read_pos = [0] * n
        self.blocking = list(blocking)
        self.producer_of = [ch.producer for ch in channels]
        self.consumer_of = [ch.consumer for ch in channels]

    def __len__(self) -> int:
        return len(self.queues)

    def head(self, c: int):
        """The element the consumer of ``c`` would take next (None if there is none)."""
        q = self.queues[c]
        if self.blocking[c]:
            pos = self.read_pos[c]
            return q[pos] if pos < len(q) else None
        return q[0] if q else None

    def take(self, c: int):
        """Remove (pipelined) or pass over (blocking) the head element of ``c`` and return it."""
        if self.blocking[c]:
            pos = self.read_pos[c]
            self.read_pos[c] = pos + 1
            return self.queues[c][pos]
        if self.prio[c]:
            self.prio[c] -= 1
        return self.queues[c].popleft()

    def in_flight(self) -> bool:
        """Whether any channel still holds an element its consumer has not taken."""
        blocking = self.blocking
        read_pos = self.read_pos
        for c, q in enumerate(self.queues):
            if q and (not blocking[c] or read_pos[c] < len(q)):
                return True
        return False

    def reset(self, c: int) -> None:
        """A restarted producer or consumer: the channel starts empty and unblocked."""
        self.queues[c].clear()
        self.prio[c] = 0
        self.blocked[c] = False
        self.read_pos[c] = 0
