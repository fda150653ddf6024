"""The command line: ``toolcall-sim`` and its subcommands (one module each in ``commands/``)."""
