"""Error types of the reference model.

Every problem with user input (a job spec, a configuration, a counterexample file)
raises a subclass of :class:`FlinkspecError` whose message names the offending
item and the rule it breaks. The command line turns these into a one-line error
and exit code 2; nothing else in the model raises them for internal bugs.
"""

from __future__ import annotations

import re

#: A quoted value longer than this is cut in messages (a 10 MB name is never echoed back).
QUOTE_LIMIT = 60
_LONG_QUOTED = re.compile(r"(['\"])([^'\"\n]{%d})[^'\"\n]{20,}\1" % QUOTE_LIMIT)
#: Longest message (after cutting quoted values) shown on one line.
MESSAGE_LIMIT = 600


def shorten_message(text: str) -> str:
    """``text`` on one line, every long quoted value cut to a prefix and the whole bounded:
    what the command line prints for an error."""
    text = " ".join(str(text).split("\n"))
    text = _LONG_QUOTED.sub(lambda m: f"{m.group(1)}{m.group(2)}...{m.group(1)} (cut)", text)
    if len(text) > MESSAGE_LIMIT:
        text = text[:MESSAGE_LIMIT] + f"... ({len(text)} characters)"
    return text


class FlinkspecError(Exception):
    """Base class of every user-facing error: bad input, never an internal bug."""


class InvalidJobSpec(FlinkspecError, ValueError):
    """A StreamGraph (job spec) breaks a rule Flink enforces.

    ``subject`` names the operator or edge (``"operator 'map'"``,
    ``"edge 'src' -> 'map'"``), ``rule`` states the rule that is broken.
    The message is ``"<subject>: <rule>"``.
    """

    def __init__(self, subject: str, rule: str):
        self.subject = shorten_message(subject)
        self.rule = shorten_message(rule)
        super().__init__(f"{self.subject}: {self.rule}")


class InvalidArgument(FlinkspecError, ValueError):
    """A precondition Flink checks (e.g. ``checkArgument`` in KeyGroupRangeAssignment) failed."""


class ActionNotEnabled(FlinkspecError):
    """``Cluster.step`` was given an action that is not enabled in the current state (the
    message names the action and the guard that does not hold); the state is unchanged."""
