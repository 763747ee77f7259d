"""``metaroce bench tx`` and ``metaroce replay tx``: the block registered, the bench's figures
on the cycle model (MR-TX-153), the replay's inputs and its one-line errors (MR-TX-154,
MR-CLI-010)."""
import json
import subprocess
import sys

from metaroce import blocks
from metaroce.models import tx_cases as xc
from metaroce.models.tx import TxCycleModel


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "metaroce", *args], capture_output=True, text=True,
                          timeout=3600)  # a backstop against a hang; Verilator builds are slow on a loaded machine


def test_block_registered():
    """MR-TX-100: the block ``tx`` is the small instance."""
    model = blocks.get("tx").make_model(64)
    assert isinstance(model, TxCycleModel)
    assert (model.lay.conns, model.lay.paths) == (2, 4)


def test_bench_tx_model_rates():
    """MR-TX-153 on the cycle model: at 64 bits the frames leave at one beat per cycle; a burst
    of 16 ACKs is taken in 16 cycles (MR-TX-034)."""
    from metaroce.benches.tx import measure
    row = measure(64, 256, 16, "model")
    assert row["beats_per_cycle"] == 1.0 and row["acks_per_cycle"] == 1.0
    assert row["packets"] == 16 and row["latency_cycles"] > 0


def _replay_model(spec):
    """MR-TX-154: the cycle model through the replay driver on ``spec``, without ACKs."""
    model = TxCycleModel(64)
    items, mem, image, tm, acks = xc.replay_inputs(spec, [], model.lay, paths=4)
    drv = xc.ReplayDriver(model.lay, 64, items, mem, tm, acks, image=image)
    while not drv.finished:
        inp = drv.inputs()
        drv.observe(inp, model.step(inp))
        drv.settle(model.active)
    return drv


def test_replay_tx_inputs(tmp_path):
    """MR-TX-154: the work-request file and the ACK frames become the engine's inputs; without
    ACKs a lossless receiver completes every work request (the cycle model). MR-TX-155: "send"
    and "send_imm" are sends: MR_SEND / MR_SEND_IMM with the stream's receive sequences;
    MR-TXS-061, MR-TX-178: "read" a READ request (MR_READ, its RETH, no payload; completion op 4)."""
    spec = {"seed": 3, "connections": [{"conn": 0, "dest_qp": 20, "local_qp": 1,
                                        "sports": [49152, 49153, 49154, 49155]}],
            "work_requests": [{"conn": 0, "stream": 0, "op": "write", "length": 3000, "rkey": 7},
                              {"conn": 0, "stream": 1, "op": "write_imm", "length": 100, "imm": 5},
                              {"conn": 0, "stream": 1, "op": "send", "length": 10},
                              {"conn": 0, "stream": 1, "op": "send_imm", "length": 20, "imm": 6},
                              {"conn": 0, "stream": 0, "op": "read", "length": 5000, "va": 64,
                               "rkey": 9}]}
    drv = _replay_model(spec)
    assert [c["status"] for c in drv.res["cqe"]] == [0, 0, 0, 0, 0]
    assert [c["op"] for c in drv.res["cqe"] if c["stream"] == 0] == [0, 4]
    fs = drv.res["frames"]
    assert [f.udp.sport for f in fs[:4]] == [49152, 49153, 49154, 49155]
    sends = [(f.bth.opcode, f.mrsh.recv_seq, f.imm, len(f.payload)) for f in fs if f.mrsh]
    assert sends == [(0xC2, 0, None, 10), (0xC3, 1, 6, 20)]
    reads = [(f.reth.va, f.reth.rkey, f.reth.dma_len, f.mrdh.msg_len, len(f.payload))
             for f in fs if f.bth.opcode == 0xC6]
    assert reads == [(64, 9, 5000, 0, 0)]


def test_replay_tx_atomics():
    """MR-TX-195: "cmp_swap" and "fetch_add" are atomics (MR_CMP_SWAP / MR_FETCH_ADD, RETH with
    DMA length 8, the operands as payload; completion op 5 / 6, length 8); one of length 16 is
    refused LOC_LEN_ERR (MR-TXS-096)."""
    spec = {"seed": 3, "connections": [{"conn": 0, "dest_qp": 20}],
            "work_requests": [{"conn": 0, "stream": 0, "op": "cmp_swap", "va": 64, "rkey": 9,
                               "swap": 0x0102030405060708, "compare": 0x1112131415161718},
                              {"conn": 0, "stream": 0, "op": "write", "length": 100},
                              {"conn": 0, "stream": 1, "op": "fetch_add", "va": 8, "rkey": 9,
                               "swap": 3, "compare": 99},
                              {"conn": 0, "stream": 1, "op": "fetch_add", "length": 16}]}
    drv = _replay_model(spec)
    assert sorted((c["wr_id"], c["op"], c["length"], c["status"]) for c in drv.res["cqe"]) == [
        (0, 5, 8, 0), (1, 0, 100, 0), (2, 6, 8, 0), (3, 6, 16, 1)]
    at = [(f.bth.opcode, f.reth.va, f.reth.dma_len, f.mrdh.msg_len, f.payload)
          for f in drv.res["frames"] if f.bth.opcode in (0xC8, 0xC9)]
    assert sorted(at) == [(0xC8, 64, 8, 16, bytes(range(1, 9)) + bytes(range(0x11, 0x19))),
                          (0xC9, 8, 8, 8, (3).to_bytes(8, "big"))]


def test_replay_tx_errors(tmp_path):
    """MR-CLI-001, MR-CLI-010: bad inputs are one line and exit 2, before any simulation."""
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    far = tmp_path / "far.json"
    far.write_text(json.dumps({"work_requests": [{"conn": 9, "length": 1}]}))
    for args in ([str(bad)], [str(far)]):
        r = _cli("replay", "tx", *args, "--width", "64")
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "error" in r.stderr
    r = _cli("bench", "tx", "--sizes", "0")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    for spec in ({"connections": []},
                 {"work_requests": [{"conn": 0, "op": "send_inv", "length": 1}]}):
        try:
            xc.replay_inputs(spec, [], TxCycleModel(64).lay, paths=4)
        except xc.ReplayError:
            continue
        raise AssertionError(f"{spec} accepted")
