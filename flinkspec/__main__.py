"""``python -m flinkspec ...``: the command line, as the ``flinkspec`` script runs it."""

from flinkspec.cli import main

raise SystemExit(main())
