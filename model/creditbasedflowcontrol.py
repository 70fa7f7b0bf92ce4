"""Credit-based flow control: the network stack's buffers, credits and backlog, per channel.

The network mode of the model (``RuntimeConfig.buffers_per_channel`` set; None, the default,
keeps the coarse ``model.channels.Channels``, whose capacity counts elements). Flink's classes
followed:

* a *remote* channel (producer and consumer on different TaskManagers under the current slot
  allocation) is a ``RemoteInputChannel``: its ``BufferManager`` holds
  ``buffers_per_channel`` **exclusive buffers** (``taskmanager.network.memory.buffers-per-channel``)
  and the floating buffers it requested from its input gate's ``LocalBufferPool``, which
  holds ``floating_buffers_per_gate`` **floating buffers**
  (``taskmanager.network.memory.floating-buffers-per-gate``) shared by the gate's channels;
* the sender's ``CreditBasedSequenceNumberingViewReader`` writes the next buffer of its
  ``PipelinedSubpartition`` only with **credit** (``numCreditsAvailable``), except an *event*
  (a barrier, a cancellation marker, EndOfPartition), which needs none and arrives in an
  unpooled buffer (``getNextDataType``: ``numCreditsAvailable > 0 || nextDataType.isEvent()``);
  records, watermarks and watermark statuses are stream elements serialized into *data*
  buffers and need one credit each. Each buffer carries the subpartition's **backlog** (its
  unsent data buffers; 0 while the subpartition is blocked): the ``SendBuffer`` action is
  ``PartitionRequestQueue`` writing a ``BufferResponse`` and the client's
  ``CreditBasedPartitionRequestClientHandler`` handing it to ``RemoteInputChannel.onBuffer``,
  which takes a buffer of the channel (``AvailableBufferQueue.takeBuffer``: floating first)
  and calls ``onSenderBacklog(backlog)``: ``requestFloatingBuffers(backlog + initialCredit)``
  asks the gate's pool for floating buffers until the channel has that many available,
  registering as a buffer listener when the pool is empty;
* buffers that become available are **unannounced credit** (``notifyBufferAvailable``); the
  ``AnnounceCredit`` action is the client writing an ``AddCredit`` message with all of it and
  the server's ``addCredit`` (one step: the connection keeps order, and nothing reads the
  message in between);
* a consumed data buffer is **recycled** (``Deliver``): an exclusive one to its channel
  (``BufferManager.recycle`` -> ``addExclusiveBuffer``, which gives a floating buffer back to
  the pool when the channel has more than it requires; else one credit more), a floating one
  to the gate's ``LocalBufferPool.recycle``, which hands it to the first registered listener
  that still needs buffers (``BufferManager.notifyBufferAvailable``) or keeps it;
* an aligned barrier is ``isBlockingUpstream``: once the subpartition has sent it
  (``PipelinedSubpartition.pollBuffer`` sets ``isBlocked``) it sends nothing more until the
  consumer resumes consumption at the end of the alignment (``ChannelState.unblockAllChannels``
  -> ``resumeConsumption``); the model derives this from the state (the barrier is still in
  the receiver's buffers, or the consumer's channel is blocked by the alignment) instead of
  keeping a flag. An unaligned barrier is a priority event: it overtakes the buffers in the
  subpartition and in the receiver's queue (``PipelinedSubpartition.addPriorityEvent``,
  ``RemoteInputChannel.addPriorityBuffer``) and arrives in the step that inserts it;
* channels between the same two TaskManagers share one TCP connection; with the credit-based
  stack a receiver never stops reading it (every data buffer sent has a buffer reserved).
  The pre-credit stack (Flink < 1.5, ``isCreditBased`` false: the
  ``pre-credit-network-stack`` seam) sends whenever the subpartition has a buffer, and a
  receiver without a free buffer for it stages the message and stops reading the whole
  connection (``PartitionRequestClientHandler``: auto-read off) until a buffer of that
  channel's gate is recycled.

A *local* channel (both ends on one TaskManager) is a ``LocalInputChannel``: it reads the
subpartition directly, as in the coarse mode. Every channel's unsent buffers are bounded by
``ModelScope.channel_capacity`` (the producer's ``LocalBufferPool``: Flink's
``taskmanager.network.memory.max-buffers-per-channel``), which is the back-pressure on the
producer.

The state per channel ``c`` beside the coarse one (``queues[c]`` still holds every element in
flight, in order: the first ``arrived[c]`` are in the receiver's ``receivedBuffers``, the rest
in the subpartition): ``credit[c]`` (the sender's), ``unannounced[c]``, ``required[c]``
(``numRequiredBuffers``), ``exclusive[c]`` / ``floating[c]`` (available buffers of each kind),
``held[c]`` (per arrived data buffer, which kind of buffer holds it: ``EXCLUSIVE``,
``FLOATING``, or ``UNBACKED`` for one received without a buffer), ``waiting[c]``
(``isWaitingForFloatingBuffers``); per gate ``pool[g]`` (free floating buffers) and
``listeners[g]`` (the registered buffer listeners, in order); per connection ``staged[k]``
(the channel whose buffer a pre-credit receiver could not place, or None). Two flags are read
from their definitions when the stack is built and kept as state, so that the guards, the drain
policy and the spec see what a seam switched: ``credit_based`` (``is_credit_based``) and
``reader_checks_credit`` (``checks_credit``).

Invariant upheld: for every remote channel, ``credit + unannounced`` equals its available
buffers; a data buffer is sent only with credit, so it always finds a buffer; every buffer is
free in its pool, available at a channel or holding one arrived element, and returns when
that element is consumed or the channel is reset (spec/network.py states these; a stall of
one gate's channel never holds up another gate's).

Deliberately left out: buffer sizes in bytes and records spanning buffers (a buffer holds one
element, as if every element were flushed at once: buffer timeout 0), buffer debloating, the
required-segment and tiered-storage paths, the TCP connection as bytes (the pre-credit stall
is the only effect of sharing one), credit for blocking (batch) partitions (read as in the
coarse mode), ``buffers_per_channel == 0`` (Flink's floating-only channels, which reset credit
on resumeConsumption), the overdraft buffers of the producer, and which side of the network
an overtaken buffer sat on (an unaligned checkpoint records every overtaken record in the
producer's output channel state; Flink persists the receiver's part as input channel state).

Why not the default: it adds two action kinds (``SendBuffer``, ``AnnounceCredit``) whose
interleavings multiply the states of every search (docs/exploration.md gives the figures for
the two-stage small scenario); the coarse mode's back-pressure is what the checkpointing,
failover and sink mechanisms need, so only the network family switches it on.
"""

from __future__ import annotations

from collections import deque

from model import seams
from model.channels import Channels
from model.events import CheckpointBarrier, CancelCheckpointMarker, EndOfPartitionEvent

#: which buffer holds an arrived data buffer's element
EXCLUSIVE = "x"
FLOATING = "f"
#: received although the receiver had no buffer for it (a sender without credit)
UNBACKED = "-"

#: element types Flink sends as events (``EventSerializer``): no credit, an unpooled buffer
_EVENTS = (CheckpointBarrier, CancelCheckpointMarker, EndOfPartitionEvent)


def is_event(e) -> bool:
    """Whether ``e`` travels as an event buffer (``Buffer.DataType.isEvent``), not a data buffer."""
    return type(e) in _EVENTS


class CreditBasedChannels(Channels):
    """``model.channels.Channels`` with the network stack's buffers and credits (the module
    docstring says what each field is)."""

    __slots__ = ("remote", "gate_of", "conn_of", "arrived", "credit", "unannounced", "required", "exclusive",
                 "floating", "held", "waiting", "pool", "listeners", "staged", "buffers_per_channel",
                 "floating_per_gate", "aligned_blocks", "gate_channels", "credit_based", "reader_checks_credit")

    network = True

    def __init__(self, channels, blocking, gates, buffers_per_channel: int, floating_per_gate: int,
                 aligned_blocks: bool):
        """``gates``: per input gate, its channel ids; ``aligned_blocks``: whether a barrier
        that is not unaligned blocks upstream (exactly-once checkpointing)."""
        super().__init__(channels, blocking)
        n = len(channels)
        self.buffers_per_channel = buffers_per_channel
        self.floating_per_gate = floating_per_gate
        self.aligned_blocks = aligned_blocks
        self.gate_channels = tuple(tuple(g) for g in gates)
        self.gate_of = [-1] * n
        for g, chans in enumerate(self.gate_channels):
            for c in chans:
                self.gate_of[c] = g
        self.remote = [False] * n
        self.conn_of = [-1] * n
        self.arrived = [0] * n
        self.credit = [0] * n
        self.unannounced = [0] * n
        self.required = [0] * n
        self.exclusive = [0] * n
        self.floating = [0] * n
        self.held = [deque() for _ in range(n)]
        self.waiting = [False] * n
        self.pool = [floating_per_gate] * len(self.gate_channels)
        self.listeners = [[] for _ in self.gate_channels]
        self.staged: list = []
        #: ``is_credit_based`` and ``checks_credit`` when the stack was built: the guards, the
        #: drain policy and the spec read these (a seam acts only while a step runs)
        self.credit_based = self.is_credit_based
        self.reader_checks_credit = self.checks_credit

    # -- placement -----------------------------------------------------------------------------
    def place(self, tm_of) -> None:
        """Which channels are remote and which connection each uses, from ``tm_of`` (subtask id
        -> TaskManager id or None). Called at deployment and after a new slot allocation; a
        channel whose locality changes is one whose end was redeployed, reset already."""
        conns: dict = {}
        staged = [d for d in self.staged if d is not None]
        for c in range(len(self.queues)):
            p, q = tm_of(self.producer_of[c]), tm_of(self.consumer_of[c])
            remote = not self.blocking[c] and p is not None and q is not None and p != q
            if remote and not self.remote[c]:
                self._setup(c)
            elif not remote and self.remote[c]:
                self._release(c)
            self.remote[c] = remote
            self.conn_of[c] = conns.setdefault((p, q), len(conns)) if remote else -1
        self.staged = [None] * len(conns)
        for d in staged:  # a stopped connection stays stopped under its new index
            if self.remote[d]:
                self.staged[self.conn_of[d]] = d

    def _setup(self, c: int) -> None:
        """A new RemoteInputChannel: its exclusive buffers, announced as the initial credit of
        its partition request (``requestSubpartition``'s ``initialCredit``)."""
        b = self.buffers_per_channel
        self.exclusive[c] = b
        self.credit[c] = b if self.credit_based else 0
        self.required[c] = b
        self.unannounced[c] = 0
        self.arrived[c] = 0

    def _release(self, c: int) -> None:
        """``releaseAllResources``: floating buffers (available or holding data) back to the
        gate's pool, exclusive ones to the NetworkBufferPool (set up anew)."""
        g = self.gate_of[c]
        back = self.floating[c] + sum(1 for k in self.held[c] if k == FLOATING)
        self.floating[c] = 0
        self.exclusive[c] = 0
        self.held[c].clear()
        self.credit[c] = self.unannounced[c] = self.required[c] = self.arrived[c] = 0
        if self.waiting[c]:
            self.waiting[c] = False
            self.listeners[g].remove(c)
        for k, s in enumerate(self.staged):
            if s == c:
                self.staged[k] = None
        for _ in range(back):
            self._recycle_floating(g)

    def reset(self, c: int) -> None:
        """A restarted producer or consumer: the channel starts empty with fresh buffers."""
        super().reset(c)
        if self.remote[c]:
            self._release(c)
            self._setup(c)
        else:
            self.arrived[c] = 0

    # -- the flag the pre-credit seam switches ---------------------------------------------------
    @property
    def is_credit_based(self) -> bool:
        """``NettyShuffleEnvironmentConfiguration.isCreditBased``: the credit-based stack
        (``CreditBasedPartitionRequestClientHandler``) rather than the pre-credit one
        (``PartitionRequestClientHandler``). Flink 1.5 added the credit-based stack beside the
        old one (``taskmanager.network.credit-model``, default true); later versions have only
        the credit-based one."""
        return True

    @property
    def checks_credit(self) -> bool:
        """Whether the sender's ``CreditBasedSequenceNumberingViewReader`` writes a data buffer
        only with credit (``getNextDataType``: ``numCreditsAvailable > 0 || isEvent()``)."""
        return True

    # -- the sender --------------------------------------------------------------------------------
    def backlog(self, c: int) -> int:
        """``PipelinedSubpartition.getBuffersInBacklogUnsafe``: the unsent data buffers, 0
        while the subpartition is blocked."""
        if self.sender_blocked(c):
            return 0
        q = self.queues[c]
        return sum(1 for i in range(self.arrived[c], len(q)) if not is_event(q[i]))

    def sender_blocked(self, c: int) -> bool:
        """``PipelinedSubpartition.isBlocked``: an aligned barrier was sent and the consumer has
        not resumed consumption (the barrier is still in the receiver's queue, or the consumer's
        channel is blocked by the alignment). Never with the pre-credit stack."""
        if not self.aligned_blocks or not self.credit_based:
            return False
        if self.blocked[c]:
            return True
        q = self.queues[c]
        for i in range(self.arrived[c]):
            e = q[i]
            if type(e) is CheckpointBarrier and not e.unaligned:
                return True
        return False

    def sender_refusal(self, c: int) -> str | None:
        """Why the server cannot write the next buffer of remote channel ``c`` now, or None
        (``CreditBasedSequenceNumberingViewReader.getAvailabilityAndBacklog``)."""
        if self.arrived[c] >= len(self.queues[c]):
            return f"channel {c}'s subpartition has no unsent buffer"
        k = self.conn_of[c]
        if self.staged[k] is not None:
            return f"channel {c}'s connection is not read (a buffer of channel {self.staged[k]} waits for a buffer)"
        if not self.credit_based:
            return None
        if self.sender_blocked(c):
            return f"channel {c}'s subpartition is blocked by an aligned barrier until the consumer resumes"
        if self.reader_checks_credit and self.credit[c] <= 0 and not is_event(self.queues[c][self.arrived[c]]):
            return f"channel {c} has no credit for its next data buffer"
        return None

    def send(self, c: int) -> None:
        """The next buffer of ``c``'s subpartition crosses the network with the backlog
        (``getNextBuffer``, ``BufferResponse``, ``RemoteInputChannel.onBuffer``)."""
        e = self.queues[c][self.arrived[c]]
        if is_event(e):
            self.arrived[c] += 1  # an unpooled event buffer, no credit
            if self.credit_based:
                self.on_sender_backlog(c, self.backlog(c))
            return
        if not self.credit_based:
            self._receive_pre_credit(c)
            return
        self.credit[c] -= 1
        self.held[c].append(self._take_buffer(c))
        self.arrived[c] += 1
        self.on_sender_backlog(c, self.backlog(c))

    def _take_buffer(self, c: int) -> str:
        """``AvailableBufferQueue.takeBuffer``: a floating buffer first, else an exclusive one."""
        if self.floating[c]:
            self.floating[c] -= 1
            return FLOATING
        if self.exclusive[c]:
            self.exclusive[c] -= 1
            return EXCLUSIVE
        return UNBACKED

    def _receive_pre_credit(self, c: int) -> None:
        """The pre-credit client: a buffer of the channel, else one of the gate's pool, else the
        message is staged and the connection stops being read."""
        if self.floating[c] or self.exclusive[c]:
            kind = self._take_buffer(c)
        elif self.pool[self.gate_of[c]]:
            self.pool[self.gate_of[c]] -= 1
            kind = FLOATING
        else:
            self.staged[self.conn_of[c]] = c
            return
        self.held[c].append(kind)
        self.arrived[c] += 1

    def on_sender_backlog(self, c: int, backlog: int) -> None:
        """``RemoteInputChannel.onSenderBacklog``: ``requestFloatingBuffers(backlog +
        initialCredit)``, and the buffers obtained become unannounced credit."""
        need = backlog + self.buffers_per_channel
        self.required[c] = need
        g = self.gate_of[c]
        got = 0
        while self.floating[c] + self.exclusive[c] < need and not self.waiting[c]:
            if self.pool[g]:
                self.pool[g] -= 1
                self.floating[c] += 1
                got += 1
            else:
                self.waiting[c] = True
                self.listeners[g].append(c)
        self.unannounced[c] += got

    def announce(self, c: int) -> None:
        """``AddCredit``: the unannounced credit reaches the sender (``addCredit``)."""
        self.credit[c] += self.unannounced[c]
        self.unannounced[c] = 0

    # -- the receiver consumes --------------------------------------------------------------------
    def consumed(self, c: int, e) -> None:
        """The consumer took ``e`` from remote channel ``c``: its buffer is recycled."""
        self.arrived[c] -= 1
        if is_event(e):
            return  # an unpooled event buffer is freed
        self.recycle(c, self.held[c].popleft())

    def recycle(self, c: int, kind: str) -> None:
        """A consumed data buffer of ``c`` goes back where it came from."""
        g = self.gate_of[c]
        if kind == EXCLUSIVE:
            # BufferManager.recycle -> AvailableBufferQueue.addExclusiveBuffer
            self.exclusive[c] += 1
            if self.floating[c] + self.exclusive[c] > self.required[c] and self.floating[c]:
                self.floating[c] -= 1
                self._recycle_floating(g)
            else:
                self.unannounced[c] += 1
        elif kind == FLOATING:
            self._recycle_floating(g)
        self._unstage(g)

    def _recycle_floating(self, g: int) -> None:
        """``LocalBufferPool.recycle``: the first registered listener that still needs a buffer
        takes it (``BufferManager.notifyBufferAvailable``), else the pool keeps it."""
        listeners = self.listeners[g]
        while listeners:
            c = listeners.pop(0)
            if self.floating[c] + self.exclusive[c] >= self.required[c]:
                self.waiting[c] = False
                continue  # BUFFER_NOT_USED: the next listener
            self.floating[c] += 1
            self.unannounced[c] += 1
            if self.floating[c] + self.exclusive[c] >= self.required[c]:
                self.waiting[c] = False
            else:
                listeners.append(c)  # BUFFER_USED_NEED_MORE
            return
        self.pool[g] += 1

    def _unstage(self, g: int) -> None:
        """Pre-credit: a staged message of a channel of gate ``g`` gets the freed buffer and the
        connection is read again."""
        for k, c in enumerate(self.staged):
            if c is not None and self.gate_of[c] == g and (self.floating[c] or self.exclusive[c] or self.pool[g]):
                self.staged[k] = None
                self._receive_pre_credit(c)

    def stall(self) -> str | None:
        """What holds the network up, for a stuck run's message: a stopped connection and the
        channels behind it (pre-credit), or channels without credit and none to announce; None."""
        for k, d in enumerate(self.staged):
            if d is not None:
                held = [c for c in range(len(self.queues)) if self.conn_of[c] == k and c != d
                        and self.arrived[c] < len(self.queues[c])]
                return (f"connection {k} is not read: a buffer of channel {d} waits for a free buffer"
                        + (", holding up " + ", ".join(f"channel {c}" for c in held) if held else ""))
        starved = [c for c in range(len(self.queues)) if self.remote[c] and self.unannounced[c] == 0
                   and (self.sender_refusal(c) or "").endswith("no credit for its next data buffer")]
        if starved:
            return ", ".join(f"channel {c}" for c in starved) + " has no credit for its next data buffer"
        return None

    def add_priority_event(self, c: int) -> None:
        """An unaligned barrier was inserted among the first ``prio[c]`` elements: it arrived."""
        if self.remote[c]:
            self.arrived[c] += 1

    # -- the producer's side -----------------------------------------------------------------------
    def unsent(self, c: int) -> int:
        """The elements in ``c``'s subpartition (all of them for a local channel)."""
        return len(self.queues[c]) - (self.arrived[c] if self.remote[c] else 0)

    def backpressured(self, out_channels, cap: int) -> bool:
        """Whether a producer writing to ``out_channels`` has no free buffer for one of them."""
        for c in out_channels:
            if self.unsent(c) >= cap:
                return True
        return False

    def buffers(self, c: int) -> dict:
        """What the viewer shows of remote channel ``c``."""
        return {"arrived": self.arrived[c], "unsent": self.unsent(c), "credit": self.credit[c],
                "unannounced": self.unannounced[c], "backlog": self.backlog(c),
                "exclusive": self.exclusive[c], "floating": self.floating[c],
                "held": "".join(self.held[c]), "gate_pool": self.pool[self.gate_of[c]],
                "blocked_upstream": self.sender_blocked(c), "connection": self._connection_text(c)}

    def _connection_text(self, c: int) -> str:
        k = self.conn_of[c]
        d = self.staged[k]
        return f"{k}" if d is None else f"{k}, not read: a buffer of channel {d} waits for a free buffer"


# -- known-unsafe changes (model.seams) ----------------------------------------------------------

@seams.override("pre-credit-network-stack", CreditBasedChannels, "is_credit_based",
                "the network stack before Flink 1.5 (isCreditBased false): no credit, no upstream blocking after an "
                "aligned barrier; a receiver without a free buffer stops reading the TCP connection that all channels "
                "between its two TaskManagers share")
def _not_credit_based(self) -> bool:
    return False


@seams.override("network-buffer-never-recycled", CreditBasedChannels, "recycle",
                "a consumed data buffer is never recycled: neither its channel nor its gate's pool gets it back")
def _recycle_never(self, c: int, kind: str) -> None:
    return None


@seams.override("sender-ignores-credit", CreditBasedChannels, "checks_credit",
                "the sender writes a data buffer without credit (CreditBasedSequenceNumberingViewReader's "
                "availability ignores numCreditsAvailable)")
def _reader_ignores_credit(self) -> bool:
    return False


@seams.override("add-credit-lost", CreditBasedChannels, "announce",
                "the receiver resets its unannounced credit but the AddCredit message never reaches the sender: the "
                "credit is lost, and a channel that lost all of it never sends a data buffer again")
def _announce_lost(self, c: int) -> None:
    self.unannounced[c] = 0
