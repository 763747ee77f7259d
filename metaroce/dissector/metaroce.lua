-- Wireshark dissector for the MetaRoCE native headers (docs/spec/wire.md, MR-WIRE-070..081).
--
-- Wireshark's InfiniBand dissector decodes the RoCEv2 frame up to the BTH (UDP port 4791) but
-- shows the manufacturer-specific opcodes 0xC0-0xCD as "Unknown", with their headers as vendor
-- data. This post-dissector runs after it, reads the BTH opcode it found and decodes what
-- follows the BTH: MRDH, RETH, MRSH, ImmDt, MRAH (256-bit SACK), MRNH, the security header
-- MRSEC of an authenticated frame (its protected bytes and tag are shown as payload) or the
-- handshake header MRCH (its key-exchange block is the payload).
--
--   tshark -X lua_script:metaroce.lua -r capture.pcap -Y metaroce \
--          -T fields -e infiniband.bth.psn -e metaroce.mrdh.path -e metaroce.mrah.cum_psn
--
-- Or copy it to the personal Lua plugins folder (Help > About > Folders). Field names follow
-- `metaroce decode --json`. Offsets, widths and masks are those of the header table
-- (models/headers.py, MR-WIRE-003); tests/test_headers.py checks this file against it.

local mr = Proto("metaroce", "MetaRoCE")

local MR_VERSION = 1
local BTH_LEN, ICRC_LEN = 12, 4

local opnames = {
  [0xC0] = "MR_WRITE", [0xC1] = "MR_WRITE_IMM", [0xC2] = "MR_SEND",
  [0xC3] = "MR_SEND_IMM", [0xC4] = "MR_ACK", [0xC5] = "MR_NAK",
  -- READ and atomics (MR-WIRE-076)
  [0xC6] = "MR_READ", [0xC7] = "MR_READ_RESP", [0xC8] = "MR_CMP_SWAP", [0xC9] = "MR_FETCH_ADD",
  -- authenticated frame and handshake (MR-WIRE-082, MR-WIRE-078)
  [0xCA] = "MR_SEC", [0xCB] = "MR_CONN_REQ", [0xCC] = "MR_CONN_ACC", [0xCD] = "MR_CONN_REJ",
}
-- Headers after the BTH for each opcode, in order (models/wire.HEADERS, MR-WIRE-052).
local headers = {
  [0xC0] = { "mrdh", "reth" },
  [0xC1] = { "mrdh", "reth", "imm" },
  [0xC2] = { "mrdh", "mrsh" },
  [0xC3] = { "mrdh", "mrsh", "imm" },
  [0xC4] = { "mrah" },
  [0xC5] = { "mrnh" },
  -- READ and atomics (MR-WIRE-076)
  [0xC6] = { "mrdh", "reth" },
  [0xC7] = { "mrdh" },
  [0xC8] = { "mrdh", "reth" },
  [0xC9] = { "mrdh", "reth" },
  [0xCA] = { "mrsec" },
  [0xCB] = { "mrch" },
  [0xCC] = { "mrch" },
  [0xCD] = { "mrch" },
}
local hlen = { mrdh = 16, reth = 16, mrsh = 4, imm = 4, mrah = 48, mrnh = 8, mrsec = 16, mrch = 36 }
local carries_payload = { [0xC0] = true, [0xC1] = true, [0xC2] = true, [0xC3] = true,
  [0xC7] = true, [0xC8] = true, [0xC9] = true, [0xCA] = true, [0xCB] = true, [0xCC] = true }
local nak_reasons = {
  [0x01] = "PSN outside window", [0x02] = "invalid request", [0x03] = "remote access",
  [0x04] = "bounds", [0x05] = "RNR (no receive posted)", [0x06] = "no such connection",
  [0x07] = "length inconsistent", [0x08] = "stream out of range", [0x09] = "message aborted",
}
local reject_reasons = {
  [0x01] = "bad version", [0x02] = "bad parameters", [0x03] = "no resources",
  [0x04] = "authentication mismatch", [0x05] = "bad confirm", [0x06] = "replayed request",
}

local f = {
  opcode = ProtoField.uint8("metaroce.opcode", "Opcode", base.HEX, opnames),
  mrdh = ProtoField.none("metaroce.mrdh", "MRDH (data header)"),
  mrdh_version = ProtoField.uint8("metaroce.mrdh.version", "Version", base.DEC, nil, 0xF0),
  mrdh_flags = ProtoField.uint8("metaroce.mrdh.flags", "Flags", base.HEX, nil, 0x0F),
  mrdh_last = ProtoField.bool("metaroce.mrdh.flags.last", "LAST", 8, nil, 0x01),
  mrdh_retx = ProtoField.bool("metaroce.mrdh.flags.retx", "RETX", 8, nil, 0x02),
  mrdh_first = ProtoField.bool("metaroce.mrdh.flags.first", "FIRST", 8, nil, 0x04),
  mrdh_error = ProtoField.bool("metaroce.mrdh.flags.error", "ERROR", 8, nil, 0x08),
  mrdh_path = ProtoField.uint8("metaroce.mrdh.path", "Path", base.DEC),
  mrdh_stream = ProtoField.uint16("metaroce.mrdh.stream", "Stream", base.DEC),
  mrdh_msg = ProtoField.uint32("metaroce.mrdh.msg", "Message", base.DEC),
  mrdh_offset = ProtoField.uint32("metaroce.mrdh.offset", "Offset", base.DEC),
  mrdh_msg_len = ProtoField.uint32("metaroce.mrdh.msg_len", "Message length", base.DEC),
  reth = ProtoField.none("metaroce.reth", "RETH"),
  reth_va = ProtoField.uint64("metaroce.reth.va", "Virtual address", base.HEX),
  reth_rkey = ProtoField.uint32("metaroce.reth.rkey", "R_Key", base.HEX),
  reth_dma_len = ProtoField.uint32("metaroce.reth.dma_len", "DMA length", base.DEC),
  mrsh = ProtoField.none("metaroce.mrsh", "MRSH (send header)"),
  mrsh_recv_seq = ProtoField.uint32("metaroce.mrsh.recv_seq", "Receive sequence", base.DEC),
  imm = ProtoField.uint32("metaroce.imm", "Immediate data", base.HEX),
  mrah = ProtoField.none("metaroce.mrah", "MRAH (ACK header)"),
  mrah_version = ProtoField.uint8("metaroce.mrah.version", "Version", base.DEC, nil, 0xF0),
  mrah_flags = ProtoField.uint8("metaroce.mrah.flags", "Flags", base.HEX, nil, 0x0F),
  mrah_ece = ProtoField.bool("metaroce.mrah.flags.ece", "ECE", 8, nil, 0x01),
  mrah_path = ProtoField.uint8("metaroce.mrah.path", "Path", base.DEC),
  mrah_ce_count = ProtoField.uint16("metaroce.mrah.ce_count", "CE count", base.DEC),
  mrah_cum_psn = ProtoField.uint32("metaroce.mrah.cum_psn", "Cumulative PSN", base.DEC),
  mrah_rate = ProtoField.uint32("metaroce.mrah.rate_mbps", "Rate hint (Mb/s)", base.DEC),
  mrah_trigger = ProtoField.uint32("metaroce.mrah.trigger_psn", "Trigger PSN", base.DEC),
  mrah_sack = ProtoField.bytes("metaroce.mrah.sack", "SACK bitvector"),
  mrah_sack_count = ProtoField.uint16("metaroce.mrah.sack_count", "PSNs selectively acknowledged", base.DEC),
  mrnh = ProtoField.none("metaroce.mrnh", "MRNH (NAK header)"),
  mrnh_version = ProtoField.uint8("metaroce.mrnh.version", "Version", base.DEC, nil, 0xF0),
  mrnh_flags = ProtoField.uint8("metaroce.mrnh.flags", "Flags", base.HEX, nil, 0x0F),
  mrnh_path = ProtoField.uint8("metaroce.mrnh.path", "Path", base.DEC),
  mrnh_reason = ProtoField.uint8("metaroce.mrnh.reason", "Reason", base.HEX, nak_reasons),
  mrnh_reserved = ProtoField.uint8("metaroce.mrnh.reserved", "Reserved", base.HEX),
  mrnh_psn = ProtoField.uint32("metaroce.mrnh.psn", "PSN", base.DEC),
  mrsec = ProtoField.none("metaroce.mrsec", "MRSEC (security header)"),
  mrsec_version = ProtoField.uint8("metaroce.mrsec.version", "Version", base.DEC, nil, 0xF0),
  mrsec_flags = ProtoField.uint8("metaroce.mrsec.flags", "Flags", base.HEX, nil, 0x0F),
  mrsec_next_op = ProtoField.uint8("metaroce.mrsec.next_op", "Protected opcode", base.HEX, opnames),
  mrsec_path = ProtoField.uint8("metaroce.mrsec.path", "Path", base.DEC),
  mrsec_epoch = ProtoField.uint8("metaroce.mrsec.epoch", "Key epoch", base.DEC),
  mrsec_reserved = ProtoField.uint32("metaroce.mrsec.reserved", "Reserved", base.HEX),
  mrsec_seq = ProtoField.uint64("metaroce.mrsec.seq", "Security sequence number", base.DEC),
  mrch = ProtoField.none("metaroce.mrch", "MRCH (handshake header)"),
  mrch_version = ProtoField.uint8("metaroce.mrch.version", "Version", base.DEC, nil, 0xF0),
  mrch_flags = ProtoField.uint8("metaroce.mrch.flags", "Flags", base.HEX, nil, 0x0F),
  mrch_reason = ProtoField.uint8("metaroce.mrch.reason", "Reject reason", base.HEX, reject_reasons),
  mrch_paths = ProtoField.uint8("metaroce.mrch.paths", "Paths", base.DEC),
  mrch_attempt = ProtoField.uint8("metaroce.mrch.attempt", "Attempt", base.DEC),
  mrch_src_qpn = ProtoField.uint24("metaroce.mrch.src_qpn", "Source QPN", base.DEC),
  mrch_dst_qpn = ProtoField.uint24("metaroce.mrch.dst_qpn", "Destination QPN", base.DEC),
  mrch_init_psn = ProtoField.uint24("metaroce.mrch.init_psn", "Initial PSN", base.DEC),
  mrch_mtu = ProtoField.uint16("metaroce.mrch.mtu", "MTU", base.DEC),
  mrch_nonce = ProtoField.bytes("metaroce.mrch.nonce", "Nonce"),
  payload = ProtoField.bytes("metaroce.payload", "Payload"),
  payload_len = ProtoField.uint32("metaroce.payload_len", "Payload length", base.DEC),
}
mr.fields = f

local ef_version = ProtoExpert.new("metaroce.bad_version", "MetaRoCE header version is not 1",
                                   expert.group.MALFORMED, expert.severity.ERROR)
local ef_length = ProtoExpert.new("metaroce.length", "MetaRoCE headers do not fit the frame",
                                  expert.group.MALFORMED, expert.severity.ERROR)
mr.experts = { ef_version, ef_length }

local bth_field = Field.new("infiniband.bth")
local opcode_field = Field.new("infiniband.bth.opcode")
local padcnt_field = Field.new("infiniband.bth.padcnt")
local udp_len_field = Field.new("udp.length")

local function last(...)
  local all = { ... }
  return all[#all]
end

local function popcount(tvbr)
  local n = 0
  for i = 0, tvbr:len() - 1 do
    local b = tvbr:range(i, 1):uint()
    while b > 0 do
      n = n + (b % 2)
      b = math.floor(b / 2)
    end
  end
  return n
end

local function add_mrdh(t, tvb, off)
  local st = t:add(f.mrdh, tvb(off, 16))
  st:add(f.mrdh_version, tvb(off, 1))
  local ft = st:add(f.mrdh_flags, tvb(off, 1))
  ft:add(f.mrdh_last, tvb(off, 1))
  ft:add(f.mrdh_retx, tvb(off, 1))
  ft:add(f.mrdh_first, tvb(off, 1))
  ft:add(f.mrdh_error, tvb(off, 1))
  st:add(f.mrdh_path, tvb(off + 1, 1))
  st:add(f.mrdh_stream, tvb(off + 2, 2))
  st:add(f.mrdh_msg, tvb(off + 4, 4))
  st:add(f.mrdh_offset, tvb(off + 8, 4))
  st:add(f.mrdh_msg_len, tvb(off + 12, 4))
  return string.format("path=%d stream=%d msg=%d off=%d", tvb(off + 1, 1):uint(),
                       tvb(off + 2, 2):uint(), tvb(off + 4, 4):uint(), tvb(off + 8, 4):uint())
end

local function add_reth(t, tvb, off)
  local st = t:add(f.reth, tvb(off, 16))
  st:add(f.reth_va, tvb(off, 8))
  st:add(f.reth_rkey, tvb(off + 8, 4))
  st:add(f.reth_dma_len, tvb(off + 12, 4))
end

local function add_mrsh(t, tvb, off)
  local st = t:add(f.mrsh, tvb(off, 4))
  st:add(f.mrsh_recv_seq, tvb(off, 4))
  return string.format("recv_seq=%d", tvb(off, 4):uint())
end

local function add_mrah(t, tvb, off)
  local st = t:add(f.mrah, tvb(off, 48))
  st:add(f.mrah_version, tvb(off, 1))
  local ft = st:add(f.mrah_flags, tvb(off, 1))
  ft:add(f.mrah_ece, tvb(off, 1))
  st:add(f.mrah_path, tvb(off + 1, 1))
  st:add(f.mrah_ce_count, tvb(off + 2, 2))
  st:add(f.mrah_cum_psn, tvb(off + 4, 4))
  st:add(f.mrah_rate, tvb(off + 8, 4))
  st:add(f.mrah_trigger, tvb(off + 12, 4))
  st:add(f.mrah_sack, tvb(off + 16, 32))
  st:add(f.mrah_sack_count, tvb(off + 16, 32), popcount(tvb(off + 16, 32))):set_generated()
  return string.format("path=%d cum_psn=%d rate=%dMb/s%s", tvb(off + 1, 1):uint(),
                       tvb(off + 4, 4):uint(), tvb(off + 8, 4):uint(),
                       (tvb(off, 1):uint() % 2 == 1) and " ECE" or "")
end

local function add_mrnh(t, tvb, off)
  local st = t:add(f.mrnh, tvb(off, 8))
  st:add(f.mrnh_version, tvb(off, 1))
  st:add(f.mrnh_flags, tvb(off, 1))
  st:add(f.mrnh_path, tvb(off + 1, 1))
  st:add(f.mrnh_reason, tvb(off + 2, 1))
  st:add(f.mrnh_reserved, tvb(off + 3, 1))
  st:add(f.mrnh_psn, tvb(off + 4, 4))
  local r = tvb(off + 2, 1):uint()
  return string.format("path=%d reason=%s psn=%d", tvb(off + 1, 1):uint(),
                       nak_reasons[r] or string.format("0x%02x", r), tvb(off + 4, 4):uint())
end

local function add_mrsec(t, tvb, off)
  local st = t:add(f.mrsec, tvb(off, 16))
  st:add(f.mrsec_version, tvb(off, 1))
  st:add(f.mrsec_flags, tvb(off, 1))
  st:add(f.mrsec_next_op, tvb(off + 1, 1))
  st:add(f.mrsec_path, tvb(off + 2, 1))
  st:add(f.mrsec_epoch, tvb(off + 3, 1))
  st:add(f.mrsec_reserved, tvb(off + 4, 4))
  st:add(f.mrsec_seq, tvb(off + 8, 8))
  local inner = opnames[tvb(off + 1, 1):uint()] or string.format("0x%02x", tvb(off + 1, 1):uint())
  return string.format("[%s] path=%d epoch=%d seq=%s", inner, tvb(off + 2, 1):uint(),
                       tvb(off + 3, 1):uint(), tostring(tvb(off + 8, 8):uint64()))
end

local function add_mrch(t, tvb, off)
  local st = t:add(f.mrch, tvb(off, 36))
  st:add(f.mrch_version, tvb(off, 1))
  st:add(f.mrch_flags, tvb(off, 1))
  st:add(f.mrch_reason, tvb(off + 1, 1))
  st:add(f.mrch_paths, tvb(off + 2, 1))
  st:add(f.mrch_attempt, tvb(off + 3, 1))
  st:add(f.mrch_src_qpn, tvb(off + 5, 3))
  st:add(f.mrch_dst_qpn, tvb(off + 9, 3))
  st:add(f.mrch_init_psn, tvb(off + 13, 3))
  st:add(f.mrch_mtu, tvb(off + 16, 2))
  st:add(f.mrch_nonce, tvb(off + 20, 16))
  return string.format("src_qpn=%d dst_qpn=%d paths=%d mtu=%d", tvb(off + 5, 3):uint(),
                       tvb(off + 9, 3):uint(), tvb(off + 2, 1):uint(), tvb(off + 16, 2):uint())
end

function mr.dissector(tvb, pinfo, tree)
  local op_fi = last(opcode_field())
  if op_fi == nil then return end
  local op = op_fi.value
  local names = headers[op]
  if names == nil then return end
  local bth_fi = last(bth_field())
  local udp_fi = last(udp_len_field())
  if bth_fi == nil or udp_fi == nil then return end
  -- Offsets in the frame: the BTH starts the UDP payload, which ends with the ICRC (MR-WIRE-090).
  local bth_off = bth_fi.offset
  local udp_end = bth_off + udp_fi.value - 8
  if udp_end > tvb:len() then udp_end = tvb:len() end
  local icrc_off = udp_end - ICRC_LEN
  local off = bth_off + BTH_LEN

  local t = tree:add(mr, tvb(off, math.max(0, icrc_off - off)))
  t:add(f.opcode, tvb(bth_off, 1))
  local info = { opnames[op] }
  -- MR-WIRE-075: the version nibble is checked before the length.
  if off < icrc_off and math.floor(tvb(off, 1):uint() / 16) ~= MR_VERSION then
    t:add_proto_expert_info(ef_version)
  end
  for _, name in ipairs(names) do
    if off + hlen[name] > icrc_off then
      t:add_proto_expert_info(ef_length, "MetaRoCE " .. name .. " does not fit before the ICRC")
      pinfo.cols.info:append(" [MetaRoCE malformed]")
      return
    end
    local s
    if name == "mrdh" then s = add_mrdh(t, tvb, off)
    elseif name == "reth" then add_reth(t, tvb, off)
    elseif name == "mrsh" then s = add_mrsh(t, tvb, off)
    elseif name == "imm" then t:add(f.imm, tvb(off, 4))
    elseif name == "mrah" then s = add_mrah(t, tvb, off)
    elseif name == "mrnh" then s = add_mrnh(t, tvb, off)
    elseif name == "mrsec" then s = add_mrsec(t, tvb, off)
    elseif name == "mrch" then s = add_mrch(t, tvb, off)
    end
    if s then info[#info + 1] = s end
    off = off + hlen[name]
  end
  local body = icrc_off - off
  local pad_fi = last(padcnt_field())
  local pad = pad_fi and pad_fi.value or 0
  if carries_payload[op] and body >= pad then
    if body - pad > 0 then t:add(f.payload, tvb(off, body - pad)) end
    t:add(f.payload_len, body - pad):set_generated()
    info[#info + 1] = string.format("len=%d", body - pad)
  elseif body ~= 0 then
    t:add_proto_expert_info(ef_length, "unexpected bytes after the MetaRoCE headers")
  end
  pinfo.cols.protocol:set("MetaRoCE")
  pinfo.cols.info:set(table.concat(info, " ") ..
                      string.format(" QP=%d PSN=%d", tvb(bth_off + 5, 3):uint(), tvb(bth_off + 9, 3):uint()))
end

register_postdissector(mr)
