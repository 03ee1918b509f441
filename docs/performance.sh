#!/usr/bin/env bash
# Measures rdmacm-pd against tcpdump and tshark on the workloads that
# `rdmacm-pd craft --workload` writes, and prints a Markdown table: the mixed
# workload (RoCEv2 data without its setup, TCP bulk, small UDP, CM and MPA
# setups) and the NFS/RDMA-like one (`--nfs`: connections set up with RFC 8797
# data carrying Calls and Replies with chunks, RDMA WRITEs and READs, Send
# With Invalidate; TCP bulk), and the iWARP NFS-like one (`--iwarp-conns
# 512`: READ Calls, their data in RDMA Writes, Replies with Send with
# Invalidate, every 4th connection with markers; with CRC on every
# connection, and with none), and all TCP (`--tcp-flows 100000`: bulk
# segments of 100 000 flows captured mid-stream, in turn, iWARP connections
# among them), side by side.
#
#   docs/performance.sh                 # 1 GiB of each
#   docs/performance.sh 256MiB 1GiB 4GiB
#   WORKLOADS=nfs docs/performance.sh   # one of them
#
# For each size and workload: writes the workload (once; kept in $PERF_DIR),
# drops it from the page cache and reads it in again (as a file read from
# disk is cached), then times (best of $RUNS):
#   - rdmacm-pd dissect -T json (the full dissection, the data path on as by
#     default: messages, connections, summary), and checks that it found every
#     message, connection and (nfs) RPC-over-RDMA message the workload holds,
#     and no finding;
#   - tcpdump -r FILE 'udp dst port 4791 or tcp' -w /dev/null (a BPF filter
#     pass, no decoding);
#   - tshark with a display filter for CM and MPA (sizes up to $TSHARK_MAX
#     only: it runs at about 10 MB/s).
# Peak memory (max RSS) comes from GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
dir=${PERF_DIR:-/tmp/rdmacm-pd-perf}
runs=${RUNS:-3}
tshark_max=${TSHARK_MAX:-1288490189}  # 1.2 GiB
workloads=${WORKLOADS:-mixed nfs iwarp iwarp-nocrc tcp-flows}
mkdir -p "$dir"
go build -o "$dir/rdmacm-pd" .
bin="$dir/rdmacm-pd"
gtime=$(command -v /usr/bin/time || true)
[ -n "$gtime" ] || { echo "needs GNU time (apt-get install time)" >&2; exit 2; }

# best SECONDS PEAK_KB of $runs runs of a command (stdout to /dev/null)
best() {
	local t m bt="" bm=""
	for _ in $(seq "$runs"); do
		"$gtime" -f "%e %M" -o "$dir/time.out" "$@" > /dev/null 2> "$dir/stderr.out" || { cat "$dir/stderr.out" >&2; return 1; }
		read -r t m < "$dir/time.out"
		if [ -z "$bt" ] || awk "BEGIN{exit !($t < $bt)}"; then bt=$t; bm=$m; fi
	done
	echo "$bt $bm"
}

echo "| workload | size | frames | rdmacm-pd -T json | throughput | peak memory | tcpdump filter pass | tcpdump peak memory | tshark | vs tcpdump | vs tshark |"
echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
for size in "${@:-1GiB}"; do
for wl in $workloads; do
	case "$wl" in
	mixed) flags=""; f="$dir/workload-$size.pcap" ;;
	nfs) flags="--nfs"; f="$dir/workload-nfs-$size.pcap" ;;
	iwarp) flags="--iwarp-conns 512"; f="$dir/workload-iwarp-$size.pcap" ;;
	iwarp-nocrc) flags="--iwarp-conns 512 --iwarp-crc-every 0"; f="$dir/workload-iwarp-nocrc-$size.pcap" ;;
	tcp-flows) flags="--tcp-flows 100000"; f="$dir/workload-tcp-flows-$size.pcap" ;;
	*) echo "unknown workload $wl (want mixed, nfs, iwarp, iwarp-nocrc or tcp-flows)" >&2; exit 2 ;;
	esac
	if [ ! -f "$f" ] || [ ! -f "$f.expected" ]; then
		"$bin" craft --workload "$size" $flags -w "$f" > "$f.expected"
	fi
	# The page cache as a read from disk leaves it, not as craft's writes
	# did: a file read in sits in large folios (2 MiB with ext4 on Linux
	# 6.x), one written a moment ago mostly in small ones, and mapping
	# small ones costs the kernel several times the work (docs/performance.md).
	dd if="$f" iflag=nocache count=0 status=none
	cat "$f" > /dev/null
	octets=$(stat -c %s "$f")

	# Correctness: every message, connection (and RPC-over-RDMA message)
	# the workload holds, nothing given up, no finding on the NFS workload.
	"$bin" dissect -T json "$f" | tail -n 1 > "$dir/summary.json"
	python3 - "$f.expected" "$dir/summary.json" "$wl" <<'PY'
import json, re, sys
exp = open(sys.argv[1]).read()
want_msgs = int(re.search(r"expect (\d+) messages", exp).group(1))
want_conns = int(re.search(r"(\d+) established", exp).group(1))
want_frames = int(re.search(r"frames (\d+),", exp).group(1))
s = json.loads(open(sys.argv[2]).read())
got = (s["frames"], s["messages"], s["connections"]["established"])
if got != (want_frames, want_msgs, want_conns) or s["state_limit_drops"] or s["decode_errors"]:
    sys.exit("MISMATCH: got frames/messages/established %s, want %s" % (got, (want_frames, want_msgs, want_conns)))
if sys.argv[3] not in ("mixed", "tcp-flows"):
    want_rpc = int(re.search(r"(\d+) rpc_messages", exp).group(1))
    if s["rpc_messages"] != want_rpc or s["findings"] or s["datapath_frames_without_connection"]:
        sys.exit("MISMATCH: rpc_messages %d (want %d), findings %s, %d frames of no connection"
                 % (s["rpc_messages"], want_rpc, s["findings"], s["datapath_frames_without_connection"]))
PY
	frames=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['frames'])" "$dir/summary.json")

	read -r rt rm < <(best "$bin" dissect -T json "$f")
	tcp="-"
	tm="-"
	if command -v tcpdump > /dev/null; then
		read -r tt tmk < <(best tcpdump -r "$f" -w /dev/null 'udp dst port 4791 or tcp')
		tcp="$tt s"
		tm=$(awk -v k="$tmk" 'BEGIN{printf "%.0f MB", k / 1024}')
	fi
	tsh="-"
	if command -v tshark > /dev/null && [ "$octets" -le "$tshark_max" ]; then
		ts0=$(date +%s.%N)
		tshark -n -r "$f" -Y 'infiniband.mad.mgmtclass == 7 or iwarp_mpa or rpcordma' -T fields -e frame.number > /dev/null 2>&1
		ts1=$(date +%s.%N)
		tsh=$(awk "BEGIN{printf \"%.1f s\", $ts1 - $ts0}")
	fi
	awk -v wl="$wl" -v size="$size" -v frames="$frames" -v octets="$octets" -v rt="$rt" -v rm="$rm" -v tcp="$tcp" -v tm="$tm" -v tsh="$tsh" 'BEGIN{
		vt = (tcp == "-") ? "-" : sprintf("%.2fx its time", rt / (tcp+0))
		vs = (tsh == "-") ? "-" : sprintf("%.0fx faster", (tsh+0) / rt)
		printf "| %s | %s | %d | %.2f s | %.2f GB/s | %.0f MB | %s | %s | %s | %s | %s |\n", wl, size, frames, rt, octets / rt / 1e9, rm / 1024, tcp, tm, tsh, vt, vs
	}'
done
done
