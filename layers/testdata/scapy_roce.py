#!/usr/bin/python3
"""Build RoCEv2 frames with scapy's RoCE layer and print them as hex.

Used by layers/icrc_scapy_test.go as an independent oracle for the ICRC:
scapy.contrib.roce computes the ICRC of a BTH over IPv4 (BTH.compute_icrc).
It has no IPv6 ICRC and none for RoCEv1 (its GRH has no ICRC code: a BTH
under a GRH gets a zero ICRC and a warning), so only IPv4 frames are built.

Output: one frame per line, lowercase hex of the whole Ethernet frame, the
ICRC in its last four octets. Nothing else is written to standard output.

Run with Debian's interpreter: /usr/bin/python3 scapy_roce.py
"""

import logging
import struct
import sys

logging.getLogger("scapy").setLevel(logging.ERROR)

from scapy.layers.inet import IP, IPOption_Router_Alert, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402
from scapy.packet import Raw  # noqa: E402
from scapy.contrib.roce import AETH, BTH, cnp  # noqa: E402

MAC_A = "02:00:00:00:00:01"
MAC_B = "02:00:00:00:00:02"
IP_A = "192.0.2.1"
IP_B = "192.0.2.2"
ROCE_PORT = 4791

GSI_QKEY = 0x80010000
UD_SEND_ONLY = 0x64


def pattern(n, seed):
    """n deterministic, non-trivial octets."""
    return bytes((seed + i * 37 + (i >> 8)) & 0xff for i in range(n))


def deth(qkey=GSI_QKEY, src_qp=1):
    return struct.pack("!IB", qkey, 0) + src_qp.to_bytes(3, "big")


def mad(attr, tid, data):
    """A 256-octet Communication Manager MAD: 24-octet header, 232 of data."""
    assert len(data) <= 232
    hdr = struct.pack("!BBBBHHQHHI", 1, 0x07, 2, 0x03, 0, 0, tid, attr, 0, 0)
    return hdr + data + bytes(232 - len(data))


def ipcm_header(sport, src, dst):
    """The 36-octet IP CM header of an rdma_cm REQ (IPv4)."""
    def a(s):
        return bytes(12) + bytes(int(x) for x in s.split("."))
    return bytes([0x00, 0x40]) + struct.pack("!H", sport) + a(src) + a(dst)


RPCRDMA_REQ = bytes.fromhex("f6ab0e1801010303")
RPCRDMA_REP = bytes.fromhex("f6ab0e1801000303")


def cm_req(local_comm_id):
    d = bytearray(232)
    struct.pack_into("!I", d, 0, local_comm_id)
    struct.pack_into("!Q", d, 8, 0x0000000001064E51)  # IP CM, TCP, port 20049
    struct.pack_into("!Q", d, 16, 0x0002C90300000001)  # local CA GUID
    d[32:35] = (0x000100).to_bytes(3, "big")  # local QPN
    d[35] = 16
    d[39] = 16
    d[43] = 20 << 3
    d[44:47] = (0x001000).to_bytes(3, "big")  # starting PSN
    d[47] = 20 << 3 | 7
    struct.pack_into("!H", d, 48, 0xFFFF)
    d[50] = 3 << 4 | 7
    d[51] = 15 << 4
    pd = ipcm_header(0xC001, IP_A, IP_B) + RPCRDMA_REQ
    d[140:140 + len(pd)] = pd
    return bytes(d)


def cm_rep(local_comm_id, remote_comm_id):
    d = bytearray(232)
    struct.pack_into("!II", d, 0, local_comm_id, remote_comm_id)
    d[12:15] = (0x000200).to_bytes(3, "big")
    d[20:23] = (0x002000).to_bytes(3, "big")
    d[24] = 16
    d[25] = 16
    struct.pack_into("!Q", d, 28, 0x0002C90300000002)
    d[36:36 + len(RPCRDMA_REP)] = RPCRDMA_REP
    return bytes(d)


def cm_rtu(local_comm_id, remote_comm_id):
    d = bytearray(232)
    struct.pack_into("!II", d, 0, local_comm_id, remote_comm_id)
    return bytes(d)


def roce(bth, payload=b"", tos=0, ttl=64, sport=49152, ip_id=1, options=None,
         src=IP_A, dst=IP_B, msrc=MAC_A, mdst=MAC_B):
    ip = IP(src=src, dst=dst, tos=tos, ttl=ttl, id=ip_id, flags="DF")
    if options:
        ip.options = options
    p = Ether(src=msrc, dst=mdst) / ip / UDP(sport=sport, dport=ROCE_PORT) / bth
    if payload:
        p = p / Raw(payload)
    return p


def frames():
    tid = 0x0000000100000000
    yield roce(BTH(opcode=0x04, psn=0, dqpn=0x12), tos=0x00, ttl=64,
               sport=49152)
    # PadCnt 3: one octet of payload, three pad octets.
    yield roce(BTH(opcode=0x04, padcount=3, dqpn=0x11, psn=7),
               b"\xa5" + bytes(3), tos=0x02, ttl=1, sport=1)
    # RDMA WRITE Only: RETH (16) then 100 octets, FECN set, ECN CE in TOS.
    reth = struct.pack("!QII", 0x00007F0000001000, 0x1234, 100)
    yield roce(BTH(opcode=0x0A, fecn=1, ackreq=1, psn=0xFFFFFF, dqpn=0x0203),
               reth + pattern(100, 1), tos=0x03, ttl=255, sport=0xFFFF,
               ip_id=0xBEEF)
    # UC SEND Only, 1024 octets, BECN, SE and MigReq set, non-default P_Key.
    yield roce(BTH(opcode=0x24, becn=1, solicited=1, migreq=1, pkey=0x8001,
                   dqpn=0xABCDEF, psn=0x123456),
               pattern(1024, 7), tos=0xB8, ttl=32, sport=50000)
    # UD SEND Only carrying a CM REQ MAD (IP CM header, RFC 8797 at 36).
    yield roce(BTH(opcode=UD_SEND_ONLY, dqpn=1, psn=0),
               deth() + mad(0x0010, tid, cm_req(0x0A000001)),
               tos=0x00, ttl=64, sport=0xC001)
    # CM REP with FECN, BECN and the other reserved bits of that octet set,
    # the reserved bits after AckReq too, DSCP 46 with ECN CE.
    yield roce(BTH(opcode=UD_SEND_ONLY, fecn=1, becn=1, resv6=0x15,
                   resv7=0x55, dqpn=1, psn=0x00FFFE),
               deth() + mad(0x0013, tid, cm_rep(0x0B000001, 0x0A000001)),
               tos=0xBB, ttl=128, sport=61000, src=IP_B, dst=IP_A,
               msrc=MAC_B, mdst=MAC_A)
    # CM RTU, TTL 0, TOS ECT(1).
    yield roce(BTH(opcode=UD_SEND_ONLY, dqpn=1, psn=1),
               deth() + mad(0x0014, tid, cm_rtu(0x0A000001, 0x0B000001)),
               tos=0x01, ttl=0, sport=0xC002)
    # CNP as scapy builds it.
    yield roce(cnp(dqpn=0xD2), tos=0x89, ttl=0x20, sport=56238)
    # RC Acknowledge with AETH.
    yield roce(BTH(opcode=0x11, dqpn=0x109, psn=0xA788C0) /
               AETH(syndrome=0, msn=5), tos=0x02, ttl=64, sport=49153)
    # IP options (IHL 6): the masked IP header is longer than 20 octets.
    yield roce(BTH(opcode=0x04, padcount=2, dqpn=0x42, psn=99),
               b"\x01\x02" + bytes(2), tos=0x04, ttl=17, sport=49999,
               options=[IPOption_Router_Alert()])
    # RDMA READ Response Only with AETH and 4096 octets.
    yield roce(BTH(opcode=0x10, dqpn=0x777, psn=0x010203),
               bytes.fromhex("1f000005") + pattern(4096, 99),
               tos=0x60, ttl=2, sport=12345)


def main():
    out = []
    for p in frames():
        b = bytes(p)
        # The ICRC is filled in at build time; re-parse to get the final
        # octets and check scapy decodes what it built.
        q = Ether(b)
        if BTH not in q:
            sys.exit("scapy did not decode its own BTH")
        fin = bytes(q)
        if fin != b or q[BTH].icrc is None:
            sys.exit("re-parsed frame differs from the built one")
        if fin[-4:] == b"\x00\x00\x00\x00":
            sys.exit("scapy left the ICRC zero")
        out.append(fin.hex())
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
