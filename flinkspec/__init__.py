"""The ``flinkspec`` command line (``flinkspec --help``)."""
