/*
Package dissect finds the RDMA connection messages in captured frames,
pairs them into connections, and hands plain values to a Sink: a message
as soon as it is decoded, a connection attempt when its source ends (or,
live, as soon as its state is known), and last a summary of the run.

# The pipeline

A frame goes one way, one package for each step:

	          frames             messages             connections
	Source ───────────▶ Decoder ──────────▶ Tracker ─────────────▶ Sink
	(File,              (decode)    │       (conn)     │          (output)
	 capture.Live)       │  │  ▲    └────── messages ──┼──────────▶
	         TCP segments│  │  │messages               │hand-over  ▲
	                     ▼  │  │                       ▼           │rpc records,
	         TCP reassembly ──▶ MPA framer        Data path ───────┘connection figures
	       (dissect/reassembly)  (dissect/mpa)  (dissect/datapath)
	                        │  RC frames                ▲
	                        └───────────────────────────┘

A Source yields the frames of one capture file (File) or of the interfaces
of a live capture read together (capture.Live). Both are package
internal/capture's, with the reader of capture files and the -w writers,
and so is the one Frame type they hand out (dissect.Frame): the run loop
and the Decoder read the frame the reader filled in, nothing is copied on
the way. The run loop, RunSources, reads each Source in turn to its end
and counts its frames; a frame count limit (Config.Count) and a writer of
the frames read (Config.Writer, the -w file) are the loop's too. Each
frame goes to the Decoder (dissect/decode), which classifies it from its
first octets, decodes the candidates with the gopacket layers of package
layers, checks them, reads the private data (dissect/privdata: the RFC
8797 message, or another upper layer's data), and emits a record.Message
with its findings (dissect/finding). The loop hands each message to the
Tracker (dissect/conn), which pairs the messages into connection attempts,
names each attempt's upper layer and works out what it negotiated; its
rules judge the message too (a finding such as rpcrdma-absent applies only
to an RPC-over-RDMA connection), so the loop counts the message and hands
it to the Sink after that, then the attempts the Tracker made ready. At
the end of a source the Decoder gives up what it still holds and the
Tracker hands on the attempts it still tracks: messages never pair across
sources. At the end of the run the loop hands the Sink the record.Summary.
Renderers (package output) implement Sink; so does a test that collects
records.

# One frame, from a file to a JSON line

Take frame 1 of pcaps/rocev2-nfs.pcap, read with

	rdmacm-pd dissect -T json pcaps/rocev2-nfs.pcap

cmd turns the flags into a Config and calls Run, which makes a File
source of the name and runs the loop with the JSON renderer as the Sink.
At the first call of Next, File opens the file: the reader of
internal/capture tells pcap, pcapng and gzip apart by content and reads
ahead in a goroutine of its own. Next returns the frame: 322 octets of Ethernet, link type 1,
input 0, Index 1. The loop counts it for its input and passes it to
Decoder.Decode. The Decoder's classifier sees IPv4, UDP to port 4791
(RoCEv2), a BTH with a UD SEND opcode, a DETH and a MAD of the
Communication Manager class: a CM candidate. It decodes each layer once,
from where the classifier found it (IPv4 and UDP with gopacket's layers,
then the BTH, DETH, MAD and the REQ; the Ethernet header it stepped over
is not decoded again), checks the lengths and the ICRC, sees from the
Service ID that the private data starts with an IP CM header, and hands
the private data to the RFC 8797 step (dissect/privdata), which finds the
message 36 octets in (so the private data is no other upper layer's).
Each finding is raised where its condition is seen, and the connection
rules judge the message: none here.
The record.Message it emits says Kind REQ, 192.0.2.1 → 192.0.2.2, the
layers' fields, and the RFC 8797 values typed (Send Size 4096, R set).

The Tracker opens a connection attempt for the REQ, under its two
addresses and its Local Communication ID; the RFC 8797 message makes it an
RPC-over-RDMA one. The loop counts the message and hands it to the Sink:
the JSON renderer writes one line and flushes it,

	{"record":"message","file":"pcaps/rocev2-nfs.pcap","frame":1,...,"message":"REQ",...,"rpcrdma":{"offset":36,...,"send_size":4096,...},"ulp":null,"warnings":[]}

Frame 2, the REP, names that ID as its Remote Communication ID: the
attempt is established, and the rules on what was agreed compare the two
sides' RFC 8797 messages (only the initiator set R:
remote-invalidation-one-sided). Frame 3, the RTU, settles
it. When File returns io.EOF, the loop closes the source (its Input now has
its format and link types), flushes the Decoder, and the Tracker hands the
attempt on: a "connection" line. The "summary" line ends the
run.

# Tunnels and fragments

The classifier steps into the encapsulations real captures come in
(ERSPAN over GRE, VXLAN, Geneve, MPLS, IP in IP; docs/sources.md) as it
goes, so that the frame is decoded from its inner headers as if it had been
captured there, and the message lists the tunnels in record.Message.Tunnel.
IP fragments go to a reassembler of their own (dissect/ipfrag); a datagram
made whole is decoded as a frame of its own, numbered by the fragment that
completed it.

# TCP reassembly

An iWARP MPA Request or Reply travels in a TCP stream, split over segments
as TCP pleases, perhaps after TCP streaming-mode data. The Decoder hands
each TCP segment (addresses, ports, sequence number, flags, payload) to
the reassembler (dissect/reassembly), which knows nothing of MPA. It keeps
every direction in a flow table, found by its whole 4-tuple, and follows
the ones that may still matter: their octets go, in order and from where
the direction starts (the octet after its SYN, or a segment the protocol
says starts one), to a Reader per direction; out-of-order octets are held
in a ring indexed by sequence number, as far as the Reader Needs them.
The MPA framer (dissect/mpa) is that Reader: it looks for the key at the
start of the direction or, after streaming-mode data, within its first
64 KiB, collects the frame's header and PD_Length octets of private data,
and builds the record.Message (listing every frame that carried part of
it), which goes on to the Sink and the Tracker as a CM message does.
Once the frame is complete the Reader says Done and the direction is
decided: its later segments cost a table look-up. Limits (octets per
direction and in all, directions followed, directions remembered) and
capture-time ageing bound it all; dissect/reassembly's package comment
draws a direction's states.

# The data path

RC frames (a BTH with a Reliable Connected opcode, over RoCEv2, RoCEv1 or
native InfiniBand) take a branch of their own, still one way. The
Decoder's classifier gives them a frame kind of their own when the data
path is on (Config.Datapath), and the Decoder decodes them only as far as
the data path needs (BTH, extended headers, where the payload lies) and
hands them to the source's datapath.Follower. The Follower learns the
connections from the Tracker, never the other way round: when an accepting
REP makes an attempt established, the Tracker hands it over (conn.Handover:
the record with what was negotiated, and the REQ's and REP's QPNs,
Starting PSNs, Responder Resources, Initiator Depth, path MTU and LIDs);
a DREP, or a REJ of the REP, ends it. A reconnection is a new attempt,
with new QPNs. The Follower matches each frame on its addresses and DestQP,
keeps each side's PSNs, reassembles Sends (keeping only their length,
frames and first octets) and feeds a datapath.Checker per connection, which
decodes each Send's RPC-over-RDMA header, tracks Calls, credits, STags and
Reads, and raises the data-path findings. Its "rpc" records go back to the
run loop as they are made, and on to the Sink (a dissect.RPCSink) in
capture order among the messages.

At the end of a source the Decoder gives up what it holds, the Follower
hands on the Sends still in progress, and as the Tracker hands on each
connection record the run loop has the Follower add its figures
(record.Datapath) and connection findings (the Read limit) before the Sink
gets it. A connection that ends before (its DREP, a reconnection on the
same QPNs, the limit of connections followed) hands its Sends in progress
and its figures to its record at once, and the Follower forgets it. Live, a
record goes out at its RTU, before its traffic: what the data path finds
about it later goes to the summary.

Take frame 19 of pcaps/rocev2-nfs-traffic.pcap: UDP to port 4791, a BTH
with opcode 0x17 (SEND Only with Invalidate) to QP 0x000100. The
classifier calls it kindRC; the Decoder reads the IETH (R_Key 0x00010001)
and hands the Packet over. The Follower finds the connection the REP of
frame 2 established (192.0.2.2 → 192.0.2.1 to the REQ's Local QPN: the
responder's side), checks that its PSN, 0x001009, is the next in that
side's sequence (the REQ's Starting PSN 0x001000, then the Reply of frame
6 and the eight packets of an RDMA WRITE), and as the Send is a SEND Only
hands it to the Checker from the frame itself. The Checker decodes its
RDMA_MSG header: a Reply to XID 0x5f000001, whose Call (frame 8)
advertised the write chunk 0x00010001; both sides set R, so the
invalidation is allowed and names an STag of the Call: no finding. With
--datapath all an "rpc" record goes to the Sink; the connection's figures
count it when its record goes out at the end.

# Live capture

A live capture is a Source like a file: capture.Live reads its
interfaces in goroutines of their own and numbers the frames in the order
it hands them on. With Config.Live the Tracker hands each attempt on as
soon as its state is known; Ctrl-C (a cancelled ctx) or the capture's
duration ends it after the frames already captured, and the run ends as
at the end of a file.
*/
package dissect
