"""Benchmarks for ``metaroce bench NAME``: one module per benchmark (see metaroce/commands/bench.py)."""
