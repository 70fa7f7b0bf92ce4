"""ExecutionGraph: parallel subtasks, result partitions, input gates and channels.

Invariant upheld: channels are wired exactly as Flink's ``EdgeManagerBuildUtil`` wires
them: ALL_TO_ALL edges connect every producer subtask to every consumer subtask
(producer i's subpartition j feeds consumer j; consumer j's gate lists producers in index
order); POINTWISE edges connect ranges (``connectPointwise``: 1:1 for equal parallelism,
fan-in ``[i*P/C, (i+1)*P/C)`` and fan-out ``[ceil(i*C/P), ceil((i+1)*C/P))`` otherwise).

Everything is numbered densely (subtasks, channels) so the runtime can keep its state in
lists indexed by integers.

Leaves out: hybrid partitions, dynamic (adaptive batch) graphs, multiple consumers of one
IntermediateDataSet.
"""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True, kw_only=True)
class Subtask:
    """One ExecutionVertex: subtask ``subtask_index`` of ``job_vertex``; ``id`` is dense (0..n-1)."""

    id: int
    job_vertex: str
    subtask_index: int
    parallelism: int

    @property
    def name(self) -> str:
        """Flink's task name format: ``"vertex (i+1/p)"``."""
        return f"{self.job_vertex} ({self.subtask_index + 1}/{self.parallelism})"


@attrs.frozen(slots=True, kw_only=True)
class InputChannel:
    """A FIFO channel from a producer subtask's subpartition to a consumer's input gate.

    ``id`` is dense over the whole graph; ``gate``/``gate_channel`` locate it in the
    consumer (``gate`` = index of the consumer's input gate, ``gate_channel`` = index of
    the channel inside that gate); ``subpartition`` locates it in the producer's
    result partition for ``job_edge``.
    """

    id: int
    job_edge: int
    producer: int
    consumer: int
    subpartition: int
    gate: int
    gate_channel: int


@attrs.frozen(slots=True, kw_only=True)
class ResultPartition:
    """The output of one producer subtask on one JobEdge: ``channels[k]`` is subpartition k."""

    job_edge: int
    producer: int
    partitioner: str
    channels: tuple[int, ...]
    #: max parallelism of the consuming operator (KeyGroupStreamPartitioner uses it).
    consumer_max_parallelism: int
    blocking: bool


@attrs.frozen(slots=True, kw_only=True)
class InputGate:
    """One consumer subtask's input from one JobEdge; ``channels`` in gate-channel order."""

    job_edge: int
    consumer: int
    channels: tuple[int, ...]
