"""Subcommands of ``flinkspec``; each module has ``register(subparsers)``."""
