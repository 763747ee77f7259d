"""Where the instructions of a simulated packet go, by C function of the interpreter, grouped
(docs/benchmarks.md, "simspeed"): the difference of the two callgrind runs that
``KEEP=DIR docs/probes/sim_callgrind.sh MODE`` keeps (1,300 and 300 packets per sender), per
packet. With two directories, both and the change.

    KEEP=/tmp/cg_a docs/probes/sim_callgrind.sh metaroce
    .venv/bin/python docs/probes/sim_callgrind_groups.py /tmp/cg_a [/tmp/cg_b]
    .venv/bin/python docs/probes/sim_callgrind_groups.py --inclusive 60 /tmp/cg_a [/tmp/cg_b]

``--inclusive N``: the N C functions with the most instructions per packet counted with what
they call (callgrind's inclusive cost): where a cost hides behind an innocent bytecode (the
ninth pass found ``collections.Counter``'s Python ``__delitem__`` sending every ``stats[k] += 1``
through ``slot_mp_ass_subscript`` this way). The totals of the interpreter's entry points lead.
"""
import re
import subprocess
import sys

# (group, test on the C function's name); the first that matches takes it
GROUPS = [
    ("interpreter loop (_PyEval_EvalFrameDefault)", lambda k: k.startswith("_PyEval_EvalFrameDefault")),
    ("test data, outside the timed run (numpy PCG64, zeroing)",
     lambda k: "pcg64" in k or "random_bounded" in k or "memset" in k),
    ("allocation, freeing, copying", lambda k: any(s in k for s in (
        "Malloc", "Free", "malloc", "free", "alloc", "Alloc", "dealloc", "NewReference", "GC_New",
        "GC_Del", "GC_UnTrack", "GC_Link", "FromDouble", "memcpy", "memmove", "Trash", "PyTuple_New",
        "_PyTuple_FromArray", "FromSsize_t", "FromLong", "GetSlice", "PyList_New", "InitializeDict",
        "_PyLong_New", "_int_"))),
    ("int arithmetic not inline", lambda k: k.startswith(("_PyLong_", "long_", "PyNumber_", "x_add", "x_sub",
                                                          "k_mul", "fast_mod", "PyLong_As"))),
    ("Python calls and frames", lambda k: any(s in k for s in (
        "Frame", "initialize_locals", "MakeTpCall", "CheckFunctionResult", "Vectorcall", "vectorcall",
        "type_call", "vgetargs", "PushAndInit", "cfunction", "_PyArg"))),
    ("generic compares, truth tests", lambda k: any(s in k for s in ("RichCompare", "richcompare", "IsTrue"))),
    ("dict lookups and stores", lambda k: "dict" in k or "unicodekeys" in k or "insertdict" in k),
    ("event heap (heapq), hashing", lambda k: k in ("siftup", "siftdown", "_Py_HashDouble", "tuplehash",
                                                     "PyObject_Hash", "float_hash")),
]


def _load(path, inclusive=False):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", path]
                         + (["--inclusive=yes"] if inclusive else []), capture_output=True,
                         text=True, check=True).stdout
    d = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\([\d.]+%\)\s+)?(\S.*)$", line)
        if not m:
            continue
        name = m.group(2)
        name = "TOTAL" if "PROGRAM TOTALS" in name else re.sub(r"\s*\[.*\]$", "", name)
        name = name.split(":")[-1].split("'")[0]
        v = int(m.group(1).replace(",", ""))
        # a recursive function's inclusive cost already holds its inner calls ('2): the largest
        d[name] = max(d.get(name, 0), v) if inclusive else d.get(name, 0) + v
    return d


def _packets(path):
    with open(path) as f:
        return int(next(line.split()[1] for line in f if line.startswith("PACKETS")))


def per_packet(dirn, inclusive=False):
    """Instructions per packet by C function: (1,300-run - 300-run) / (packets more)."""
    a, b = _load(f"{dirn}/cg.300", inclusive), _load(f"{dirn}/cg.1300", inclusive)
    pk = _packets(f"{dirn}/log.1300") - _packets(f"{dirn}/log.300")
    return {k: (b.get(k, 0) - a.get(k, 0)) / pk for k in set(a) | set(b)}


def grouped(d):
    out = {g: 0.0 for g, _ in GROUPS}
    out["the rest"] = 0.0
    for k, v in d.items():
        if k != "TOTAL":
            out[next((g for g, t in GROUPS if t(k)), "the rest")] += v
    return out


def main(dirs):
    per = [per_packet(d) for d in dirs]
    gs = [grouped(d) for d in per]
    tot = [d["TOTAL"] for d in per]
    print("%-58s" % "instructions per packet" + "".join("%10.0f" % t for t in tot))
    for g in gs[0]:
        row = "".join("%10.0f" % x[g] for x in gs)
        if len(gs) == 2:
            row += "%+9.0f" % (gs[1][g] - gs[0][g])
        print("%-58s%s  %5.1f %%" % (g, row, 100 * gs[-1][g] / tot[-1]))


def main_inclusive(n, dirs):
    per = [per_packet(d, True) for d in dirs]
    for k in sorted(per[-1], key=lambda k: -per[-1][k])[:n]:
        row = "".join("%10.0f" % d.get(k, 0) for d in per)
        if len(per) == 2:
            row += "%+9.0f" % (per[1].get(k, 0) - per[0].get(k, 0))
        print("%-58s%s" % (k[:58], row))


if __name__ == "__main__":
    args = sys.argv[1:] or sys.exit(__doc__)
    if args[0] == "--inclusive":
        main_inclusive(int(args[1]), args[2:])
    else:
        main(args)
