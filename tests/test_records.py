"""The engine's state records (docs/spec/engine.md): the chapter's table is the code's."""
import pathlib
import re

import pytest

from metaroce.models import records as R

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _doc_table():
    text = (ROOT / "docs" / "spec" / "engine.md").read_text()
    m = re.search(r"<!-- records-table:.*?-->\n(.*?)\n<!-- /records-table -->", text, re.S)
    assert m, "engine.md lost its generated records table"
    return m.group(1).strip()


def test_doc_table_matches_layouts():
    """MR-ENG-028: sizes, counts, totals and memories in engine.md are computed from the layouts."""
    assert _doc_table() == R.markdown_table()


def test_counts_for_4096_connections_x_8_paths():
    """MR-ENG-010, MR-ENG-028: per-connection tables have CONNS rows, per-path CONNS x PATHS."""
    assert R.CONNS == 4096 and R.PATHS == 8
    assert R.table("conn_tx").count == 4096
    assert R.table("path_tx").count == R.table("path_rx").count == 4096 * 8
    assert R.table("tx_msg").count == 4096 * R.TX_MSGS
    assert R.table("rtx").count == R.RTX_POOL
    # a table's total is its width times its count; the whole engine fits a VU9P's 960 URAMs
    for t in R.TABLES:
        assert t.total_bits == t.layout.size * t.count
        assert t.memory in ("BRAM", "URAM")
    assert sum(t.blocks for t in R.TABLES if t.memory == "URAM") <= 960 // 3


def test_record_fields_hold_the_protocol_ranges():
    """MR-ENG-020..027: the fields are wide enough for the protocol's values."""
    f = dict(R.PATH_RX)
    assert f["sack"].width == 256 and f["cum"].width == 24
    assert dict(R.PATH_TX)["live"].width >= (R.PATH_RING - 1).bit_length()
    assert dict(R.TX_MSG)["ack_bits"].width == R.CHUNK_WINDOW
    assert dict(R.RX_MSG)["chunk_bits"].width == R.CHUNK_WINDOW
    assert 1 << dict(R.RTX)["next"].width >= R.RTX_POOL
    assert 1 << dict(R.RTX)["tx_slot"].width >= R.TX_MSGS
    # chunk index of the last chunk of a 2^32 - 1 byte message at 4 KiB MTU
    assert (2**32 - 1) // 4096 < 1 << dict(R.RTX)["chunk"].width


def test_fits_rejects_values_outside_fields():
    """MR-ENG-029: ``fits`` packs LSB first and refuses what a field cannot hold."""
    w = R.fits(R.RTX, tx_slot=3, chunk=5)
    assert w & 0x7 == 3 and (w >> dict(R.RTX)["chunk"].offset) & 0xFFFFF == 5
    with pytest.raises(ValueError):
        R.fits(R.RTX, nbytes=1 << 13)
    with pytest.raises(ValueError):
        R.fits(R.RTX, no_such_field=1)


def test_model_limits_match_the_instance_at_400g():
    """MR-ENG-010..013: the reference endpoint's default limits at 400 Gb/s x 10 us are the engine
    instance's: chunk window, message slots, record pool."""
    from metaroce.models.endpoint import Endpoint
    ep = Endpoint(line_rate_bps=400e9, base_rtt=10e-6, mtu=4096)
    assert ep.chunk_window == R.CHUNK_WINDOW
    assert ep.max_tx_msgs == R.TX_MSGS and ep.max_rx_msgs == R.RX_MSGS
    assert ep.max_outstanding == R.RTX_POOL


def test_responder_resource_record():
    """MR-ENG-031, MR-VERB-005: one ``rsp`` row per responder resource, RD_ATOMIC per connection,
    wide enough for a READ's range and an atomic's operands; the model's default bound is it."""
    from metaroce.models.endpoint import Endpoint
    t = R.table("rsp")
    assert t.count == R.CONNS * R.RD_ATOMIC
    f = dict(R.RSP)
    assert f["va"].width == 64 and f["operand"].width == f["compare"].width == 64
    assert f["length"].width == 32 and 1 << f["tx_slot"].width >= R.TX_MSGS
    assert Endpoint().max_rd_atomic == R.RD_ATOMIC
    # a READ/atomic tx_msg: op needs 3 bits (8 kinds) and the request's own ack bit
    assert dict(R.TX_MSG)["op"].width == 3 and dict(R.TX_MSG)["req_acked"].width == 1

