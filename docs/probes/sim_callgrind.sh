#!/bin/bash
# Machine instructions per simulated packet of a `bench simspeed` run (docs/benchmarks.md,
# "simspeed"): valgrind's callgrind counts one run at 300 and one at 1,300 packets per sender; the
# difference per packet leaves the set-up out (the test data's generation by numpy stays in, about
# 16,000 per packet). Deterministic to about 0.05 % between runs of the same code with OpenBLAS on
# one thread (its worker threads otherwise add up to 3 % of noise), no address randomisation and a
# fixed hash seed.
#
#   docs/probes/sim_callgrind.sh [MODE] [PYTHON]     # MODE metaroce|fabric|rocev2, default metaroce
#   KEEP=DIR docs/probes/sim_callgrind.sh ...        # keeps the two callgrind files in DIR, for
#                                                    # docs/probes/sim_callgrind_groups.py
# Another commit: PYTHONPATH=DIR/pkg as sim_trace_digest.py says, run from outside DIR (python -c
# puts the working directory first on sys.path: DIR's own metaroce/, which has no models/ or sim/,
# would be imported, and the editable install would then answer for models and sim from the
# worktree). Measure an archive, not a tree being edited: with PYTHONDONTWRITEBYTECODE=1 each of
# the two runs compiles what it imports, and a file changed in between adds the difference of the
# compilations (thousands of instructions per packet) to the result.
set -e
mode=${1:-metaroce}
py=${2:-.venv/bin/python}
tmp=${KEEP:-$(mktemp -d)}
mkdir -p "$tmp"
res=""
for n in 300 1300; do
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONHASHSEED=0 setarch "$(uname -m)" -R \
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$n" "$py" -c "
from metaroce.benches import simspeed
print('PACKETS', simspeed.one_run({'mode': '$mode', 'hosts': 8, 'packets': $n})['packets'])" > "$tmp/log.$n" 2>&1
  ir=$(grep -o "Collected : [0-9]*" "$tmp/log.$n" | grep -o "[0-9]*$")
  pk=$(grep "^PACKETS" "$tmp/log.$n" | awk '{print $2}')
  res="$res $ir $pk"
done
[ -n "$KEEP" ] || rm -rf "$tmp"
echo "$res" | awk -v m="$mode" '{printf "%s: %.0f instructions per packet (%d packets more)\n", m, ($3-$1)/($4-$2), $4-$2}'
