"""The history of a run: what happened, kept beside the state, never part of it.

A state of the model (``model.cluster.Cluster``) is what decides what can happen next. What
happened on the way there -- the actions taken, the events the mechanisms reported, the
restores and the completed checkpoints' snapshots -- is read by the invariants, the viewer
and the trace validator, never by a step: :class:`RunHistory` holds it, one per run.

Invariant: no step reads a run's history (a step's outcome depends on the state alone), so
two states that differ only in their histories are one state of a search. Where a later step
needs something history once held (the savepoint a stopped job restarts from, the newest
checkpoint a task acknowledged), the mechanism keeps it in its own state. ``RunHistory`` is
marked :func:`model.fingerprint.beside_state`: a fingerprint gives every history one form,
whoever holds it; a copy shares the recorded values (they are immutable) in new lists.

Follows the TLA+ practice of a ``VIEW`` that leaves out history variables; here the history
is not a variable of the state at all.
"""

from __future__ import annotations

from model.fingerprint import beside_state


@beside_state
class RunHistory:
    """``trace``: the actions taken, in order; ``events``: what the mechanisms reported, as
    ``(kind, step, ...)`` tuples; ``restored_from``: ``(step, checkpoint id or None, what)`` per
    restore; ``trigger_results``: the CheckpointCoordinator's answer per trigger request;
    ``completed_ids`` / ``completed``: the checkpoints that completed, in order, and their
    snapshots per subtask; ``channel_rescales``: per RescaleFromCheckpoint, ``(step, checkpoint
    id, EdgeReassignment per JobEdge with in-flight data)``; ``failovers``: how many failovers
    the job went through (whatever the restart strategy counts)."""

    __slots__ = ("trace", "events", "restored_from", "trigger_results", "completed_ids", "completed",
                 "channel_rescales", "failovers")

    def __init__(self):
        self.trace: list = []
        self.events: list = []
        self.restored_from: list = []
        self.trigger_results: list = []
        self.completed_ids: list[int] = []
        self.completed: dict[int, dict] = {}
        self.channel_rescales: list = []
        self.failovers = 0

    def copy(self) -> "RunHistory":
        """An independent history with the same entries (the entries themselves are immutable
        values, shared; each completed checkpoint's snapshot map is its own)."""
        h = RunHistory.__new__(RunHistory)
        h.trace = list(self.trace)
        h.events = list(self.events)
        h.restored_from = list(self.restored_from)
        h.trigger_results = list(self.trigger_results)
        h.completed_ids = list(self.completed_ids)
        h.completed = {k: dict(v) for k, v in self.completed.items()}
        h.channel_rescales = list(self.channel_rescales)
        h.failovers = self.failovers
        return h

    def __deepcopy__(self, memo):
        return self.copy()
