"""Subcommands of the ``metaroce`` command, one module each."""
