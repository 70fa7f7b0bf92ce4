"""Subcommands of ``flinkspec``; each module has ``register(subparsers)``.

The argument types shared by several commands live here, so that every command bounds a seed
or a count the same way (argparse turns their ``ArgumentTypeError`` into the one-line usage
error of ``flinkspec.cli``)."""

from __future__ import annotations

import argparse

#: a seed is a Java long, as Flink's and the model's seeded randomness take it
SEED_MIN, SEED_MAX = -(2**63), 2**63 - 1
#: the largest count (depth, states, workers ...) a command accepts: far above anything a run
#: on one machine can reach, small enough that a typo of many digits is refused
COUNT_MAX = 10**9


def _int(text: str, what: str) -> int:
    t = text.strip()
    if len(t) > 30 or not t.lstrip("+-").isdigit():
        shown = text if len(text) <= 30 else text[:27] + "..."
        raise argparse.ArgumentTypeError(f"{what} must be an integer, not {shown!r}")
    return int(t)


def seed(text: str) -> int:
    """A seed: an integer in the range of a Java long."""
    value = _int(text, "a seed")
    if not SEED_MIN <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"a seed must be between -2**63 and 2**63-1, not {text[:30]}")
    return value


def count(text: str) -> int:
    """A positive count: 1 .. COUNT_MAX."""
    value = _int(text, "a count")
    if not 1 <= value <= COUNT_MAX:
        raise argparse.ArgumentTypeError(f"must be between 1 and {COUNT_MAX:,}, not {text[:30]}")
    return value
