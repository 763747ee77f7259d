"""The TX engine as one cycle model (docs/spec/hw-tx.md section 2, MR-TX-1xx): the cycle models
of the blocks it joins, stepped as the RTL (hdl/tx.py) wires them, plus the join stage.

* :class:`TxJoinModel`: the join stage (MR-TX-120..123): the per-connection template memory
  and the fork of each frame request into a payload read command (``laddr + offset``) and a
  frame descriptor (the request's fields and the connection's template);
* :class:`TxDataCycleModel`: the data path (MR-TX-102): the join stage, the payload DMA
  (:class:`~metaroce.models.dma_read.DmaReadCycleModel`) and the frame builder
  (:class:`~metaroce.models.frame_builder.FrameBuilderModel`);
* :class:`TxCycleModel`: the engine's TX half (MR-TX-101): the scheduler
  (:class:`~metaroce.models.tx_sched.TxSchedCycleModel`), the retransmit unit
  (:class:`~metaroce.models.retransmit.RetransmitCycleModel`) and the data path; with
  ``pacing`` (MR-TX-232..234) the scheduler joined to the per-frame pacer
  (:class:`~metaroce.models.tx_pace.PacedTxSchedCycleModel`) in the scheduler's place; with
  ``verdicts`` (MR-TX-256..258) the unit's path verdicts and the scheduler's restores into the
  windows; with ``rows`` (MR-TX-316..322) the row scheduler
  (:class:`~metaroce.models.tx_sched_rows.TxSchedRowsModel`) in the register scheduler's place;
  ``interval`` (MR-TX-455) is MR-ENG-299's frame interval, handed to the retransmit unit.

It is not a second description of any block: each block's timing is its own model's. One clock
(MR-TX-104): the outputs of the DMA, the frame builder, the join stage and the retransmit unit's
report queues are functions of their state, read first; the retransmit unit steps with the
scheduler's sent-event queue head and report readies; the scheduler steps with the retransmit
unit's reports and its ``s_sent`` ready; then the join stage, the DMA and the frame builder with
the outputs their neighbours had at the start of the cycle.

The port layouts are declared here and imported by the RTL; models/ never imports hdl/.
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.lib import data

from . import cwnd as cwnd_model
from . import protocol as P
from . import retransmit as rtx_model
from . import tx_sched as sched_model
from .dma_read import (CMD_DEPTH, INTAKE_STAGES, LANE_BITS, DmaReadCycleModel, cmd_layout,
                       lane_keep, out_beats, rotl)
from .fifo import SyncFifoModel
from .frame_builder import DESC_LAYOUT, FrameBuilderModel, header_len, payload_layout
from .retransmit import RetransmitCycleModel
from .rx import pack, unpack
from .tx_sched import SMALL as SCHED_SMALL
from .tx_pace import PACE_INPUTS, PACE_OUTPUTS, PacedTxSchedCycleModel
from .tx_sched import TxSchedCycleModel
from .tx_sched_rows import TxSchedRowsModel
from . import wire

__all__ = ["TxLayouts", "layouts", "TMPL_FIELDS", "template_of", "desc_of", "cmd_of",
           "TxJoinModel", "TxDataCycleModel", "TxCycleModel", "tx_model_small", "SMALL",
           "INPUTS", "OUTPUTS", "DATA_INPUTS", "DATA_OUTPUTS", "MRDH_VERSION", "ERR_DEPTH",
           "id_depth", "slot_of", "KIND_DEPTH", "SHARED_DESC_FIELDS", "ACK_ONLY_DESC_FIELDS", "builder_fields", "one_builder_desc", "ACK_DESC_INPUTS", "ACK_DESC_OUTPUTS", "RD_INPUTS", "RD_OUTPUTS", "TX_CTR", "TX_CTR_BASE", "SRC_LAYOUT", "is_atomic_frame",
           "src_of", "inline_beats", "path_record", "tx_model_verdicts_small", "HINT_INPUTS",
           "HINT_OUTPUTS", "tx_model_hints_small", "header_lane", "CONTROL_INPUTS",
           "check_control_options", "tx_model_control_small"]

#: MR-TX-100: the small instance: the scheduler's SMALL (2 connections x 2 streams x 4 paths),
#: a retransmit pool of 256 records (every path's 32 packets in flight), 16 read commands
#: outstanding.
SMALL = dict(SCHED_SMALL, pool=256, outstanding=16)

#: MR-TX-121: the MRDH version every data frame carries (MR-WIRE-071).
MRDH_VERSION = 1

#: MR-TX-124: slots of the queue of done records' error bits waiting for their frame's end.
ERR_DEPTH = 8

#: MR-TX-282: slots of the kind queue (one bit a descriptor the frame builder took, 1 for a
#: descriptor of ``s_ack_desc``, popped by its frame's last beat on ``m_axis``).
KIND_DEPTH = 16

#: MR-TX-281: the descriptor fields both kinds of frame read (Ethernet, IP, UDP, BTH, the
#: payload length), chosen by the arbitration; the MRAH and MRNH fields, which only MR_ACK and
#: MR_NAK read (MR-TXF-003), are the ACK descriptor's always, every other field the join
#: stage's always (an ACK or NAK frame reads none of them): no mux on those.
SHARED_DESC_FIELDS = tuple(n for n, _ in DESC_LAYOUT
                           if n.startswith(("vlan", "ipv6", "eth_", "ip_", "udp_", "bth_", "payload_len")))
ACK_ONLY_DESC_FIELDS = tuple(n for n, _ in DESC_LAYOUT if n.startswith(("mrah_", "mrnh_")))


def _field_mask(names):
    mask, at = 0, 0
    for n, f in DESC_LAYOUT:
        if n in names:
            mask |= ((1 << f.width) - 1) << at
        at += f.width
    return mask


_SHARED_MASK = _field_mask(SHARED_DESC_FIELDS)
_ACK_MASK = _field_mask(ACK_ONLY_DESC_FIELDS)
_JOIN_MASK = (1 << DESC_LAYOUT.size) - 1 & ~(_SHARED_MASK | _ACK_MASK)


def one_builder_desc(ack_sel, ack, join):
    """MR-TX-281: the frame builder's packed descriptor from the packed ACK descriptor ``ack``
    and the join stage's ``join``: the shared fields of the one ``ack_sel`` chooses, the MRAH
    and MRNH fields the ACK's, the others the join's."""
    return (((ack if ack_sel else join) & _SHARED_MASK) | (ack & _ACK_MASK)
            | (join & _JOIN_MASK))


#: MR-TX-280: the data path's and the TX half's ports for the ACK descriptors (``ack_desc``).
ACK_DESC_INPUTS = ["s_ack_desc__payload", "s_ack_desc__valid"]
ACK_DESC_OUTPUTS = ["s_ack_desc__ready"]

#: MR-TX-334: with ``rd_rows``, the scheduler's ``m_rd`` on the TX half's ports.
#: MR-TX-492: with ``hints``, the control path's ports and the band's configuration
HINT_INPUTS = ["s_cw_ack__payload", "s_cw_ack__valid", "cw_release", "cc_line_mbps",
               "cc_base_rtt_ns"]
HINT_OUTPUTS = ["s_cw_ack__ready", "m_cw_ev__payload", "m_cw_ev__valid", "m_cw_upd__payload",
                "m_cw_upd__valid"]
#: MR-TX-511: with the control path inside, only the band's configuration
CONTROL_INPUTS = ["cc_line_mbps", "cc_base_rtt_ns"]
RD_INPUTS = ["m_rd__ready"]
RD_OUTPUTS = ["m_rd__payload", "m_rd__valid"]

#: MR-TX-126: the engine's own 64-bit counters, read at ``reg_addr`` TX_CTR_BASE + index (after
#: the retransmit unit's, MR-TX-040; its ``tail_probes`` is not mapped, MR-TX-181: the address
#: is 4 bits, and a probe's frame, which carries RETX, is counted in ``resends``).
TX_CTR_BASE = rtx_model.CTR["tail_probes"]
TX_CTR = {name: i for i, name in enumerate(("frames", "frames_bad", "resends", "completions",
                                            "completions_err"))}
assert TX_CTR_BASE + len(TX_CTR) <= 16, "reg_addr is 4 bits"


def id_depth(outstanding):
    """MR-TX-124: slots of the join stage's queue of the commands' messages {conn, slot}: every
    command between the join stage and its done record (the command register, the DMA's queue,
    intake stages and ``outstanding`` reads, one in the R stage)."""
    return outstanding + CMD_DEPTH + INTAKE_STAGES + 2


def slot_of(fr, streams, depth):
    """MR-TXS-069: a frame request's message slot, its field ``slot`` (a READ response's
    stream and message are the requester's, and the responses in the last stream's ring
    advance its entries but not its message numbers, so the slot is not derived from them);
    ``streams`` and ``depth`` bound it."""
    assert fr.get("slot", 0) < streams * depth
    return fr.get("slot", 0)

#: MR-TX-192: an entry of the join stage's payload-source queue, one per frame with payload in
#: order: from the DMA (``inline`` 0) or the frame request's atomic operands (``inline`` 1;
#: ``cas``: 16 bytes, swap then compare, else the 8 of the add value)
SRC_LAYOUT = data.StructLayout({"inline": 1, "cas": 1, "swap": 64, "compare": 64})


def is_atomic_frame(fr):
    """MR-TX-191: a frame request of an atomic (MR_CMP_SWAP or MR_FETCH_ADD, MR-TXS-098)."""
    return fr["bth_opcode"] in (int(wire.Op.MR_CMP_SWAP), int(wire.Op.MR_FETCH_ADD))


def src_of(fr):
    """MR-TX-192: the payload-source entry of frame request ``fr`` (one with payload);
    MR-TX-367: its operands the request's (read only for an inline entry)."""
    at = is_atomic_frame(fr)
    return {"inline": int(at), "cas": int(fr["bth_opcode"] == int(wire.Op.MR_CMP_SWAP)),
            "swap": fr.get("swap", 0), "compare": fr.get("compare", 0)}


def header_lane(opcode):
    """MR-TX-479: the read command's ``lane``: the header length of a frame of ``opcode`` as the
    TX builds it (IPv4 without VLAN, MR-TX-467) mod 64."""
    return header_len({"vlan_en": 0, "ipv6": 0, "bth_opcode": opcode}) % (1 << LANE_BITS)


def inline_beats(src, width):
    """MR-TX-192: the payload beats ``{data, keep, last}`` (packed) of an inline entry ``src``:
    the operands in network order (the swap or add value, then a compare-and-swap's compare
    value, MR-WIRE-076) laid out as the DMA lays out a payload (MR-DMR-021); MR-TX-483: each
    beat rotated up by the atomic's header lane (MR-TX-480's beats)."""
    op = sched_model.OP_CMP_SWAP if src["cas"] else sched_model.OP_FETCH_ADD
    ops = sched_model.atomic_operands(op, src["swap"], src["compare"])
    lay, nb = payload_layout(width), width // 8
    s = header_lane(int(wire.Op.MR_CMP_SWAP if src["cas"] else wire.Op.MR_FETCH_ADD)) % nb
    return [pack(lay, {"data": rotl(d, s, nb), "keep": lane_keep(k, s, nb), "last": last})
            for d, k, last in out_beats(ops, nb)]


#: MR-TX-121: the template's fields besides the per-path UDP source ports (``sport``: path i
#: in bits 16i .. 16i + 15).
TMPL_FIELDS = (("eth_dst", 48), ("eth_src", 48), ("ip_src", 32), ("ip_dst", 32), ("ip_dscp", 6),
               ("ip_ecn", 2), ("ip_ttl", 8), ("pkey", 16), ("dest_qp", 24))

AXI_IN = ("arready", "rid", "rdata", "rresp", "rlast", "rvalid")
AXI_OUT = ("arid", "araddr", "arlen", "arsize", "arburst", "arvalid", "rready")
AXIS_OUT = ("tvalid", "tdata", "tkeep", "tlast", "tuser")

#: MR-TX-103: the data path's ports, by Verilog name.
DATA_INPUTS = (("s_frame__payload", "s_frame__valid", "s_cfg__payload", "s_cfg__valid",
                "m_axis__tready", "m_fail__ready") + tuple("m_axi__" + n for n in AXI_IN))
DATA_OUTPUTS = (("s_frame__ready", "s_cfg__ready") + tuple("m_axis__" + n for n in AXIS_OUT)
                + tuple("m_axi__" + n for n in AXI_OUT) + ("m_fail__payload", "m_fail__valid"))
#: MR-TX-103: the engine's ports, by Verilog name.
INPUTS = (("s_wr__payload", "s_wr__valid", "s_ack__payload", "s_ack__valid", "s_cfg__payload",
           "s_cfg__valid", "m_axis__tready", "m_cqe__ready", "m_error__ready", "now", "reg_addr")
          + tuple("m_axi__" + n for n in AXI_IN)
          # MR-TX-105: the congestion windows' setup writes and configuration
          + ("s_cw_setup__payload", "s_cw_setup__valid", "cc_on", "cc_beta_q", "cc_cap")
          # MR-TX-171: READ responses in, their records out (the scheduler's)
          + ("s_rsp__payload", "s_rsp__valid", "m_rsp_done__ready")
          # MR-TX-469: the paths' initial PSNs
          + ("s_psn__payload", "s_psn__valid"))
OUTPUTS = (("s_wr__ready", "s_ack__ready", "s_cfg__ready", "s_cw_setup__ready")
           + tuple("m_axis__" + n for n in AXIS_OUT)
           + ("m_cqe__payload", "m_cqe__valid", "m_error__payload", "m_error__valid", "reg_data")
           + tuple("m_axi__" + n for n in AXI_OUT)
           + ("s_rsp__ready", "m_rsp_done__payload", "m_rsp_done__valid")
           + ("s_psn__ready", "psn_ignored"))


@dataclass(frozen=True)
class TxLayouts:
    conns: int
    paths: int
    sched: sched_model.Layouts
    rtx: rtx_model.Layouts
    cfg: data.StructLayout
    cmd: data.StructLayout
    cw: cwnd_model.Layouts


def layouts(conns=SMALL["conns"], streams=SMALL["streams"], paths=SMALL["paths"],
            depth=SMALL["depth"], pool=SMALL["pool"], verdicts=False, share_out=False,
            hints=False):
    """The engine's port layouts (MR-TX-103): the scheduler's ``wr`` and ``cqe``, the retransmit
    unit's ``ack`` and ``error``, the template write ``cfg`` (MR-TX-121) and the DMA command;
    ``verdicts`` (MR-TX-256): the windows' layouts with the verdicts (``s_cw_setup`` gains
    ``share``, MR-CW-106); ``share_out`` (MR-TX-300): the unit's probe item with ``healthy``;
    ``hints`` (MR-TX-489/490): the ACK and the unit's event with ``hint``, the windows' hinted
    layouts."""
    sl = sched_model.layouts(conns, streams, paths, depth)
    rl = rtx_model.layouts(conns, paths, pool, health=share_out, hints=hints)
    cfg = data.StructLayout({"conn": sl.conn_bits, **dict(TMPL_FIELDS), "sport": 16 * paths})
    return TxLayouts(conns, paths, sl, rl, cfg, cmd_layout(conns, lane=True),   # MR-TX-479
                     cwnd_model.layouts(conns, paths, verdicts=verdicts, hints=hints))


def path_record(lay, restore=None, probe=None):
    """MR-TX-257: the windows' ``s_path`` record of the scheduler's restore ``{conn, path}``
    (``restore`` 1; with ``kept``, MR-TX-322, verdict REROUTE) or of the retransmit unit's
    verdict ``{conn, path, psn, to, verdict}`` (``healthy`` the item's health bits with the share-out, MR-TX-301, else 0: the block
    without the share-out ignores it, MR-CW-112)."""
    if restore is not None:
        # MR-TX-322/351: a kept verdict (the rows' MR-TXS-316, the registers' MR-TXS-347) a
        # restore with REROUTE
        return {"conn": restore["conn"], "path": restore["path"],
                "verdict": P.PATH_REROUTE if restore.get("kept") else 0, "restore": 1,
                "healthy": 0}
    return {"conn": probe["conn"], "path": probe["path"] & ((1 << lay.cw.path_bits) - 1),
            "verdict": probe["verdict"], "restore": 0, "healthy": probe.get("healthy", 0)}


def template_of(conn, *, eth_dst, eth_src, ip_src, ip_dst, sports, ip_dscp=26, ip_ecn=2,
                ip_ttl=64, pkey=0xFFFF, dest_qp=0):
    """A ``s_cfg`` write (MR-TX-121) as a dict; MAC addresses as ints or "aa:bb:.." strings,
    IPv4 addresses as ints or dotted strings, ``sports`` one UDP source port per path."""
    import ipaddress

    def mac(v):
        return v if isinstance(v, int) else int(v.replace(":", ""), 16)

    def ip(v):
        return v if isinstance(v, int) else int(ipaddress.IPv4Address(v))
    return {"conn": conn, "eth_dst": mac(eth_dst), "eth_src": mac(eth_src), "ip_src": ip(ip_src),
            "ip_dst": ip(ip_dst), "ip_dscp": ip_dscp, "ip_ecn": ip_ecn, "ip_ttl": ip_ttl,
            "pkey": pkey, "dest_qp": dest_qp,
            "sport": sum(p << 16 * i for i, p in enumerate(sports))}


def cmd_of(fr):
    """MR-TX-122: the payload read of a frame request: ``laddr + mrdh_offset`` modulo 2^64
    (MR-TXS-040: the scheduler leaves the add to the DMA side) for ``payload_len`` bytes;
    MR-TX-191: none (length 0) for an atomic, whose payload is its operands; MR-TX-479: the
    builder's lane of its payload (:func:`header_lane`)."""
    return {"conn": fr["conn"], "addr": (fr["laddr"] + fr["mrdh_offset"]) & ((1 << 64) - 1),
            "length": 0 if is_atomic_frame(fr) else fr["payload_len"],
            "lane": header_lane(fr["bth_opcode"])}                      # MR-TX-479


def desc_of(fr, t, paths):
    """MR-TX-121: the frame builder's descriptor of a frame request ``fr`` and its connection's
    template ``t`` (a ``cfg`` dict): IPv4 without VLAN, UDP destination port 4791, MRDH version
    1; every other descriptor field 0."""
    path = fr["mrdh_path"] & (paths - 1)
    d = {"eth_dst": t["eth_dst"], "eth_src": t["eth_src"], "ip_dscp": t["ip_dscp"],
         "ip_ecn": t["ip_ecn"], "ip_ttl": t["ip_ttl"], "ip_src": t["ip_src"], "ip_dst": t["ip_dst"],
         # MR-TXS-121: the path's entropy after its generation's new routes
         "udp_sport": P.entropy_next((t["sport"] >> 16 * path) & 0xFFFF, fr.get("gen", 0)),
         "udp_dport": wire.ROCE_PORT,
         "bth_pkey": t["pkey"], "bth_dest_qp": t["dest_qp"], "mrdh_version": MRDH_VERSION}
    for k, v in fr.items():
        if k not in _NOT_DESC:
            d[k] = v
    return d


#: MR-TX-508: the frame request's fields that are not descriptor fields (desc_of)
_NOT_DESC = ("conn", "laddr", "slot", "lap", "swap", "compare", "gen")
#: MR-TX-508: the descriptor fields desc_of takes from the template or sets to a constant
_TEMPLATE_DESC_FIELDS = ("eth_dst", "eth_src", "ip_dscp", "ip_ecn", "ip_ttl", "ip_src", "ip_dst",
                         "udp_sport", "udp_dport", "bth_pkey", "bth_dest_qp", "mrdh_version")


def builder_fields(lay, ack_desc=False):
    """MR-TX-508: the descriptor fields the TX gives its frame builder (the builder's
    ``desc_fields``, MR-TXF-072; it takes every other field as 0): those desc_of sets (the
    template's and constants', the frame request's), and with ``ack_desc`` the ACK
    descriptor's (SHARED_DESC_FIELDS, ACK_ONLY_DESC_FIELDS); in the descriptor's order."""
    names = set(_TEMPLATE_DESC_FIELDS) | {n for n, _ in lay.sched.frame if n not in _NOT_DESC}
    if ack_desc:
        names |= set(SHARED_DESC_FIELDS) | set(ACK_ONLY_DESC_FIELDS)
    return tuple(n for n, _ in DESC_LAYOUT if n in names)


class TxJoinModel:
    """MR-TX-120..124: the template memory (written by ``s_cfg``, always ready, the write seen
    from the next cycle on), an input register S1 (the request, with the address adds), two
    output registers (S2), the read command and the descriptor, and the queue of the commands'
    messages (``ids``, popped by the done records). S1's request moves on when both output
    registers are empty or being taken (their consumers' readies are registers in the DMA and
    the frame builder) and the queue has room and its row was not written in the last cycle
    (MR-TX-530): both registers load (the template read then) and the queue is pushed in that
    cycle. S1 loads a request when it is empty or moving on: the
    skid's (MR-TX-229), else the port's; the port's goes to the skid when S1 does not load it,
    and ``s_frame.ready`` is the skid's emptiness. MR-TX-192: a frame with payload also pushes
    its payload-source entry (``src``, popped by the data path as its last payload beat goes to
    the frame builder); S1 moves on only while that queue has room too."""

    def __init__(self, lay: TxLayouts, outstanding=SMALL["outstanding"]):
        self.lay = lay
        self.tmpl = [unpack(lay.cfg, 0) for _ in range(lay.conns)]
        self.cmd = (0, 0)               # valid, payload
        self.desc = (0, 0)
        self.ids = SyncFifoModel(id_depth(outstanding))
        self.src = SyncFifoModel(id_depth(outstanding))         # MR-TX-192
        self.s1 = None                  # the request in S1
        self.sk = None                  # MR-TX-229: the request in the skid before S1
        self.wrote = None               # MR-TX-530: the row written last cycle

    def busy(self):
        return bool(self.s1 is not None or self.sk is not None or self.cmd[0] or self.desc[0]
                    or self.ids.level or self.src.level)

    def _move(self, cmd_ready, desc_ready):
        # MR-TX-530/531: S2 does not take a request whose row was written in the last cycle
        return (self.s1 is not None and self.wrote != self.s1["conn"]
                and (not self.cmd[0] or bool(cmd_ready))
                and (not self.desc[0] or bool(desc_ready)) and self.ids.level < self.ids.depth
                and self.src.level < self.src.depth)

    def frame_ready(self):
        """MR-TX-229: ``s_frame.ready``, the skid's emptiness (a register)."""
        return int(self.sk is None)

    def id_head(self):
        """The oldest command's message ``{conn, slot}`` (MR-TX-124)."""
        return unpack(self.lay.sched.fail, self.ids.head)

    def step(self, frame_valid, frame_payload, cfg_valid, cfg_payload, cmd_ready, desc_ready,
             id_pop=0, src_pop=0):
        lay = self.lay
        take = self._move(cmd_ready, desc_ready)
        fr = self.s1 if take else None
        # MR-TX-229: S1 loads (when empty or moving on) from the skid, else from the port; the
        # port's request goes to the skid when S1 does not load and the skid is empty
        port = unpack(lay.sched.frame, frame_payload) if frame_valid and self.sk is None else None
        if self.s1 is None or take:
            self.s1 = self.sk if self.sk is not None else port
            self.sk = None
        elif self.sk is None:
            self.sk = port
        if take:
            t = self.tmpl[fr["conn"]]
            self.cmd = (1, pack(lay.cmd, cmd_of(fr)))
            self.desc = (1, pack(DESC_LAYOUT, desc_of(fr, t, lay.paths)))
        else:
            if cmd_ready:
                self.cmd = (0, self.cmd[1])
            if desc_ready:
                self.desc = (0, self.desc[1])
        self.wrote = None
        if cfg_valid:
            c = unpack(lay.cfg, cfg_payload)
            self.tmpl[c["conn"]] = c
            self.wrote = c["conn"]
        self.ids.update(id_pop, take, pack(lay.sched.fail, {
            "conn": fr["conn"], "slot": slot_of(fr, lay.sched.streams, lay.sched.depth),
            "lap": fr.get("lap", 0)}) if take else 0)                 # MR-TX-451
        has_payload = take and fr["payload_len"] != 0
        self.src.update(src_pop, has_payload, pack(SRC_LAYOUT, src_of(fr)) if has_payload else 0)
        return take


class TxDataCycleModel:
    """MR-TX-102: the join stage, the payload DMA and the frame builder, cycle by cycle on the
    ports of ``hdl.tx.TxData`` (DATA_INPUTS, DATA_OUTPUTS). MR-TX-124: each done record pops
    the join stage's message queue; its error bit waits in ``errq`` for its frame's last beat
    (``tuser``), and a failed read is reported on ``m_fail``; a frame that ends before its done
    record (one of no payload) leaves a ``debt``: its record is dropped when it comes.
    ``dma_errors`` counts the failed reads."""

    def __init__(self, width=64, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], *, pool=SMALL["pool"],
                 outstanding=SMALL["outstanding"], ack_desc=False, ack_first=True):
        self.width = width
        self.lay = layouts(conns, streams, paths, depth, pool)
        self.join = TxJoinModel(self.lay, outstanding)
        # MR-TX-483: the payload rotated once, in the DMA, to the builder's lane
        self.dma = DmaReadCycleModel(width, conns, outstanding=outstanding, rotate=True)
        # MR-TX-467; MR-TX-508: the fields the TX gives it
        self.fb = FrameBuilderModel(width, ipv4_only=True, prerotated=True,
                                    desc_fields=builder_fields(self.lay, ack_desc))
        self.errq = SyncFifoModel(ERR_DEPTH)
        self.debt = 0
        self.dma_errors = 0
        self.k = 0                      # MR-TX-192: the beat of the inline payload at the head
        # MR-TX-280..282: the ACK descriptors into the one frame builder, ahead of the join's
        # (``ack_first`` False: the join's first, MR-TX-285's negative control only), and the
        # kind of each descriptor the builder took, in order
        self.ack_desc = bool(ack_desc)
        self.ack_first = bool(ack_first)
        self.kind = SyncFifoModel(KIND_DEPTH)

    def port_names(self=None):
        ins, outs = list(DATA_INPUTS), list(DATA_OUTPUTS)
        if self is not None and self.ack_desc:
            ins, outs = ins + ACK_DESC_INPUTS, outs + ACK_DESC_OUTPUTS
        return {"inputs": ins, "outputs": outs}

    def busy(self):
        return (self.join.busy() or self.dma.busy() or self.fb.busy() or bool(self.errq.level)
                or bool(self.kind.level))

    def ack_head(self):
        """MR-TX-282: the frame leaving on ``m_axis`` is an ACK descriptor's (the kind queue's
        head; state)."""
        return bool(self.ack_desc and self.kind.level and self.kind.head)

    def ack_desc_ready(self):
        """MR-TX-281: ``s_ack_desc.ready``: the builder's ``s_desc.ready`` (a register) and room
        in the kind queue (state)."""
        return int(bool(self.fb.outputs()["s_desc__ready"] and self.kind.level < KIND_DEPTH))

    def fail_outputs(self):
        """MR-TX-124: ``(m_fail valid, payload)``, from the state: a done record with its error
        bit set, taken when the error queue has room (or a debt drops it)."""
        do = self.dma.outputs()
        err = unpack(self.dma.done, do["m_done__payload"])["error"]
        take_ok = self.debt != 0 or self.errq.level < ERR_DEPTH
        if not (do["m_done__valid"] and err and take_ok):
            return 0, 0
        idh = self.join.id_head()
        return 1, pack(self.lay.sched.fail, {"conn": idh["conn"], "slot": idh["slot"],
                                              "lap": idh["lap"],      # MR-TX-451
                                              "status": sched_model.STATUS_LOC_PROT_ERR})

    def payload(self, do, fo):
        """MR-TX-192: the frame builder's ``s_payload`` (valid, payload) and the DMA's
        ``m_data`` ready, by the payload-source queue's head: its inline beat ``k``, or the
        DMA's beat, or nothing while the queue is empty."""
        src = self.join.src
        if not src.level:
            return 0, 0, 0
        head = unpack(SRC_LAYOUT, src.head)
        if head["inline"]:
            return 1, inline_beats(head, self.width)[self.k], 0
        return do["m_data__valid"], do["m_data__payload"], fo["s_payload__ready"]

    def step(self, inputs):
        g = inputs.get
        do, fo = self.dma.outputs(), self.fb.outputs()
        jc, jd = self.join.cmd, self.join.desc
        pay_valid, pay, data_ready = self.payload(do, fo)
        moved = bool(pay_valid and fo["s_payload__ready"])
        last = moved and bool(unpack(payload_layout(self.width), pay)["last"])
        frame_ready = self.join.frame_ready()
        # MR-TX-124: the done record's error bit, its message and the frame's end
        err = unpack(self.dma.done, do["m_done__payload"])["error"]
        take_ok = self.debt != 0 or self.errq.level < ERR_DEPTH
        fail_valid, fail = self.fail_outputs()
        done_ready = int(take_ok and (not err or bool(g("m_fail__ready", 0))))
        done_take = bool(do["m_done__valid"] and done_ready)
        has_err = self.errq.level > 0
        tuser = int(bool(fo["m_axis__tuser"] or (fo["m_axis__tlast"] and has_err
                                                 and self.errq.head)))
        end = bool(fo["m_axis__tvalid"] and g("m_axis__tready", 0) and fo["m_axis__tlast"])
        # MR-TX-282: the frame leaving is an ACK descriptor's (the kind queue's head): its
        # end leaves the error queue and the debt alone, its tuser is the builder's
        ack_out = self.ack_head()
        if ack_out:
            tuser = fo["m_axis__tuser"]
        kind_end = end
        end = end and not ack_out
        own = end and not has_err and done_take and self.debt == 0
        # MR-TX-281: the builder's descriptor: the ACK one first, else the join's; both wait
        # while the kind queue is full
        desc_ready, fb_desc = fo["s_desc__ready"], jd
        if self.ack_desc:
            room = self.kind.level < KIND_DEPTH
            ack_sel = bool(g("s_ack_desc__valid", 0)) and (self.ack_first or not jd[0])
            ack_ready = int(bool(desc_ready and room and (self.ack_first or not jd[0])))
            desc_ready = int(bool(desc_ready and room and not ack_sel))
            fb_desc = (int(bool((ack_sel or jd[0]) and room)),
                       one_builder_desc(ack_sel, g("s_ack_desc__payload", 0), jd[1]))
            kind_push = bool(fb_desc[0] and fo["s_desc__ready"])
        if done_take and err:
            self.dma_errors += 1
        self.join.step(g("s_frame__valid", 0), g("s_frame__payload", 0), g("s_cfg__valid", 0),
                       g("s_cfg__payload", 0), do["s_cmd__ready"], desc_ready, done_take,
                       last)
        self.k = 0 if last else self.k + int(moved)
        self.dma.step({"s_cmd__payload": jc[1], "s_cmd__valid": jc[0],
                       "m_data__ready": data_ready, "m_done__ready": done_ready,
                       **{"m_axi__" + n: g("m_axi__" + n, 0) for n in AXI_IN}})
        self.fb.step({"s_desc__payload": fb_desc[1], "s_desc__valid": fb_desc[0],
                      "s_payload__payload": pay, "s_payload__valid": pay_valid,
                      "m_axis__tready": g("m_axis__tready", 0)})
        debt = self.debt
        self.debt += int(end and not has_err and not own) - int(done_take and debt != 0)
        self.errq.update(end, done_take and debt == 0 and not own, err)
        out = {"s_frame__ready": frame_ready, "s_cfg__ready": 1,
               "m_fail__payload": fail, "m_fail__valid": fail_valid}
        if self.ack_desc:
            self.kind.update(kind_end, kind_push, int(ack_sel))
            out["s_ack_desc__ready"] = ack_ready
        out.update({"m_axis__" + n: fo["m_axis__" + n] for n in AXIS_OUT})
        out["m_axis__tuser"] = tuser
        out.update({"m_axi__" + n: do["m_axi__" + n] for n in AXI_OUT})
        return out


def check_hint_options(hints, hint_dropped, *, verdicts, pacing, rows, interval):
    """MR-TX-489: ``hints`` not with ``verdicts``, ``pacing``, ``rows`` nor an interval above
    1 (not built); ``hint_dropped`` (a negative control) needs ``hints``."""
    hints = bool(hints)
    if hint_dropped and not hints:
        raise ValueError("hint_dropped needs hints")
    if hints and (verdicts or pacing or rows or interval > 1):
        raise ValueError("hints with verdicts, pacing, rows or interval > 1 is not built")
    return hints, bool(hint_dropped)


def check_control_options(hints, control, control_wrong):
    """MR-TX-510: ``control`` (the control path inside) needs ``hints``; ``control_wrong`` (a
    negative control, MR-TX-514) needs ``control``."""
    if control and not hints:
        raise ValueError("control needs hints")
    if control_wrong is not None and not control:
        raise ValueError("control_wrong needs control")
    return bool(control)


def check_tx_options(rows, pacing, rd_rows, interval, mem_head):
    """The TX's scheduler options that are not built together, checked for the RTL and the
    model alike: ``(rows, interval, mem_head)`` normalised, else ``ValueError``. MR-TX-317:
    not the rows with pacing and the READ rows; MR-TXS-417: the frame interval is the unpaced
    register scheduler's (MR-TXS-413); MR-TXS-444: MR-TXS-419's output queues too, above
    interval 1."""
    rows, interval, mem_head = bool(rows), int(interval), bool(mem_head)
    if rows and pacing and rd_rows:
        raise ValueError("rows with pacing and rd_rows is not built")
    if interval > 1 and (rows or pacing):
        raise ValueError("MR-TXS-417: an interval above 1 with rows or pacing is not built")
    if mem_head and (rows or pacing or interval == 1):
        raise ValueError("MR-TXS-444: mem_head needs the register scheduler above interval 1")
    return rows, interval, mem_head


class TxCycleModel:
    """MR-TX-101: the TX half of the engine cycle by cycle on every port of ``hdl.tx.Tx``
    (INPUTS, OUTPUTS): ``step(inputs) -> outputs`` once per clock."""

    def __init__(self, width=64, conns=SMALL["conns"], streams=SMALL["streams"],
                 paths=SMALL["paths"], depth=SMALL["depth"], *, pool=SMALL["pool"],
                 outstanding=SMALL["outstanding"], rto_ns=rtx_model.RTO_NS,
                 retry_limit=rtx_model.RETRY_LIMIT, slot_log2=rtx_model.SLOT_LOG2, rd_rows=False,
                 pacing=False, pace_ignored=False, verdicts=False, restores=True,
                 pace_full_only=False, ack_desc=False, ack_first=True, share_out=None,
                 restore_after_ack=None, rows=False, interval=1, mem_head=False,
                 hints=False, hint_dropped=False, control=False, **sched_kw):
        if width not in (64, 128, 256, 512):
            raise ValueError(f"width must be 64, 128, 256 or 512, not {width!r}")
        self.width = width
        # MR-TX-489: the receiver's rate hints in the windows (Cwnd(hints=True)), the control
        # path outside; hint_dropped (negative control only, MR-TX-496/497): the unit's event
        # offered with hint 0
        self.hints, self.hint_dropped = check_hint_options(
            hints, hint_dropped, verdicts=verdicts, pacing=pacing, rows=rows, interval=interval)
        self.cw_hold = 0                # MR-TX-493
        # MR-TX-510/512: the control path inside, its cycle model (made below)
        self.control = check_control_options(self.hints, control, None)
        self.ctl = None
        self.unit_events = []           # MR-TX-496: the unit's events taken, as the unit gave them
        self.cw_updates = []            # MR-TX-513: the windows' updates taken (packed), in order
        # MR-TX-256: the path verdicts and the scheduler's restores into the windows;
        # ``restores`` False (with verdicts: the negative control of MR-TX-261 only) leaves the
        # restores out of the join (the scheduler's port taken and dropped)
        self.verdicts = bool(verdicts)
        if not restores and not self.verdicts:
            raise ValueError("restores=False needs verdicts")
        self.join_restores = bool(restores)
        # MR-TX-300: the share-out in the windows (the unit's health bits on its verdicts);
        # by default on with verdicts
        self.share_out = self.verdicts if share_out is None else bool(share_out)
        if self.share_out and not self.verdicts:
            raise ValueError("share_out needs verdicts")
        # MR-TX-306: a restore held while the unit has an ACK event not out
        self.restore_after_ack = (self.share_out if restore_after_ack is None
                                  else bool(restore_after_ack))
        if self.restore_after_ack and not self.share_out:
            raise ValueError("restore_after_ack needs share_out")
        self.rd_rows = bool(rd_rows)        # MR-TXS-106: the scheduler's m_rd out
        kw = {k: sched_kw.get(k, SMALL[k]) for k in ("chunk_window", "mtu", "cwnd", "conn_window",
                                                    "path_pkts", "ack_every", "resend_depth")}
        # MR-TX-232: paced, the scheduler is PacedTxSchedCycleModel's (the pacer beside it);
        # ``sched`` stays the scheduler itself (its registers are read below), ``paced`` steps
        self.pacing = bool(pacing)
        if pace_ignored and not self.pacing:
            raise ValueError("pace_ignored needs pacing")
        self.paced = None
        # MR-TX-316: rows, the row scheduler (TxSchedRowsModel) in the register scheduler's
        # place; MR-TX-317: not with pacing and the READ rows together; MR-TX-333: with the READ
        # rows, the rows' m_rd (MR-TXS-325) joined as the register scheduler's; MR-TXS-346: with
        # pacing, the rows joined to the pacer (PacedTxSchedCycleModel(rows=True))
        self.rows, self.interval, self.mem_head = check_tx_options(
            rows, self.pacing, self.rd_rows, interval, mem_head)
        if self.rows and self.pacing:
            extra = {"pace_ignored": True} if pace_ignored else {}
            if self.verdicts:
                raise ValueError("verdicts with pacing is not built")
            self.paced = PacedTxSchedCycleModel(width, conns, streams, paths, depth, rows=True,
                                                **kw, **extra)
            self.sched = self.paced.sched
        elif self.rows:
            self.sched = TxSchedRowsModel(width, conns, streams, paths, depth,
                                          restores=self.verdicts, rd_rows=self.rd_rows, **kw)
        elif self.pacing:
            extra = {"pace_ignored": True} if pace_ignored else {}
            if self.verdicts:
                raise ValueError("verdicts with pacing is not built")
            if pace_full_only:          # MR-TX-253's negative control: today's charge
                extra["pace_full_only"] = True
            self.paced = PacedTxSchedCycleModel(width, conns, streams, paths, depth,
                                                rd_rows=rd_rows, **kw, **extra)
            self.sched = self.paced.sched
        else:
            self.sched = TxSchedCycleModel(width, conns, streams, paths, depth, rd_rows=rd_rows,
                                           restores=self.verdicts, interval=self.interval,
                                           mem_head=self.mem_head, **kw)
        # MR-TX-179: the unit's tail probes on, its m_probe joined to the scheduler's s_probe
        self.rtx = RetransmitCycleModel(width, conns, paths, pool, rto_ns=rto_ns,
                                        retry_limit=retry_limit, slot_log2=slot_log2, probes=True,
                                        verdict_health=self.share_out, interval=interval,  # MR-TX-455
                                        hints=self.hints)                   # MR-TX-491
        # MR-TX-280: ``ack_desc`` adds s_ack_desc, the ACK descriptors into the one builder
        self.ack_desc = bool(ack_desc)
        self.data = TxDataCycleModel(width, conns, streams, paths, depth, pool=pool,
                                     outstanding=outstanding, ack_desc=ack_desc,
                                     ack_first=ack_first)
        # MR-TX-105: the congestion windows, their MTU the scheduler's
        self.cwnd = cwnd_model.CwndCycleModel(width, conns, paths, verdicts=self.verdicts,
                                              share_out=self.share_out, hints=self.hints)
        self.cw_mtu = kw["mtu"]
        if self.control:
            from .cwnd_control import CwndControlCycleModel
            self.ctl = CwndControlCycleModel(width, conns, paths, mtu=self.cw_mtu)
        self.lay = layouts(conns, streams, paths, depth, pool, verdicts=self.verdicts,
                           share_out=self.share_out, hints=self.hints)   # TxData's when all off
        # MR-TX-257: with verdicts, the records the windows took in order: ("path", s_path
        # record) and ("ack", ACK event)
        self.cw_log = []
        # MR-TX-126: registered increments, counted a cycle later; the read registered
        self.counters = [0] * len(TX_CTR)
        self.counts_late = []
        self.reg_own = 0
        self.reg_addr_late = 0

    def port_names(self=None):
        """MR-TX-103, MR-TX-233: INPUTS and OUTPUTS, and the pacer's ports when paced, ``m_rd``
        with ``rd_rows`` (MR-TX-334; also callable on the class: the default engine's)."""
        ins, outs = list(INPUTS), list(OUTPUTS)
        if self is not None and self.pacing:
            ins, outs = ins + PACE_INPUTS, outs + PACE_OUTPUTS
        if self is not None and self.ack_desc:
            ins, outs = ins + ACK_DESC_INPUTS, outs + ACK_DESC_OUTPUTS
        if self is not None and self.rd_rows:
            ins, outs = ins + RD_INPUTS, outs + RD_OUTPUTS
        if self is not None and self.control:
            ins = ins + CONTROL_INPUTS
        elif self is not None and self.hints:
            ins, outs = ins + HINT_INPUTS, outs + HINT_OUTPUTS
        return {"inputs": ins, "outputs": outs}

    def busy(self):
        return ((self.paced or self.sched).busy() or self.rtx.busy() or self.data.busy()
                or self.cwnd.busy() or (self.ctl is not None and self.ctl.busy()))

    def active(self):
        """Work in flight, not counting the retransmit unit's running timers (a replay ends
        while a timer waits)."""
        return bool((self.paced or self.sched).busy() or self.data.busy() or self.rtx.working()
                    or self.cwnd.busy() or (self.ctl is not None and self.ctl.busy()))

    def step(self, inputs):
        g = inputs.get
        sched, rtx = self.sched, self.rtx
        # the retransmit unit's reports and the scheduler's queue heads, before the edge
        resend_valid = int(rtx.resend_q.level > 0)
        resend_ready = sched.resend_ready()     # MR-TXS-046: on the scheduler's registers only
        probe_ready = sched.probe_ready()       # MR-TXS-086: likewise
        # MR-TX-316: the register scheduler's s_acked, s_cwnd, s_fail and s_error are always
        # ready; the rows' are their boundary registers' (registers only)
        rows = self.rows
        acked_ready = sched.acked_ready() if rows else 1
        # MR-TXS-417: and the register scheduler's above interval 1 (MR-TXS-414)
        cwnd_ready = sched.cwnd_ready() if rows or self.interval > 1 else 1
        fail_ready = sched.fail_ready() if rows else 1
        fail_valid, fail = self.data.fail_outputs()
        # MR-TX-318: with the rows a retry-limit report leaves on m_error and into the
        # scheduler's s_error together, while s_error is ready and no read failure is offered
        err_go = int(not rows or (fail_ready and not fail_valid))
        sq = sched.sent_q
        # MR-TX-106: the unit's ACK events to the congestion windows while cc_on (dropped
        # otherwise); their updates to the scheduler's path windows (ready always 1)
        cc_on = g("cc_on", 0)
        cw_in = {"s_ack__valid": int(cc_on and rtx.ackev_q.level > 0),
                 "s_ack__payload": rtx.ackev_q.head,
                 "s_setup__valid": g("s_cw_setup__valid", 0),
                 "s_setup__payload": g("s_cw_setup__payload", 0),
                 "m_update__ready": cwnd_ready, "mtu": self.cw_mtu,
                 "beta_q": g("cc_beta_q", 0), "cap": g("cc_cap", 0)}
        ctl_valid = unit_valid = 0
        if self.control:
            # MR-TX-511/512: the control path's registered outputs for the ports it replaces:
            # its writes ahead of the host's, its event again, its release
            ctl_out = self.ctl.outputs()
            host_setup = g("s_cw_setup__valid", 0)
            own = ctl_out["m_setup__valid"]
            cw_in.update({"s_setup__valid": int(bool(own or host_setup)),
                          "s_setup__payload": (ctl_out["m_setup__payload"] if own
                                               else g("s_cw_setup__payload", 0))})
            g = {**inputs, "s_cw_ack__valid": ctl_out["m_ack__valid"],
                 "s_cw_ack__payload": ctl_out["m_ack__payload"],
                 "cw_release": ctl_out["release"]}.get
        if self.hints:
            # MR-TX-493/495: the control path's event again first, else the unit's while not
            # held (cc_on gates the unit's only)
            ctl_valid = g("s_cw_ack__valid", 0)
            unit_valid = cw_in["s_ack__valid"] and not self.cw_hold
            head = rtx.ackev_q.head
            if self.hint_dropped:
                head = pack(self.lay.cw.ack, {**unpack(self.lay.cw.ack, head), "hint": 0})
            cw_in.update({"s_ack__valid": int(bool(ctl_valid or unit_valid)),
                          "s_ack__payload": g("s_cw_ack__payload", 0) if ctl_valid else head,
                          "line_mbps": g("cc_line_mbps", 0),
                          "base_rtt_ns": g("cc_base_rtt_ns", 0)})
        to = hold = False
        if self.verdicts:
            # MR-TX-257/258: the scheduler's restore (registers) first, else the unit's verdict
            # at the head of its probe queue once the scheduler's s_probe is ready (it is not
            # while a restore is offered, MR-TXS-186); while cc_on, one record at a time
            r_valid, r_pay = sched.restore_outputs()
            # MR-TX-306: held while the unit walks, or its last walk's event or a queued one
            # is not out (registers)
            hold = bool(self.restore_after_ack and cc_on and rtx.ackev_busy())
            r_valid = r_valid and self.join_restores and not hold
            head = unpack(self.lay.rtx.probe, rtx.probe_q.head)
            to = bool(rtx.probe_q.level > 0 and head["to"])
            if r_valid:
                rec = path_record(self.lay, restore=unpack(sched.restore_lay, r_pay))
            else:
                rec = path_record(self.lay, probe=head)
            cw_in["s_path__valid"] = int(bool(cc_on and (r_valid or (to and probe_ready))))
            cw_in["s_path__payload"] = pack(self.lay.cw.verdict, rec)
        co = self.cwnd.step(cw_in)
        # MR-TX-258: a verdict waits for the windows' s_path too (cc_on); a tail probe does not
        path_ready = bool(co.get("s_path__ready", 0) or not cc_on)
        probe_pass = int(bool(probe_ready and (not to or path_ready)))
        if self.verdicts:
            if cw_in["s_path__valid"] and co["s_path__ready"]:
                self.cw_log.append(("path", rec))
            elif cw_in["s_ack__valid"] and co["s_ack__ready"]:
                self.cw_log.append(("ack", unpack(self.lay.cw.ack, cw_in["s_ack__payload"])))
        upd = unpack(self.lay.cw.update, co["m_update__payload"])
        cw_write = pack(sched.lay.cwnd, {k: upd[k] for k in ("conn", "path", "cwnd")})
        ev_ready = int(co["s_ack__ready"] or not cc_on)
        if self.hints:
            ev_ready = int(bool((co["s_ack__ready"] and not ctl_valid and not self.cw_hold)
                                or not cc_on))
            if unit_valid and not ctl_valid and co["s_ack__ready"]:
                self.unit_events.append(unpack(self.lay.cw.ack, rtx.ackev_q.head))
            upd_go = co["m_update__valid"] and cwnd_ready
            if upd_go:
                self.cw_updates.append(co["m_update__payload"])
            hint_out = {"s_cw_ack__ready": co["s_ack__ready"],
                        "m_cw_ev__valid": int(bool(cw_in["s_ack__valid"] and co["s_ack__ready"])),
                        "m_cw_ev__payload": cw_in["s_ack__payload"],
                        "m_cw_upd__valid": int(bool(upd_go)),
                        "m_cw_upd__payload": co["m_update__payload"]}
            # MR-TX-493: set by an update with move or refill (the set wins), else cleared
            # after cw_release
            if upd_go and (upd["move"] or upd["refill"]):
                self.cw_hold = 1
            elif g("cw_release", 0):
                self.cw_hold = 0
            if self.control:
                # MR-TX-511: the windows' takes and the updates the scheduler takes, seen
                hin = {"s_ev__valid": hint_out["m_cw_ev__valid"],
                       "s_ev__payload": hint_out["m_cw_ev__payload"],
                       "s_setup__valid": int(bool(cw_in["s_setup__valid"]
                                                  and co["s_setup__ready"])),
                       "s_setup__payload": cw_in["s_setup__payload"],
                       "s_upd__valid": hint_out["m_cw_upd__valid"],
                       "s_upd__payload": hint_out["m_cw_upd__payload"],
                       "m_setup__ready": co["s_setup__ready"],
                       "m_ack__ready": co["s_ack__ready"], "mtu": self.cw_mtu,
                       "line_mbps": g("cc_line_mbps", 0), "base_rtt_ns": g("cc_base_rtt_ns", 0)}
                assert self.ctl.step(hin) == ctl_out
                hint_out = {}
        ro = rtx.step({"s_sent__payload": sq.head, "s_sent__valid": int(sq.level > 0),
                       "s_ack__payload": g("s_ack__payload", 0), "s_ack__valid": g("s_ack__valid", 0),
                       "m_acked__ready": acked_ready, "m_resend__ready": resend_ready,
                       "m_error__ready": int(g("m_error__ready", 0) and err_go),
                       "now": g("now", 0),
                       "m_ackev__ready": ev_ready,
                       "m_probe__ready": probe_pass if self.verdicts else probe_ready,
                       "reg_addr": g("reg_addr", 0)})
        data = self.data
        frame_ready = data.join.frame_ready()          # MR-TX-229: a register
        ack_out = data.ack_head()                      # MR-TX-283: state
        # MR-TX-234: paced, the join steps the scheduler and the pacer (the pacer's inputs too)
        pace_in = ({n: g(n, 0) for n in ("s_pace_write__valid", "s_pace_write__payload",
                                         "mtu_wl", "line_mbps")} if self.pacing else {})
        so = (self.paced or sched).step({**pace_in, "s_wr__payload": g("s_wr__payload", 0),
                                         "s_wr__valid": g("s_wr__valid", 0),
                         "s_acked__payload": ro["m_acked__payload"], "s_acked__valid": ro["m_acked__valid"],
                         "s_resend__payload": ro["m_resend__payload"],
                         "s_resend__valid": ro["m_resend__valid"],
                         "m_frame__ready": frame_ready, "m_sent__ready": ro["s_sent__ready"],
                         "m_cqe__ready": g("m_cqe__ready", 0), "now": g("now", 0),
                         # MR-TX-124, MR-TX-125: the failures, always taken
                         "s_fail__valid": fail_valid, "s_fail__payload": fail,
                         "s_error__valid": int(ro["m_error__valid"] and g("m_error__ready", 0)
                                               and err_go),
                         "s_error__payload": ro["m_error__payload"],
                         "s_cwnd__valid": co["m_update__valid"], "s_cwnd__payload": cw_write,
                         "s_probe__valid": int(bool(ro["m_probe__valid"] and (not to or path_ready))),
                         "s_probe__payload": ro["m_probe__payload"],
                         # MR-TX-257: the restore taken with the windows' s_path (dropped
                         # while cc_on is low, or, negative control, without restores)
                         "m_restore__ready": int((path_ready and not hold)
                                                 or not self.join_restores),
                         **{n: g(n, 0) for n in ("s_rsp__payload", "s_rsp__valid",
                                                 "m_rsp_done__ready", "m_rd__ready",
                                                 "s_psn__payload", "s_psn__valid")}})
        assert so["s_resend__ready"] == resend_ready and so["s_acked__ready"] == acked_ready
        assert so["s_probe__ready"] == probe_ready and so["s_cwnd__ready"] == cwnd_ready
        assert so["s_fail__ready"] == fail_ready == so["s_error__ready"]
        assert resend_valid == ro["m_resend__valid"]
        do = data.step({"s_frame__payload": so["m_frame__payload"], "s_frame__valid": so["m_frame__valid"],
                        "m_fail__ready": fail_ready,
                        **{n: g(n, 0) for n in data.port_names()["inputs"]
                           if n.startswith(("s_cfg", "m_axi", "m_axis", "s_ack_desc"))}})
        out = {"s_wr__ready": so["s_wr__ready"], "s_ack__ready": ro["s_ack__ready"],
               "s_cfg__ready": do["s_cfg__ready"],
               "s_cw_setup__ready": int(bool(co["s_setup__ready"]
                                             and not (self.control and ctl_out["m_setup__valid"]))),
               "m_cqe__payload": so["m_cqe__payload"], "m_cqe__valid": so["m_cqe__valid"],
               "m_error__payload": ro["m_error__payload"],
               "m_error__valid": int(ro["m_error__valid"] and err_go),
               "reg_data": self.reg_own if self.reg_addr_late >= TX_CTR_BASE else ro["reg_data"],
               **{n: so[n] for n in ("s_rsp__ready", "m_rsp_done__payload", "m_rsp_done__valid")}}
        # MR-TX-469/470, MR-TX-500: the scheduler's initial-PSN port (the rows' too)
        out.update({n: so[n] for n in ("s_psn__ready", "psn_ignored")})
        if self.rd_rows:
            out.update({n: so[n] for n in ("m_rd__payload", "m_rd__valid")})
        if self.pacing:
            out["s_pace_write__ready"] = so["s_pace_write__ready"]
        if self.ack_desc:
            out["s_ack_desc__ready"] = do["s_ack_desc__ready"]
        if self.hints:
            out.update(hint_out)
        # MR-TX-126: the events of this cycle, counted after the next edge
        now = []
        # MR-TX-283: the data frames only (an ACK frame is the receive half's)
        if do["m_axis__tvalid"] and g("m_axis__tready", 0) and do["m_axis__tlast"] and not ack_out:
            now.append(TX_CTR["frames"])
            if do["m_axis__tuser"]:
                now.append(TX_CTR["frames_bad"])
        if (so["m_frame__valid"] and frame_ready
                and unpack(sched.lay.frame, so["m_frame__payload"])["mrdh_flags"] & wire.MrdhFlag.RETX):
            now.append(TX_CTR["resends"])
        if so["m_cqe__valid"] and g("m_cqe__ready", 0):
            now.append(TX_CTR["completions"])
            if unpack(sched.lay.cqe, so["m_cqe__payload"])["status"]:
                now.append(TX_CTR["completions_err"])
        addr = g("reg_addr", 0)
        k = addr - TX_CTR_BASE
        self.reg_own = self.counters[k] if 0 <= k < len(TX_CTR) else 0
        self.reg_addr_late = addr
        for i in self.counts_late:
            self.counters[i] = (self.counters[i] + 1) % (1 << rtx_model.COUNTER_BITS)
        self.counts_late = now
        out.update({"m_axis__" + n: do["m_axis__" + n] for n in AXIS_OUT})
        out.update({"m_axi__" + n: do["m_axi__" + n] for n in AXI_OUT})
        return out


def tx_model_small(width=64):
    """The model of the small instance ``hdl.tx.tx_small`` (MR-TX-100)."""
    return TxCycleModel(width, **SMALL)


def tx_model_interval_small(width=64):
    """The model of ``hdl.tx.tx_interval_small``, the block ``tx_interval`` (MR-TX-455/456)."""
    from .records import frame_interval
    return TxCycleModel(width, **SMALL, interval=frame_interval(width))


def tx_model_verdicts_small(width=64):
    """The model of ``hdl.tx.tx_verdicts_small``, the block ``tx_verdicts`` (MR-TX-256)."""
    return TxCycleModel(width, **SMALL, verdicts=True)


def tx_model_hints_small(width=64):
    """The model of ``hdl.tx.tx_hints_small`` (MR-TX-489)."""
    return TxCycleModel(width, **SMALL, hints=True)


def tx_model_control_small(width=64):
    """The model of ``hdl.tx.tx_control_small`` (MR-TX-510)."""
    return TxCycleModel(width, **SMALL, hints=True, control=True)


def tx_model_rows_small(width=64):
    """The model of ``hdl.tx.tx_rows_small``, the block ``tx_rows`` (MR-TX-325)."""
    return TxCycleModel(width, **SMALL, rows=True)


def tx_model_paced_small(width=64):
    """The model of ``hdl.tx.tx_paced_small``, the block ``tx_paced`` (MR-TX-248)."""
    return TxCycleModel(width, **SMALL, pacing=True)
