"""Error types of the reference model.

Every problem with user input (a job spec, a configuration, a counterexample file)
raises a subclass of :class:`FlinkspecError` whose message names the offending
item and the rule it breaks. The command line turns these into a one-line error
and exit code 2; nothing else in the model raises them for internal bugs.
"""

from __future__ import annotations


class FlinkspecError(Exception):
    """Base class of every user-facing error: bad input, never an internal bug."""


class InvalidJobSpec(FlinkspecError, ValueError):
    """A StreamGraph (job spec) breaks a rule Flink enforces.

    ``subject`` names the operator or edge (``"operator 'map'"``,
    ``"edge 'src' -> 'map'"``), ``rule`` states the rule that is broken.
    The message is ``"<subject>: <rule>"``.
    """

    def __init__(self, subject: str, rule: str):
        self.subject = subject
        self.rule = rule
        super().__init__(f"{subject}: {rule}")


class InvalidArgument(FlinkspecError, ValueError):
    """A precondition Flink checks (e.g. ``checkArgument`` in KeyGroupRangeAssignment) failed."""


class ActionNotEnabled(FlinkspecError):
    """``Cluster.step`` was given an action that is not enabled in the current state (the
    message names the action and the guard that does not hold); the state is unchanged."""
