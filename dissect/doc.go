/*
Package dissect finds the RDMA connection messages in captured frames,
pairs them into connections, follows their data traffic, and hands plain
values (package record) to a record.Sink: a message as soon as it is
decoded, the data path's "rpc" records among them in capture order, a
connection attempt when its source ends (or, live, as soon as its state is
known), and last a summary of the run.

# The pipeline

A frame goes one way. Each stage is a package that returns what it made,
and the run loop (run.go) hands each thing on; no stage calls another:

	        *capture.Frame          []decode.Event                 []conn.Event
	Source ───────────────▶ Decoder ─────────────▶ run loop ─────────────────▶ Tracker
	(internal/capture:      (decode)     │    ▲      │ ▲  ▲   message            (conn)
	 File, Live)             │  ▲        │    │      │ │  └──────────────────────┘
	                TCP      │  │ MPA    │    │      │ │ established, ended, handed on
	                segments ▼  │ frames │    │      │ │
	           TCP reassembly ──▶ MPA framer  │      │ └── rpc records ──┐
	          (reassembly)       (mpa)   └────┘      │                   │
	                             FPDU calls,         │ RC frames,        │
	                             recorded            │ iWARP traffic,    │
	                                                 │ connection events │
	                                                 ▼                   │
	                                              Data path ─────────────┘
	                                              (datapath)
	                                                 │ what a connection showed
	                                                 ▼ (Annotate)
	     messages, rpc records, connections ───▶ Sink (record.Sink: output's renderers)

A Source yields the frames of one capture file (File) or of the interfaces
of a live capture read together (capture.Live). Both are package
internal/capture's, with the reader of capture files and the -w writers,
and so is the one Frame type they hand out (dissect.Frame): the run loop and
the Decoder read the frame the reader filled in, nothing is copied on the
way. The run loop, RunSources, reads each Source in turn to its end and
counts its frames; a frame count limit (Config.Count) and a writer of the
frames read (Config.Writer, the -w file) are the loop's too.

Each frame goes to the Decoder (dissect/decode), which returns what the
frame gave, in order, as decode.Events:

  - a record.Message: a CM message it decoded (its layers checked, its
    private data read by dissect/privdata: the RFC 8797 message, or another
    upper layer's data), or an MPA frame the framer completed;
  - an RC frame (datapath.RCFrame), which the data path reads as far as it
    needs;
  - a call of the MPA framer on the Traffic of an iWARP connection whose
    FPDUs it follows (mpa.TrafficEvent), recorded instead of acted on.

The loop hands a message to the Tracker (dissect/conn) first: its rules
judge the message (rpcrdma-absent applies only to an RPC-over-RDMA
connection, a reply is read as its request's upper layer) and give it the
Number of its connection. The Tracker returns what the message made
happen, as conn.Events: an attempt Established (with the REQ's and REP's
CM fields, or the MPA Reply's header), Ended (a DREP, a REJ of the REP),
HandedOn (its record is ready). The loop passes Established and Ended to the
data path (dissect/datapath), hands the message to the Sink, then the
records handed on, each after the data path added what its traffic showed
(Follower.Annotate: record.Datapath and the connection findings). The data
path keys every connection on its Number, never on the record, and its
"rpc" records and connection updates wait in its Output until the loop
takes them, after each call, for the Sink. At the end of a source the Decoder gives up what it
holds, the data path the Sends still in progress, and the Tracker hands on
the attempts it still tracks: messages never pair across sources. The run
ends with the record.Summary.

The records are the Sink's once handed on, except that with
Config.ReuseRecords (set by the program, whose sinks keep Clones of what
they keep) the run builds the next CM message, and later connection
records, in the storage of those it handed on: a CM frame then costs no
allocation. A message keeps its layers' octets, and a renderer that shows
their fields decodes them then (record.Message.Layers).

# One RoCE frame, from a file to a JSON line

Take frame 1 of pcaps/rocev2-nfs.pcap, read with

	rdmacm-pd dissect -T json pcaps/rocev2-nfs.pcap

cmd turns the flags into a Config and calls Run, which makes a File source
of the name and runs the loop with the JSON renderer as the Sink. At the
first call of Next, File opens the file: the reader of internal/capture
tells pcap, pcapng and gzip apart by content and reads ahead in a goroutine
of its own. Next returns the frame: 322 octets of Ethernet, link type 1,
input 0, Index 1. The loop counts it for its input and passes it to
Decoder.Decode. The classifier sees IPv4, UDP to port 4791 (RoCEv2), a BTH
with a UD SEND opcode, a DETH and a MAD of the Communication Manager class:
a CM candidate. The Decoder decodes IPv4 and UDP with gopacket's layers,
then the BTH, DETH, MAD and the REQ with a layers.IBStack (the Ethernet
header it stepped over is not decoded again), checks the lengths and the
ICRC, sees from the Service ID that the private data starts with an IP CM
header, and hands the private data to the RFC 8797 step, which finds the
message 36 octets in. Each finding is raised where its condition is seen:
none here. Decode returns one event, the record.Message: Kind REQ, Src and
Dst the record.Endpoints 192.0.2.1 and 192.0.2.2, the RFC 8797 values typed
(Send Size 4096, R set), and the octets of its IB layers.

The loop hands the message to Tracker.Message. Its rules see RFC 8797 data
from the initiator: RPC-over-RDMA's apply, and rpcrdma-absent is not raised.
The Tracker opens an attempt under the two endpoints and the Local
Communication ID, numbers it 1 (Message.Conn), and returns no event. The
loop counts the message and hands it to the Sink: the JSON renderer decodes
the layers' fields from the message's octets and writes one line,

	{"record":"message","file":"pcaps/rocev2-nfs.pcap","frame":1,...,"message":"REQ",...,"rpcrdma":{"offset":36,...,"send_size":4096,...},"ulp":null,"warnings":[]}

Frame 2, the REP, names that ID as its Remote Communication ID: the
attempt is established, the rules on what was agreed compare the two
sides' RFC 8797 messages (only the initiator set R:
remote-invalidation-one-sided), and the Tracker returns Established, which
the loop passes to the data path: it now matches the connection's frames on
the addresses and the REQ's and REP's QPNs, from their Starting PSNs. Frame
3, the RTU, settles it. When File returns io.EOF, the loop closes the source
(its Input now has its format and link types), takes what the Decoder and
the data path still hold, and Tracker.Finish returns HandedOn for the
attempt: the data path annotates its record (no traffic: "datapath": null),
and the renderer writes a "connection" line. The "summary" line ends the
run.

# One iWARP segment, from a file to a JSON line

Take frame 5 of pcaps/iwarp-rev2.pcap, read with -T json: a TCP segment from
192.0.2.2:20049 to 192.0.2.1:49153 that carries a whole MPA Reply. The
classifier finds TCP and the Decoder hands the segment (addresses, ports,
sequence number, flags, payload) to the reassembler (dissect/reassembly),
which knows nothing of MPA. It keeps every direction in a flow table, found
by its whole 4-tuple; this one began with the SYN of frame 2, so its octets
go, in order from the octet after the SYN, to the direction's Reader, which
the MPA framer (dissect/mpa) made. The framer finds the Reply key at the
start, collects the 20-octet header and PD_Length (12) octets of private
data, and builds the record.Message: MPA_REP, the endpoints with their
ports, the MPA header typed, the RFC 8797 message 4 octets in (after
revision 2's IRD and ORD words). The Reply accepts, so the framer goes on
to follow the direction's FPDUs, and links the connection's traffic: with
the data path on, the Decoder records the link, and every later call the
framer makes of the connection's Traffic (a frame, a Send, a Read Request),
as events. Decode returns the message, then the link.

The loop hands the message to the Tracker, which pairs it with the MPA
Request of frame 4 (the same TCP connection, the other way), works out
what the two agreed and returns Established: the data path keeps the
setup (its thresholds, R bits, and the Read limits of the IRD and ORD words)
under the Request's endpoints and frame. The JSON renderer writes the
message's line,

	{"record":"message","file":"pcaps/iwarp-rev2.pcap","frame":5,"frames":[5],...,"message":"MPA_REP","mpa":{"key":"MPA ID Rep Frame",...},...}

and the link reaches the data path, which finds the setup the Tracker
established a moment before and ties the traffic to it. An MPA Reply is
final (MPA has no third message), so offline the attempt waits in the
Tracker for the end of the input, and its "connection" line follows the
messages. Once an MPA frame is complete in a direction that is not
followed, its Reader says Done: the direction's later segments cost a
table look-up. Limits (octets per direction and in all, directions
followed, directions remembered) and capture-time ageing bound it all;
dissect/reassembly's package comment draws a direction's states.

The TCP health of a followed connection travels the same way: the
reassembler counts, per direction, the segments sent again, the holes the
capture lost, the zero windows and an RST (reassembly.Health, a few
integers), and hands the counts to the Reader with the direction's End;
the framer keeps them with the connection and passes those of both
directions on with its last call of the connection's Traffic (Close),
recorded as an event like the others, and the data path's Checker
turns them into the connection's figures (record.Health of Kind tcp) and
the tcp-retransmission, tcp-segments-missing and tcp-reset findings.

An FPDU's CRC is checked apart from its framing. When the source can keep
its frames' octets (capture.Releaser: a capture file), the framer puts
each FPDU that lies whole in the frame being decoded in a batch of checks
(mpa.Framer.CheckAside) and goes on framing; each batch is checked in one
pass over each FPDU's octets, by a worker goroutine above two cores, by
the framer itself as the batch fills on two or fewer (a wake-up across
cores for each batch costs more than it saves there). The verdicts are
joined in the order the FPDUs ended, before the direction reports its CRC
problems and before the source lets go of the octets the checks read (the
source calls Decoder.Settle first): the output is the same as if each CRC
had been checked at once.

A capture file's source also shows the loop the frame two records ahead
(capture.Looker). Once the flow table is larger than the caches, the loop
shows it to the Decoder (Decoder.Ahead), and the reassembler hints the
lines that frame's segment and the next one will read (reassembly's
ahead.go). A hint decides nothing.

# The data path

RC frames (a BTH with a Reliable Connected opcode, over RoCEv2, RoCEv1 or
native InfiniBand) are events of their own when the data path is on
(Config.Datapath). The Follower looks at an RC frame's key first (its
opcode, DestQP and the end of its destination address): a frame no
connection it follows can own costs a count. Otherwise the Decoder decodes
it as far as the data path needs (BTH, extended headers, where the payload
lies). The Follower matches each frame on its addresses and DestQP, keeps
each side's PSNs, reassembles Sends (keeping only their length, frames and
first octets) and feeds a datapath.Checker per connection, which decodes
each Send's RPC-over-RDMA header, tracks Calls, credits, STags and Reads,
and raises the data-path findings. A connection that ends before its
record goes out (its DREP, a reconnection on the same QPNs, the limit of
connections followed) keeps its figures and findings in the Follower until
the record is handed on; one whose record went out before (live, or early
at a limit) has what it shows later sent after it, as a
record.ConnectionUpdate (Sink.Update), when its traffic ends or the input
does.

With RDMACM_DATAPATH_WORKER=1, and a source that keeps its frames' octets
until it says (capture.Releaser: a capture file, without -w), the
Follower takes RC frames on a goroutine of its own (pipeline.go): the run
loop decodes each as far as a datapath.Packet and queues it, and the worker
follows them a batch at a time, in order, handing the "rpc" records to
the Sink itself. Whatever else touches the data path or the Sink (a
message, iWARP traffic, a connection's record, the end of a source) first
waits for the worker to have done every frame queued, so the Follower and
the Sink see the same calls in the same order. The memory budget is split
between the two (budget.Split), each side deciding on what it holds and on a
view of the other's share set at points of the input, so that the output
does not depend on the timing.

Take frame 19 of pcaps/rocev2-nfs-traffic.pcap: UDP to port 4791, a BTH with
opcode 0x17 (SEND Only with Invalidate) to QP 0x000100. The Follower finds
the connection the REP of frame 2 established (192.0.2.2 → 192.0.2.1 to
the REQ's Local QPN: the responder's side), checks that its PSN, 0x001009,
is the next in that side's sequence (the REQ's Starting PSN 0x001000, then
the Reply of frame 6 and the eight packets of an RDMA WRITE), and as the
Send is a SEND Only hands it to the Checker from the frame itself. The
Checker decodes its RDMA_MSG header: a Reply to XID 0x5f000001, whose Call
(frame 8) advertised the write chunk 0x00010001; both sides set R, so the
invalidation is allowed and names an STag of the Call: no finding. With
--datapath all an "rpc" record goes to the Sink; the connection's figures
count it when its record goes out at the end.

# Tunnels and fragments

The classifier steps into the encapsulations real captures come in
(ERSPAN over GRE, VXLAN, Geneve, MPLS, IP in IP; docs/sources.md) as it
goes, so that the frame is decoded from its inner headers as if it had been
captured there, and the message lists the tunnels in record.Message.Tunnel.
IP fragments go to a reassembler of their own (dissect/ipfrag); a datagram
made whole is decoded as a frame of its own, numbered by the fragment that
completed it.

# Live capture

A live capture is a Source like a file: capture.Live reads its interfaces
in goroutines of their own and numbers the frames in the order it hands
them on. With Config.Live the Tracker hands each attempt on as soon as its
state is known; Ctrl-C (a cancelled ctx) or the capture's duration ends it
after the frames already captured, and the run ends as at the end of a
file.
*/
package dissect
