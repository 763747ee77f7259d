"""The name the results pages cite for ``levels_by_sink.py BLOCK WIDTH [MIN_DEPTH] [--reuse]``
with its older reading of asynchronous memory reads (``--address-sinks``: the address ends a
path, the data starts one). Not part of the design.

    .venv/bin/python docs/hw/probes/rx_levels_by_sink.py rx_256x4 64 [MIN_DEPTH] [--reuse]
"""
import sys

from levels_by_sink import main

main([*sys.argv[1:], "--address-sinks"])
