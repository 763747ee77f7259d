"""``metaroce verilog rx_256x4`` and the argument checks of ``metaroce bench rx`` (MR-RX-001,
MR-RX-002)."""
import subprocess
import sys

from metaroce import blocks
from metaroce.models.rx import RxCycleModel


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "metaroce", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_blocks_registered():
    """MR-RX-001: both instances are blocks whose model has the instance's sizes."""
    for name, conns, paths in (("rx", 4096, 8), ("rx_256x4", 256, 4)):
        blk = blocks.get(name)
        model = blk.make_model(64)
        assert isinstance(model, RxCycleModel)
        assert (model.lay.conns, model.lay.paths) == (conns, paths)


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
