"""schedlut49 (issue 12; not part of the design): where the row pipeline's LUTs are (module
``tx_sched_rows.pipe``: the row forwards, S1's schedule terms, S2's operation), the scheduler
as ``schedlut_49.py`` builds it (the TX's parameters), in ``metaroce synth``'s flow plus
``write_json``. Each LUT of the module is attributed to the registers and ports its output
reaches through logic only (dp44's method, ``dp44_fb_by_sink.py``), a bit of the row written
back (``wb_row``) or S2's row register (``s2_row``) named by its row field (``entries.lnq``:
every entry's), a bit of the schedule op's terms (``s2_pre``) by its field; a LUT that reaches several fields counted in equal parts. Prints the parts
by LUTs. Run from the repository root:

    .venv/bin/python docs/hw/probes/schedlut_fields_49.py [--hdl FILE] [CONNSxPATHS] [--top N]

(default 4096x8; ``--hdl FILE`` as ``lvl42_rows_depth.py --hdl``)."""
import json
import re
import sys
from collections import Counter
from pathlib import Path

from dp44_fb_by_sink import FFS, LOGIC, logic_sinks
from ecp5_cells_by_sink import bit_readers
from lvl42_rows_depth import dut, field_names, load

from metaroce.hdl.tx_sched_rows import TxSchedRows
from metaroce.sim import synth
from metaroce.sim.verilator import generate_rtlil

MOD = "tx_sched_rows.pipe"


def netlist(component, run, key):
    """``dp44_fb_by_sink.mapped_module``'s run (the scheduler as ``tx_sched_rows``), the row
    pipeline's module of its netlist."""
    text = generate_rtlil(component, "tx_sched_rows", drop_zero_init=True)
    work = synth.default_work_root() / f"{run}-{synth.synth_key(text, key)[-20:]}"
    if not (work / "net.json").is_file():
        script = synth.synth_script("tx_sched_rows").replace("; ", "\n") + "\nwrite_json net.json\n"
        synth._run_yosys(synth.yosys_command(), work, text, "s.ys",
                         synth.READERS["rtlil"].replace("; ", "\n") + "\n" + script, 7200, "rtlil")
    mods = json.loads((work / "net.json").read_text())["modules"]
    total = {t: sum(c["type"] == t for m in mods.values() for c in m["cells"].values())
             for t in ("$lut", "FDRE")}
    return mods[MOD], total


def group_of(field):
    """``entries[3].lnq`` -> ``entries.lnq``."""
    return re.sub(r"\[\d+\]", "", field)


def attribute(mod, fields):
    cells = mod["cells"]
    bitname, rowbit = {}, {}
    for n, nn in mod["netnames"].items():
        for i, b in enumerate(nn["bits"]):
            if isinstance(b, int) and (b not in bitname or not nn.get("hide_name", 0)):
                bitname[b] = (n, i, nn.get("hide_name", 0))
            if isinstance(b, int) and n.lstrip("\\") in fields:
                rowbit[b] = (n.lstrip("\\"), i)
    readers = bit_readers(cells)
    port_of = {b: p for p, v in mod["ports"].items() for b in v["bits"]
               if isinstance(b, int) and v["direction"] == "output"}
    outs = {cn: [b for p, bs in c["connections"].items()
                 if c.get("port_directions", {}).get(p) == "output" for b in bs
                 if isinstance(b, int)] for cn, c in cells.items()}
    logic = {cn for cn, c in cells.items() if c["type"] in LOGIC}

    def sink_name(q):
        if q in rowbit:
            base, i = rowbit[q]
            return f"{base}:{group_of(fields[base][i])}"
        n, i, _ = bitname.get(q, ("?", 0, 1))
        return re.sub(r"\d+$", "#", n.lstrip("\\"))

    def own(x):
        out = set()
        for b in outs[x]:
            for r, p in readers[b]:
                if r in logic:
                    continue
                t = cells[r]["type"]
                if t in FFS:
                    q = cells[r]["connections"]["Q"][0]
                    out.add(sink_name(q) + ("" if p == "D" else "." + p))
                else:
                    out.add("mem" if t.startswith("RAM") else t)
            if b in port_of:
                out.add("port:" + port_of[b])
        return out

    sinks = logic_sinks(logic, outs, readers, own)
    parts = Counter()
    for cn in logic:
        if cells[cn]["type"] != "$lut":
            continue
        s = set(sinks[cn])
        # the memory's write data is the row written back: counted with wb_row's fields
        if len(s) > 1:
            s.discard("mem")
        for k in s:
            parts[k] += 1 / len(s)
    return parts


def main(argv):
    cls, tag = TxSchedRows, "cur"
    if argv[:1] == ["--hdl"]:
        cls, tag, argv = load(Path(argv[1])), Path(argv[1]).stem, argv[2:]
    top = 60
    if "--top" in argv:
        i = argv.index("--top")
        top, argv = int(argv[i + 1]), argv[:i] + argv[i + 2:]
    inst = argv[0] if argv else "4096x8"
    c, p = map(int, inst.split("x"))
    d = dut(cls, c, p, 512, False)
    mod, total = netlist(d, f"schedlut49-fields-{inst}", tag)
    rows = field_names(d.rl.row)
    parts = attribute(mod, {"wb_row": rows, "s2_row": rows,
                            "s2_pre": field_names(d._sched_layout())})
    print(json.dumps({"inst": inst, "tag": tag, "luts": total["$lut"], "ffs": total["FDRE"],
                      "pipe_luts": round(sum(parts.values()))}))
    for k, n in parts.most_common(top):
        print(f"{n:8.1f}  {k}")


if __name__ == "__main__":
    main(sys.argv[1:])
