"""Suite reliability (issue 7 item 7): nothing in the default run depends on wall-clock time."""
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_hypothesis_has_no_deadline():
    """tests/conftest.py turns Hypothesis' 200 ms per-example deadline and its data
    generation speed check off, also for tests that set other settings of their own."""
    assert settings.default.deadline is None
    assert settings(max_examples=5).deadline is None
    assert HealthCheck.too_slow in settings(max_examples=5).suppress_health_check


@settings(max_examples=3)
@given(st.integers())
def test_a_property_test_runs_without_deadline(n):
    import time
    time.sleep(0.3)         # longer than Hypothesis' default deadline: must not fail
    assert isinstance(n, int)


def _collected(nodeids, marks):
    """The node ids pytest collects (``-m marks``, no xdist) from the files of ``nodeids``."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    files = sorted({nodeid.split("::")[0] for nodeid in nodeids})
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-p", "no:xdist", "-m", marks, *files],
                         cwd=root, capture_output=True, text=True, timeout=3600).stdout
    collected = {line.strip() for line in out.splitlines() if "::" in line}
    assert collected, out[-2000:]
    return collected


def test_longest_first_names_tests_of_the_default_run():
    """Every test the scheduling order (conftest.LONGEST_FIRST) names exists and is in the
    default run: a renamed or slow-marked test would silently drop out of the order."""
    from conftest import BUDGET_SLOW, LONGEST_FIRST
    named = [nodeid for group in LONGEST_FIRST for nodeid in group]
    assert len(set(named)) == len(named)
    assert not set(named) & BUDGET_SLOW
    collected = _collected(named, "not slow")
    assert set(named) <= collected, set(named) - collected


def test_budget_slow_names_existing_tests():
    """Every entry of conftest.BUDGET_SLOW names a collected test (a node id, or a test name
    that stands for all its parametrizations): a mistyped entry would leave its test in the
    default run unnoticed, and the budget with it."""
    from conftest import BUDGET_SLOW
    collected = _collected(BUDGET_SLOW, "")
    bases = {nodeid.split("[", 1)[0] for nodeid in collected}
    assert {entry for entry in BUDGET_SLOW if entry not in collected and entry not in bases} == set()


def test_each_worker_block_starts_with_its_long_group():
    """The order xdist's load scheduler sees: worker k's first block (a quarter of its share of
    consecutive items) starts with group k; every item is kept, once."""
    from types import SimpleNamespace
    from conftest import LONGEST_FIRST, first_block_order
    named = [nodeid for group in LONGEST_FIRST for nodeid in group]
    items = [SimpleNamespace(nodeid=f"tests/test_x.py::t{i}") for i in range(1000)]
    items[500:500] = [SimpleNamespace(nodeid=nodeid) for nodeid in reversed(named)]
    out = first_block_order(items, 2)
    assert sorted(id(i) for i in out) == sorted(id(i) for i in items)
    block = len(items) // 2 // 4
    assert [i.nodeid for i in out[:len(LONGEST_FIRST[0])]] == list(LONGEST_FIRST[0])
    assert [i.nodeid for i in out[block:block + len(LONGEST_FIRST[1])]] == list(LONGEST_FIRST[1])
    assert first_block_order(items, 1)[:len(LONGEST_FIRST[0])] == out[:len(LONGEST_FIRST[0])]


_CPU_TESTS = '''
import subprocess, sys, time

def _burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

def test_burns():
    _burn(0.3)

def test_sleeps():
    time.sleep(0.3)

def test_child_burns():
    subprocess.run([sys.executable, "-c",
                    "import time\\nend = time.process_time() + 0.3\\nwhile time.process_time() < end: pass"], check=True)
'''


def test_cpu_times_record(tmp_path):
    """MR-FLOW-038: with METAROCE_CPU_TIMES=FILE a run (here a tiny one on two xdist workers)
    appends one JSON line per test: its worker, the worker's CPU seconds over the test and its
    waited-for children's, so a test that burns 0.3 s of CPU records at least that much, one that
    sleeps almost none, and a subprocess's CPU is counted as the children's."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    tests = Path(__file__).resolve().parent
    (tmp_path / "test_tiny.py").write_text(_CPU_TESTS)
    record = tmp_path / "cpu.jsonl"
    env = dict(os.environ, METAROCE_CPU_TIMES=str(record),
               PYTHONPATH=os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                          "-n", "2", "--rootdir", str(tmp_path), str(tmp_path / "test_tiny.py")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert "3 passed" in out.stdout, out.stdout + out.stderr
    rows = {r["nodeid"].split("::")[1]: r for r in map(json.loads, record.read_text().splitlines())}
    assert sorted(rows) == ["test_burns", "test_child_burns", "test_sleeps"]
    assert {r["worker"] for r in rows.values()} <= {"gw0", "gw1"}
    assert rows["test_burns"]["cpu_s"] >= 0.3 and rows["test_burns"]["children_s"] == 0
    assert rows["test_sleeps"]["cpu_s"] < 0.1
    assert rows["test_child_burns"]["children_s"] >= 0.3 and rows["test_child_burns"]["cpu_s"] < 0.3


def test_cpu_times_per_file_and_longest_first(tmp_path):
    """MR-FLOW-039, MR-FLOW-041: tests/cpu_times.py sums a record's CPU seconds (worker and
    children, a test recorded twice counted twice) per file, compares two runs, and deals the
    costliest tests to two groups, costliest first, each to the group of least total."""
    import json
    import cpu_times
    rows = [("tests/test_a.py::t1", 10.0, 50.0), ("tests/test_a.py::t2", 30.0, 0.0),
            ("tests/test_b.py::t3", 35.0, 0.0), ("tests/test_b.py::t4", 1.0, 0.0),
            ("tests/test_b.py::t4", 1.0, 0.5)]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps({"nodeid": n, "worker": "gw0", "cpu_s": c, "children_s": k}) + "\n"
                            for n, c, k in rows))
    costs = cpu_times.load(path)
    assert costs["tests/test_a.py::t1"] == 60.0 and costs["tests/test_b.py::t4"] == 2.5
    assert cpu_times.per_file(costs) == {"tests/test_a.py": 90.0, "tests/test_b.py": 37.5}
    half = {k: v / 2 for k, v in costs.items()}
    lines = cpu_times.table(costs, type(costs)(half)).splitlines()
    assert "| tests/test_a.py | 90 | 45 | -50% |" in lines
    assert lines[-1] == "| **all** (4 / 4 tests) | 128 | 64 | -50% |"
    assert cpu_times.longest_first(costs, 3) == (("tests/test_a.py::t1",),
                                                 ("tests/test_b.py::t3", "tests/test_a.py::t2"))
