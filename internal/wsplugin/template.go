package wsplugin

import "text/template"

// luaTemplate is the dissector. It is written for the Lua API of
// Wireshark 4.0 (Lua 5.2) and later: no bit operators, nothing newer.
var luaTemplate = template.Must(template.New("lua").Parse(`-- rpcrdma_cm.lua: RPC-over-RDMA Version 1 CM Private Data (RFC 8797) for
-- Wireshark 4.0 and later. Written by {{.Version}}
-- (rdmacm-pd wireshark-plugin) from the tables the tool decodes with: do not
-- edit it, write it again.
--
-- Install: save it in Wireshark's personal Lua plugins folder (Help > About
-- Wireshark > Folders), for example
--   rdmacm-pd wireshark-plugin > ~/.local/lib/wireshark/plugins/rpcrdma_cm.lua
-- or give it to tshark: tshark -X lua_script:rpcrdma_cm.lua -r capture.pcap
--
-- It finds the 8-octet message at any offset of the private data of every
-- InfiniBand CM message (RoCEv2, RoCEv1, native InfiniBand) and of MPA
-- Requests and Replies (iWARP, put together from the first octets of each
-- TCP direction, split or not). Filter with rpcrdma_cm, and
-- rpcrdma_cm.send_size and rpcrdma_cm.receive_size in octets.

local proto = Proto("rpcrdma_cm", "RPC-over-RDMA Version 1 CM Private Data (RFC 8797)")

local pf = {
{{- range .Fields}}
  {{.Key}} = ProtoField.{{.Type}}("rpcrdma_cm.{{.Key}}", "{{.Name}}", {{.Base}}{{if .Mask}}, nil, {{printf "0x%02x" .Mask}}{{end}}),
{{- end}}
  offset = ProtoField.uint32("rpcrdma_cm.offset", "Offset in the private data", base.DEC),
  carrier = ProtoField.string("rpcrdma_cm.carrier", "Carrier"),
}
local fieldlist = {}
for _, f in pairs(pf) do table.insert(fieldlist, f) end
proto.fields = fieldlist

local ef = {
  {{.VersionUnknown.Var}} = ProtoExpert.new("rpcrdma_cm.{{.VersionUnknown.Var}}", "{{.VersionUnknown.Code}}", expert.group.PROTOCOL, expert.severity.{{.VersionUnknown.Severity}}),
  {{.Truncated.Var}} = ProtoExpert.new("rpcrdma_cm.{{.Truncated.Var}}", "{{.Truncated.Code}}", expert.group.MALFORMED, expert.severity.{{.Truncated.Severity}}),
  {{.ReservedNonzero.Var}} = ProtoExpert.new("rpcrdma_cm.{{.ReservedNonzero.Var}}", "{{.ReservedNonzero.Code}}", expert.group.PROTOCOL, expert.severity.{{.ReservedNonzero.Severity}}),
}
proto.experts = { ef.{{.VersionUnknown.Var}}, ef.{{.Truncated.Var}}, ef.{{.ReservedNonzero.Var}} }

local ID = "{{.IDOctets}}" -- the Format Identifier 0x{{printf "%08x" .FormatIdentifier}}
local VERSION = {{.MsgVersion}}
local LEN = {{.Len}}
local SIZE_BASE, SIZE_STEP = {{.SizeBase}}, {{.SizeStep}} -- octets = SIZE_BASE + SIZE_STEP * encoded

-- CM messages by MAD attribute ID: where the private data sits in the MAD data.
local MAD_HEADER, ATTR_IN_MAD, MGMT_CLASS_CM = {{.MADHeaderLen}}, {{.AttrInMAD}}, {{.MgmtClassCM}}
local cm = {
{{- range .CM}}
  [{{printf "0x%04x" .Attr}}] = { name = "{{.Name}}", offset = {{.Offset}}, size = {{.Size}} },
{{- end}}
}

-- MPA: the keys, the header, and how much of a TCP direction is kept while
-- looking for them.
local MPA_HEADER = {{.MPAHeaderLen}}
local MPA_KEYS = { { key = "{{index .MPAKeys 0}}", name = "MPA Request" }, { key = "{{index .MPAKeys 1}}", name = "MPA Reply" } }
local MPA_BEFORE_KEY = 16384 -- octets of a direction kept before a key shows
local MPA_MAX_PD = {{.MPAMaxPD}}
local MAX_DIRECTIONS = 65536

local function field(name)
  local ok, f = pcall(Field.new, name)
  if ok then return f end
  return nil
end
local f_class = field("infiniband.mad.mgmtclass")
local f_attr = field("infiniband.mad.attributeid")
local f_payload = field("tcp.payload")
local f_seq = field("tcp.seq_raw")

-- scan looks for the message at every offset of the private data pd (a Lua
-- string), as RFC 8797 section 5.1 allows: the first occurrence with the
-- known Version and all 8 octets inside is the message. It returns its
-- offset (or nil), and the occurrences passed over before it.
local function scan(pd, cut)
  local bad, short = {}, {}
  local start = 1
  while true do
    local i = string.find(pd, ID, start, true)
    if not i then break end
    local off = i - 1
    if off + LEN <= #pd then
      local v = pd:byte(i + 4)
      if v == VERSION then return off, bad, short end
      table.insert(bad, string.format("Version %d at offset %d", v, off))
    elseif not cut then
      table.insert(short, string.format("offset %d (%d octets left)", off, #pd - off))
    end
    start = i + 1
  end
  return nil, bad, short
end

-- show adds the message found in the private data pd, which starts at
-- offset base of the Tvb t.
local function show(t, base, pd, cut, carrier, pinfo, tree)
  local off, bad, short = scan(pd, cut)
  if not off and #bad == 0 and #short == 0 then return end
  local item
  if off then
    local m = t:range(base + off, LEN)
    item = tree:add(proto, m)
    item:add(pf.carrier, carrier):set_generated()
    item:add(pf.offset, m, off):set_generated()
{{- range .Fields}}
    item:add(pf.{{.Key}}, m:range({{.Offset}}, {{.Width}}){{if .Size}}, SIZE_BASE + SIZE_STEP * m:range({{.Offset}}, 1):uint(){{end}})
{{- end}}
    local r = m:range(5, 1):uint() % 2
    local send = SIZE_BASE + SIZE_STEP * m:range(6, 1):uint()
    local recv = SIZE_BASE + SIZE_STEP * m:range(7, 1):uint()
    item:append_text(string.format(", %s, offset %d: R=%d, Send Size %d, Receive Size %d", carrier, off, r, send, recv))
    pinfo.cols.info:append(string.format(" [RPC-over-RDMA R=%d send=%d recv=%d]", r, send, recv))
    local reserved = math.floor(m:range(5, 1):uint() / 2)
    if reserved ~= 0 then
      item:add_proto_expert_info(ef.{{.ReservedNonzero.Var}}, string.format(
        "{{.ReservedNonzero.Code}}: Reserved bits are 0x%02x (octet 5 is 0x%02x) [{{.ReservedNonzero.Reference}}]",
        reserved, m:range(5, 1):uint()))
    end
  else
    item = tree:add(proto, t:range(base, #pd))
    item:append_text(", " .. carrier .. ": no usable message")
  end
  if #bad > 0 then
    item:add_proto_expert_info(ef.{{.VersionUnknown.Var}}, "{{.VersionUnknown.Code}}: Format Identifier with " ..
      table.concat(bad, ", ") .. ": ignored [{{.VersionUnknown.Reference}}]")
  end
  if #short > 0 then
    item:add_proto_expert_info(ef.{{.Truncated.Var}}, "{{.Truncated.Code}}: Format Identifier too close to the end of the private data at " ..
      table.concat(short, ", ") .. " [{{.Truncated.Reference}}]")
  end
end

-- The CM private data: the MAD is found by its attribute ID.
local function dissect_cm(tvb, pinfo, tree)
  if not f_attr or not f_class then return end
  local classes, attrs = { f_class() }, { f_attr() }
  for i, a in ipairs(attrs) do
    local c = classes[i]
    local m = cm[a.value]
    if c and c.value == MGMT_CLASS_CM and m then
      local src = a.source or tvb
      local start = a.offset - ATTR_IN_MAD + MAD_HEADER + m.offset
      local n = math.min(m.size, src:len() - start)
      if n > 0 then
        show(src, start, src:raw(start, n), n < m.size, "CM " .. m.name, pinfo, tree)
      end
    end
  end
end

-- MPA: each TCP direction's first octets, put together by sequence number
-- until an MPA Request or Reply is whole. found[frame] is what completed in
-- that frame, for the dissections after the first.
local directions, ndirections = {}, 0
local found = {}

local function runs(d)
  local seqs = {}
  for s in pairs(d.segs) do table.insert(seqs, s) end
  table.sort(seqs)
  local out = {}
  for _, s in ipairs(seqs) do
    local data, last = d.segs[s], out[#out]
    if last and s <= last.start + #last.data then
      local over = last.start + #last.data - s
      if over < #data then last.data = last.data .. data:sub(over + 1) end
    else
      table.insert(out, { start = s, data = data })
    end
  end
  return out
end

local function follow(pinfo, seq, data)
  local k = tostring(pinfo.src) .. " " .. tostring(pinfo.src_port) .. " " .. tostring(pinfo.dst) .. " " .. tostring(pinfo.dst_port)
  local d = directions[k]
  if not d then
    if ndirections >= MAX_DIRECTIONS then return nil end
    d = { segs = {}, held = 0, limit = MPA_BEFORE_KEY }
    directions[k] = d
    ndirections = ndirections + 1
  end
  if d.done then return nil end
  local have = d.segs[seq]
  if have and #have >= #data then return nil end -- a retransmission
  d.segs[seq] = data
  d.held = d.held + #data - (have and #have or 0)
  for _, r in ipairs(runs(d)) do
    for _, mk in ipairs(MPA_KEYS) do
      local i = string.find(r.data, mk.key, 1, true)
      if i and #r.data >= i - 1 + MPA_HEADER then
        local pdlen = r.data:byte(i + 18) * 256 + r.data:byte(i + 19)
        d.limit = math.max(d.limit, i - 1 + MPA_HEADER + math.min(pdlen, MPA_MAX_PD) + MPA_BEFORE_KEY)
        if #r.data - (i - 1) >= MPA_HEADER + pdlen then
          d.done, d.segs = true, nil
          local res = { name = mk.name, pd = r.data:sub(i + MPA_HEADER, i + MPA_HEADER + pdlen - 1) }
          local at = r.start + i - 1 + MPA_HEADER -- the private data's first sequence number
          if at >= seq and at + pdlen <= seq + #data then res.inframe = at - seq end
          return res
        end
      end
    end
  end
  if d.held > d.limit then d.done, d.segs = true, nil end
  return nil
end

local function dissect_mpa(tvb, pinfo, tree)
  if not f_payload or not f_seq then return end
  local pl, sq = f_payload(), f_seq()
  if not pl or not sq then return end
  if not pinfo.visited then
    found[pinfo.number] = follow(pinfo, sq.value, pl.range:raw())
  end
  local res = found[pinfo.number]
  if not res or #res.pd == 0 then return end
  if res.inframe and pl.source then
    show(pl.source, pl.offset + res.inframe, res.pd, false, res.name, pinfo, tree)
  else
    local hex = res.pd:gsub(".", function(c) return string.format("%02x", c:byte()) end)
    local t = ByteArray.new(hex):tvb(res.name .. " private data")
    show(t, 0, res.pd, false, res.name, pinfo, tree)
  end
end

function proto.dissector(tvb, pinfo, tree)
  dissect_cm(tvb, pinfo, tree)
  dissect_mpa(tvb, pinfo, tree)
end

function proto.init()
  directions, ndirections, found = {}, 0, {}
end

register_postdissector(proto)
`))
