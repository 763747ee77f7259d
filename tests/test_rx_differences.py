"""The RX engine's documented differences from the reference endpoint (hw-rx.md MR-RX-106,
MR-RX-114): outside a conforming peer's traffic the two may answer differently, and these tests
pin down how, so that a change on either side is seen. Against the packet model (models/rx.py);
the model and the RTL are held equal by the locksteps."""
from metaroce.models import rx_cases as rc
from metaroce.models.codec import decode
from metaroce.models.rx import RxCode
from metaroce.models.wire import NakReason, Op

SMALL = (256, 4, 256)


def test_send_chunk_naming_another_receive():
    """MR-RX-106: the second chunk of a SEND names another receive (``recv_seq``) than its first
    chunk. The endpoint NAKs it LENGTH; the engine places it by its own receive row, at that
    buffer's base plus the chunk's offset (same kind and length, so the message stage takes it)."""
    ep, s = rc.endpoint_setup(seed=4, n_streams=1)
    c, k, mtu = s.conns[0], s.keys[0], s.mtu
    base0, base1 = k.base + 64, k.base + 16 * mtu
    posts = [s.recv_write(c.qp, 0, 0, base0, 4 * mtu, 11), s.recv_write(c.qp, 0, 1, base1, 4 * mtu, 12)]
    msg_len = 2 * mtu
    first = s.send(c, 0, path=0, stream=0, offset=0, plen=mtu, msg_len=msg_len, msg=0, name="first")
    other = s.send(c, 1, path=0, stream=0, offset=mtu, plen=mtu, msg_len=msg_len, msg=0, name="other")
    cases = posts + [first, other]

    exp = rc.expected(s.writes + cases, *SMALL)
    assert [o.code for o in exp["outcomes"]] == [RxCode.ACCEPTED, RxCode.ACCEPTED]
    place = exp["outcomes"][1].place
    assert (place["addr"], place["length"]) == (base1 + mtu, mtu)
    assert exp["outcomes"][0].place["addr"] == base0

    assert not any(r[0] == "nak" for r in rc.requests(s, exp["ack"]))
    # the message completes once, for all its bytes (the first chunk's receive)
    assert [(q[0], q[4], q[6]) for q in rc.completions(s, exp["cqe"])] == [(c.qp, msg_len, 11)]

    ref, _ = rc.endpoint_reference(ep, s, cases)
    psn = decode(other.frame).bth.psn
    assert [r[:5] for r in ref if r[0] == "nak"] == [("nak", c.qp, 0, NakReason.LENGTH, psn)]
    assert ep.poll_cq() == []


def test_read_response_naming_a_write():
    """MR-RX-114: a READ response naming a message number below the stream's next that was not a
    READ (no outstanding-READ row holds it) is refused NO_READ (NAK INVALID_REQUEST) and
    nothing is placed; the endpoint would take it as a duplicate chunk. A response carrying the MRDH ERROR
    flag is not read as such: its length decides (LENGTH against the READ's row)."""
    s = rc.Setup(*SMALL, seed=6, n_streams=1)
    c, k, mtu = s.conns[0], s.keys[1], s.mtu
    wr = s.write(c, stream=0, plen=8, name="write")                  # message 0: a WRITE
    rd_msg = c.msg[0]
    issue = s.read_write(c.qp, 0, rd_msg, k.base + 128, mtu, 21)      # message 1: a READ
    c.msg[0] = rd_msg + 1
    resp_write = s.write(c, op=Op.MR_READ_RESP, stream=0, plen=8, msg_len=8, msg=0,
                         expect=RxCode.NO_READ, name="resp-to-write")
    resp_short = s.write(c, op=Op.MR_READ_RESP, stream=0, plen=0, msg_len=0, msg=rd_msg,
                         expect=RxCode.LENGTH, name="error-like")
    items = s.writes + [wr, issue, resp_write, resp_short]
    exp = rc.expected(items, *SMALL)
    assert [o.code for o in exp["outcomes"]] == [RxCode.ACCEPTED, RxCode.NO_READ, RxCode.LENGTH]
    assert exp["outcomes"][1].place is None and exp["outcomes"][2].place is None
    assert exp["cqe"] == []
    psns = [decode(x.frame).bth.psn for x in (resp_write, resp_short)]
    assert [r[:5] for r in rc.requests(s, exp["ack"])] == [
        ("nak", c.qp, 0, NakReason.INVALID_REQUEST, psns[0]), ("nak", c.qp, 0, NakReason.LENGTH, psns[1])]
