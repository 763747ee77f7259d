"""The hardware CLI commands: `metaroce verilog`, `metaroce replay`, `metaroce coverage` (and
the user errors of `metaroce synth`); issue 4 items 6 and 7, issue 7 item 6."""
import json

import pytest

from metaroce.cli import main
from metaroce.models import codec, pcap
from metaroce.models.wire import Op, Reason
from metaroce.models import parser_cases as pc


def test_verilog_writes_the_module(tmp_path, capsys):
    assert main(["verilog", "parser", "--width", "64", "-o", str(tmp_path / "out")]) == 0
    path = tmp_path / "out" / "parser_w64.v"
    assert capsys.readouterr().out.strip() == str(path)
    text = path.read_text()
    assert "module parser(" in text
    for port in ("s_axis__tdata", "s_axis__tuser", "m_meta__payload", "m_payload__tkeep",
                 "m_bypass__tvalid", "reg_addr", "reg_data"):
        assert port in text
    assert "input [63:0] s_axis__tdata" in text


@pytest.mark.parametrize("argv,words", [
    (["verilog", "nosuch", "--width", "64"], "unknown block 'nosuch'"),
    (["verilog", "parser", "--width", "48"], "not 48"),
    (["synth", "nosuch"], "unknown block"),
    (["replay", "nosuch", "x.pcap"], "unknown block"),
    (["replay", "parser", "/nonexistent/x.pcap", "--width", "64"], "cannot read"),
    (["replay", "parser", "x.pcap", "--width", "64", "--idle", "1.5"], "--idle"),
    (["coverage", "nosuch"], "unknown block"),
    (["coverage", "parser", "--width", "48"], "not 48"),
    (["coverage", "parser", "--frames", "-1"], "--frames"),
    (["coverage", "parser", "--shapes", "fast"], "--shapes"),
])
def test_user_errors_are_one_line(argv, words, capsys):
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert words in err
    assert len(err.strip().splitlines()) == 1, err


def test_replay_not_a_pcap(tmp_path, capsys):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"this is not a capture file at all")
    assert main(["replay", "parser", str(bad), "--width", "64"]) != 0
    err = capsys.readouterr().err
    assert "not a pcap" in err and len(err.strip().splitlines()) == 1


def _frames():
    """Valid frames of several kinds, one of every drop reason a pcap can carry, bypass."""
    cases = [
        pc.Case("ok-write", codec.encode(pc.frame(Op.MR_WRITE, b"payload!"))),
        pc.Case("ok-ack-v6", codec.encode(pc.frame(Op.MR_ACK, ipv6=True, vlan=12))),
        pc.Case("ok-send", codec.encode(pc.frame(Op.RC_SEND_ONLY, b"abc"))),
    ]
    by_reason = {}
    for c in pc.drop_cases() + pc.bypass_cases():
        r = pc.expected_reason(c)
        if not c.mac_error and r not in by_reason:
            by_reason[r] = c
    return cases + list(by_reason.values())


def test_replay_json_lockstep(tmp_path, capsys):
    """Replay through the 64-bit RTL: zero mismatches, every frame's drop reason as the
    codec says, decode --json names kept (MR-WIRE-110, MR-HW-020)."""
    cases = _frames()
    path = tmp_path / "mixed.pcap"
    pcap.write(path, [c.data for c in cases])
    rc = main(["replay", "parser", str(path), "--width", "64", "--json", "--backpressure", "0.3"])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert rc == 0
    summary = lines[-1]
    frames = lines[:-1]
    assert summary["summary"] is True and summary["frames"] == len(cases) == len(frames)
    assert summary["mismatches"] == 0 and summary["problems"] == 0
    assert summary["cycles"] > 0 and 0 < summary["beats_per_cycle"] <= 1
    expected = [pc.expected_reason(c) for c in cases]
    for c, obj, exp in zip(cases, frames, expected):
        assert obj == {**codec.decode_json(obj["frame"], c.data), "drop": obj["drop"],
                       "bypass": obj["bypass"]}
        if exp == Reason.NOT_ROCE:
            assert obj["bypass"] is True and obj["drop"] is None, c.name
        elif exp == Reason.NONE:
            assert obj["drop"] is None and not obj["bypass"], c.name
        else:
            assert obj["drop"] == exp.label, c.name
    dropped = {}
    for e in expected:
        if e not in (Reason.NONE, Reason.NOT_ROCE):
            dropped[e.label] = dropped.get(e.label, 0) + 1
    assert summary["dropped"] == dropped
    assert set(dropped) == {"truncated", "bad_ip", "length", "bad_opcode", "bad_version", "icrc"}
    assert summary["accepted"] == expected.count(Reason.NONE)
    assert summary["bypassed"] == expected.count(Reason.NOT_ROCE)


def _coverage(capsys, width, frames, tmp_path, shapes="none,idle,bp,both"):
    rc = main(["coverage", "parser", "--width", str(width), "--frames", str(frames), "--json",
               "--keep", str(tmp_path), "--shapes", shapes])
    out = json.loads(capsys.readouterr().out)
    return rc, out


def test_coverage_command_end_to_end(tmp_path, capsys):
    """`metaroce coverage parser` on a small run: RTL and model agree on every cycle, every
    frame's outcome is right, Verilator's line and toggle points were counted, and every
    outcome (each drop reason, accepted, bypass) was hit in the traffic shape run (MR-HW-020,
    MR-HW-070)."""
    rc, out = _coverage(capsys, 64, 5, tmp_path, shapes="both")
    assert rc == 0 and out["mismatches"] == 0 and out["problems"] == 0
    assert out["block"] == "parser" and out["width"] == 64 and out["frames"] > 300
    assert set(out["functional"]["bins"]["reason x shape"]) == {
        f"{r}/both" for r in ("none", "truncated", "bad_ip", "length", "bad_opcode", "bad_version",
                              "icrc", "mac_error", "bypass")}
    for kind in ("line", "toggle", "toggle_named", "toggle_temporaries"):
        part = out[kind]
        assert part["total"] > 100 and 0 < part["covered"] <= part["total"]
        assert part["uncovered_count"] == part["total"] - part["covered"]
    func = out["functional"]
    assert func["every_reason_every_shape"] and out["targets"]["every_reason_every_shape"]
    assert set(func["bins"]) == {"reason x shape", "opcode x headers", "reason x headers",
                                 "mac_error beat", "tkeep"}
    assert all(n > 0 for n in func["bins"]["mac_error beat"].values())
    assert (tmp_path / "coverage_parser_w64.dat").stat().st_size > 1000


@pytest.mark.slow
@pytest.mark.parametrize("width", [64, 512])
def test_coverage_targets(tmp_path, capsys, width):
    """Issue 7 targets: every drop reason at every width and shape, toggle >= 98% of the bits
    that can toggle."""
    rc, out = _coverage(capsys, width, 300, tmp_path)
    assert rc == 0 and out["targets"]["every_reason_every_shape"]
    assert out["targets"]["toggle_98"], out["toggle"]["uncovered"]


def test_counter_temporaries_excluded_by_event_count():
    """Coverage exclusions (docs/hw/verification.md): the top module's temporaries that only
    carry a counter's value, that value plus one or a constant (next state, increment,
    read-out multiplexer) are found in the Verilog and their bits excluded by that counter's
    event count; a temporary that mixes in another signal, and the same name in a submodule,
    are not."""
    from metaroce.tb import coverage as cov
    verilog = """module sub(a);
  assign \\$5  = a + 1'h1;
endmodule
module top(clk, reg_addr);
  assign \\$5  = cnt0 + 1'h1;
  assign \\$6  = cnt1 + 1'h1;
  assign \\$7  = \\$8  ? \\$9  : 64'h0000000000000000;
  always @* begin
    \\$9  = 64'h0000000000000000;
          \\$9  = cnt0;
          \\$9  = cnt1;
    \\$10  = cnt0;
      \\$10  = \\$5 [63:0];
  end
  assign \\$11  = cnt0 + other;
endmodule
"""
    temps = cov.counter_temporaries(verilog, "top")
    zero = (-1, 0)      # also a constant 0 at times
    assert temps == {"__0245": {(0, 0)}, "__0246": {(1, 0)}, "__0247": {(0, 0), (1, 0), zero},
                     "__0249": {(0, 0), (1, 0), zero}, "__02410": {(0, 0)}}
    points = [cov.Point("v_toggle", "t.v", 1, f"{name}[{bit}]:0->1", hier, 0)
              for hier, name in (("top", "__0245"), ("top", "__02411"), ("top.s", "__0245"))
              for bit in range(8)]
    keyed = {("top", n): v for n, v in temps.items()}
    summary = cov.summarise(points, counts=[6, 100], exclusions=(), counter_temps=keyed)
    # cnt0 + 1 reaches 7 after 6 events: bits 0-2 can rise, 3-7 cannot
    assert summary["toggle"]["total"] == 3 + 8 + 8
    assert sum(summary["toggle"]["excluded"].values()) == 5


def test_counter_pieces_and_flags_excluded_by_event_count():
    """Coverage exclusions (docs/hw/verification.md): a 64-bit counter counted in 16-bit
    pieces: the increment of a piece above the first (``cnt0[31:16] + 1``) is constant until
    2^16 events, the next state that puts it back in place is the counter's value, and the
    all-ones flags (``cnt0_ones0``), the ``piece == 0xfffe`` compares and the carry ANDs with
    a flag cannot rise before 65,534 events; a compare with another signal is not a flag."""
    from metaroce.tb import coverage as cov
    verilog = """module top(clk);
  assign \\$4  = cnt0[15:0] + 1'h1;
  assign \\$8  = cnt0[15:0] == 16'hfffe;
  assign \\$11  = & { cnt0_ones0, \\$10  };
  assign \\$12  = cnt0[31:16] + 1'h1;
  assign \\$13  = cnt0[15:0] == other;
  assign \\$14  = sel ? \\$12  : 16'h0000;
  always @* begin
    \\$256  = cnt0;
      \\$256 [15:0] = \\$4 [15:0];
      \\$256 [31:16] = \\$12 [15:0];
      \\$256  = 64'h0000000000000000;
    \\$257  = cnt0_ones0;
      \\$257  = \\$8 ;
      \\$257  = 1'h0;
  end
endmodule
"""
    temps = cov.counter_temporaries(verilog, "top")
    assert temps == {"__0244": {(0, 0)}, "__02412": {(0, 16)}, "__024256": {(0, 0), (-1, 0)},
                     "__02414": {(0, 16), (-1, 0)}}
    flags = cov.counter_flags(verilog, "top")
    assert flags == {"__0248": (0, 0xFFFE), "__02411": (0, 0xFFFF), "__024257": (0, 0xFFFE)}
    points = [cov.Point("v_toggle", "t.v", 1, text, "top", 0) for text in
              ["__02412[0]:0->1", "__024256[16]:0->1", "__024256[3]:0->1", "cnt0_ones0:0->1",
               "cnt0_ones1:0->1", "__0248:0->1", "__02411:0->1", "__024257:0->1", "__02413:0->1",
               "__02414[0]:0->1", "__02414[1]:0->1"]]
    keyed = {("top", n): v for n, v in temps.items()}
    summary = cov.summarise(points, counts=[6], exclusions=(), counter_temps=keyed,
                            counter_flag_temps={("top", n): v for n, v in flags.items()})
    # kept: the compare, and bit 0 of the piece's increment or 0 (the constant 1 or 0)
    assert summary["toggle"]["uncovered"] == ["__02413:0->1", "__02414[0]:0->1"]
    more = cov.summarise(points, counts=[70000], exclusions=(), counter_temps=keyed,
                         counter_flag_temps={("top", n): v for n, v in flags.items()})
    assert more["toggle"]["total"] == 11 - 1       # cnt0_ones1 needs 0xffff << 16 events


def test_constant_temporary_bits():
    """Coverage exclusions (docs/hw/verification.md): temporaries' bits fixed by the
    netlist's structure (a literal, or &, |, ^ of concatenations with constant bits there)
    are found; bits that depend on a signal, and temporaries also driven in an always
    block, are not."""
    from metaroce.tb import coverage as cov
    verilog = """module top(clk);
  wire [5:0] hi;
  wire [3:0] lo;
  wire [7:0] \\$1 ;
  wire [7:0] \\$2 ;
  wire [7:0] \\$3 ;
  wire [7:0] \\$4 ;
  reg [7:0] \\$5 ;
  assign \\$1  = { hi, 2'h0 } & { 4'h0, lo };
  assign \\$2  = 8'h81;
  assign \\$3  = \\$1  | { \\$2 [6:0], 1'h0 };
  assign \\$4 [3:0] = 4'h0;
  assign \\$5  = 8'h00;
  always @* begin
    \\$5  = { hi, lo };
  end
endmodule
"""
    bits = cov.constant_temporary_bits(verilog, "top")
    assert bits["__0241"] == {0: 0, 1: 0, 4: 0, 5: 0, 6: 0, 7: 0}     # bits 2-3: hi & lo
    assert bits["__0242"] == {i: (0x81 >> i) & 1 for i in range(8)}
    assert bits["__0243"] == {0: 0, 1: 1, 4: 0, 5: 0, 6: 0, 7: 0}
    assert bits["__0244"] == {0: 0, 1: 0, 2: 0, 3: 0}
    assert "__0245" not in bits
