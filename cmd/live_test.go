//go:build linux

package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/afpacket"

	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// Live capture tests: they run the real binary as root, capture on the
// loopback interface while the test sends RoCEv2 CM datagrams to
// 127.0.0.1:4791 and runs a real TCP MPA exchange, and check what comes out.
// They skip without root (or without AF_PACKET).

func requireCapture(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("live capture tests need root (CAP_NET_RAW)")
	}
	h, err := afpacket.NewTPacket(afpacket.OptInterface("lo"))
	if err != nil {
		t.Skipf("AF_PACKET not available here: %v", err)
	}
	h.Close()
}

// rdmacmBinary builds rdmacm-pd once for the live tests.
func rdmacmBinary(t *testing.T) string {
	t.Helper()
	if builtBinary != "" {
		return builtBinary
	}
	dir, err := os.MkdirTemp("", "rdmacm-pd-live")
	if err != nil {
		t.Fatal(err)
	}
	// Others may run it (TestLiveNoPermission runs it as nobody).
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	builtDir = dir
	bin := filepath.Join(dir, "rdmacm-pd")
	// RDMACM_BUILD_TAGS=pcap tests the libpcap backend (.ci/run does).
	args := []string{"build", "-o", bin}
	env := append(os.Environ(), "CGO_ENABLED=0")
	if tags := os.Getenv("RDMACM_BUILD_TAGS"); tags != "" {
		args = append(args, "-tags", tags)
		env = append(os.Environ(), "CGO_ENABLED=1")
	}
	cmd := exec.Command("go", append(args, "..")...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	builtBinary = bin
	return bin
}

// liveRun starts the binary capturing and waits until it says it captures.
type liveRun struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr *bufio.Reader
	errAll bytes.Buffer
	done   chan error
}

func startCapture(t *testing.T, args ...string) *liveRun {
	t.Helper()
	c := &liveRun{cmd: exec.Command(rdmacmBinary(t), append([]string{"dissect"}, args...)...)}
	c.cmd.Stdout = &c.stdout
	pr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.stderr = bufio.NewReader(io.TeeReader(pr, &c.errAll))
	line, err := c.stderr.ReadString('\n')
	if err != nil || !strings.Contains(line, "capturing on") {
		c.cmd.Process.Kill()
		t.Fatalf("capture did not start: %q %v", line, err)
	}
	c.done = make(chan error, 1)
	go func() {
		io.Copy(io.Discard, c.stderr)
		c.done <- c.cmd.Wait()
	}()
	time.Sleep(200 * time.Millisecond) // the ring is armed; let the filter settle
	return c
}

func (c *liveRun) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case err := <-c.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		c.cmd.Process.Kill()
		t.Fatalf("capture did not stop within %s; stderr: %s", limit, c.errAll.String())
	}
	return -1
}

// sendCM sends a REQ, REP and RTU exchange as UDP datagrams to
// 127.0.0.1:4791 from an unconnected socket: the kernel builds the IPv4
// header (DF set, ID 0 for an unconnected DF datagram), which is what craft
// assumes, so the ICRCs are right.
func sendCM(t *testing.T, x craft.Exchange) {
	t.Helper()
	sendCMPort(t, x, nil)
}

// sendCMPort is sendCM; it stores the source port in port.
func sendCMPort(t *testing.T, x craft.Exchange, portOut *int) {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := pmtuDiscoverDo(conn); err != nil {
		t.Fatal(err)
	}
	lo := netip.MustParseAddr("127.0.0.1")
	port := uint16(conn.LocalAddr().(*net.UDPAddr).Port)
	if portOut != nil {
		*portOut = int(port)
	}
	ep := craft.Endpoint{IP: lo, MAC: net.HardwareAddr{0, 0, 0, 0, 0, 0}, Port: port, LID: 1}
	x.Initiator2, x.Responder2 = &ep, &ep
	x.Transport = craft.RoCEv2
	frames, err := x.Frames()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		payload := f.Data[14+20+8:] // after Ethernet, IPv4 and UDP
		if _, err := conn.WriteToUDP(payload, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4791}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func pmtuDiscoverDo(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_MTU_DISCOVER, syscall.IP_PMTUDISC_DO)
	})
	if err != nil {
		return err
	}
	return serr
}

// mpaExchange runs a real TCP connection on loopback: the client sends an
// MPA revision 2 Request in two writes (split inside the key), the server
// answers with a Reply.
func mpaExchange(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	rpc := func(s, r byte, inv byte) []byte { return []byte{0xf6, 0xab, 0x0e, 0x18, 1, inv, s, r} }
	req := (&craft.MPA{Request: true, Rev: 2, CRC: true, IRD: 16, ORD: 16, PeerToPeer: true, ZeroRead: true, Data: rpc(3, 3, 1)}).Bytes()
	rep := (&craft.MPA{Rev: 2, CRC: true, IRD: 16, ORD: 16, Data: rpc(7, 7, 0)}).Bytes()
	served := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		buf := make([]byte, len(req))
		if _, err := io.ReadFull(c, buf); err != nil {
			served <- err
			return
		}
		_, err = c.Write(rep)
		time.Sleep(100 * time.Millisecond)
		served <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetNoDelay(true)
	if _, err := c.Write(req[:7]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := c.Write(req[7:]); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(rep))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

type jsonRecord map[string]any

func records(t *testing.T, out []byte) []jsonRecord {
	t.Helper()
	var rs []jsonRecord
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var r jsonRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		rs = append(rs, r)
	}
	return rs
}

func messages(rs []jsonRecord) []jsonRecord {
	var out []jsonRecord
	for _, r := range rs {
		if r["record"] == "message" {
			out = append(out, r)
		}
	}
	return out
}

// TestLiveLoopback captures on lo with --duration while the test sends a
// RoCEv2 CM exchange and runs an MPA exchange whose Request is written in two
// parts; each message must be reported once with its values, the connections
// paired, and the -w file must dissect to the same messages.
func TestLiveLoopback(t *testing.T) {
	requireCapture(t)
	dir := t.TempDir()
	wfile := filepath.Join(dir, "live.pcapng")
	c := startCapture(t, "-i", "lo", "-T", "json", "--duration", "3s", "-w", wfile)
	sendCM(t, craft.Exchange{Initiator: craft.Peer{SendSize: 4096, ReceiveSize: 4096, RemoteInvalidate: true},
		Responder: craft.Peer{SendSize: 8192, ReceiveSize: 8192}})
	mpaExchange(t, "127.0.0.1:0")
	if code := c.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, c.errAll.String())
	}
	rs := records(t, c.stdout.Bytes())
	ms := messages(rs)
	var names []string
	for _, m := range ms {
		names = append(names, m["message"].(string))
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "MPA_REP MPA_REQ REP REQ RTU" {
		t.Fatalf("messages %v (each once), stdout:\n%s", names, c.stdout.String())
	}
	for _, m := range ms {
		if m["file"] != "lo" {
			t.Errorf("file %v", m["file"])
		}
		switch m["message"] {
		case "REQ":
			rp := m["rpcrdma"].(map[string]any)
			if rp["offset"] != 36.0 || rp["send_size"] != 4096.0 || rp["remote_invalidate"] != true {
				t.Errorf("REQ rpcrdma %v", rp)
			}
			if m["ib"].(map[string]any)["icrc"].(map[string]any)["valid"] != true {
				t.Errorf("REQ ICRC %v", m["ib"])
			}
			if m["src"] != "127.0.0.1" || m["transport"] != "rocev2" {
				t.Errorf("REQ %v → %v %v", m["src"], m["dst"], m["transport"])
			}
		case "REP":
			if rp := m["rpcrdma"].(map[string]any); rp["send_size"] != 8192.0 || rp["offset"] != 0.0 {
				t.Errorf("REP rpcrdma %v", rp)
			}
		case "MPA_REQ":
			if fr := m["frames"].([]any); len(fr) != 2 {
				t.Errorf("MPA_REQ frames %v: the Request was written in two parts", fr)
			}
			if rp := m["rpcrdma"].(map[string]any); rp["offset"] != 4.0 || rp["send_size"] != 4096.0 {
				t.Errorf("MPA_REQ rpcrdma %v", rp)
			}
		case "MPA_REP":
			if mpa := m["mpa"].(map[string]any); mpa["rev"] != 2.0 || mpa["ird"] != 16.0 {
				t.Errorf("MPA_REP %v", mpa)
			}
		}
	}
	// Connections, as soon as their state was known, then the summary last.
	var states []string
	for _, r := range rs {
		if r["record"] == "connection" {
			states = append(states, fmt.Sprintf("%v %v", r["transport"], r["state"]))
		}
	}
	sort.Strings(states)
	if strings.Join(states, ", ") != "iwarp established, rocev2 established" {
		t.Errorf("connections %v", states)
	}
	if last := rs[len(rs)-1]; last["record"] != "summary" {
		t.Errorf("last record %v", last["record"])
	}

	// The -w file dissects to the same messages.
	var out, errOut bytes.Buffer
	code := Run([]string{"dissect", "-T", "json", wfile}, &IOStreams{Out: &out, ErrOut: &errOut})
	if code != 0 {
		t.Fatalf("dissect -w file: %d %s", code, errOut.String())
	}
	again := messages(records(t, out.Bytes()))
	if len(again) != len(ms) {
		t.Fatalf("%d messages from the -w file, %d live", len(again), len(ms))
	}
	for i := range ms {
		a, b := ms[i], again[i]
		delete(a, "file")
		delete(b, "file")
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Errorf("message %d differs:\nlive %s\nfile %s", i, ja, jb)
		}
	}
}

// TestLiveSignal: SIGINT stops the capture cleanly (exit 0), and everything
// is flushed: the message, the unanswered connection, the summary, the -w
// file.
func TestLiveSignal(t *testing.T) {
	requireCapture(t)
	wfile := filepath.Join(t.TempDir(), "sig.pcap")
	c := startCapture(t, "-i", "lo", "-w", wfile)
	sendCM(t, craft.Exchange{Initiator: craft.Peer{SendSize: 2048, ReceiveSize: 2048}, Index: 5})
	time.Sleep(300 * time.Millisecond)
	c.cmd.Process.Signal(syscall.SIGINT)
	if code := c.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, c.errAll.String())
	}
	out := c.stdout.String()
	for _, want := range []string{"rocev2 REQ      127.0.0.1 → 127.0.0.1  R=0 send=2048 recv=2048\n", "connection 127.0.0.1 → 127.0.0.1 established",
		"3 frames, 3 messages, 1 connection (1 established"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var fout, ferr bytes.Buffer
	if code := Run([]string{"dissect", wfile}, &IOStreams{Out: &fout, ErrOut: &ferr}); code != 0 || !strings.Contains(fout.String(), "3 frames, 3 messages") {
		t.Errorf("-w file: %d %s %s", code, fout.String(), ferr.String())
	}
}

// TestLiveCount: -c stops after exactly that many frames.
func TestLiveCount(t *testing.T) {
	requireCapture(t)
	c := startCapture(t, "-i", "lo", "-c", "2", "-T", "json")
	sendCM(t, craft.Exchange{Index: 6})
	if code := c.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, c.errAll.String())
	}
	rs := records(t, c.stdout.Bytes())
	sum := rs[len(rs)-1]
	if sum["record"] != "summary" || sum["frames"] != 2.0 || len(messages(rs)) != 2 {
		t.Errorf("summary %v, %d messages", sum, len(messages(rs)))
	}
}

// TestLiveErrors: clear one-line errors for what cannot be captured.
func TestLiveErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"dissect", "-i", "nosuch9"}, `rdmacm-pd: no interface named "nosuch9" (rdmacm-pd dissect -D lists them)` + "\n"},
		{[]string{"dissect", "-i", "lo", "-f", "udp"}, "rdmacm-pd: -f needs the libpcap build (go build -tags pcap); this pure-Go build filters with --port and --host\n"},
		{[]string{"dissect", "-i", "lo", "--port", "70000"}, "rdmacm-pd: --port: 70000 is not a TCP port\n"},
		{[]string{"dissect", "-i", "lo", "x.pcap"}, "rdmacm-pd: give capture files or -i interfaces, not both\n"},
		{[]string{"dissect", "--duration", "5s", "--no-promisc", "x.pcap"}, "rdmacm-pd: --duration and --no-promisc apply to live capture (-i IFACE)\n"},
		{[]string{"dissect", "-i", "lo", "--host", "nothost"}, `rdmacm-pd: --host: "nothost" is not an IP address` + "\n"},
		{[]string{"dissect", "-i", "lo", "-i", "lo"}, "rdmacm-pd: -i lo is given twice\n"},
		{[]string{"dissect", "-i", "lo", "-w", "-"}, "rdmacm-pd: --write: - is standard output, which carries the report; give -w a file name\n"},
	}
	// With RDMACM_BUILD_TAGS=pcap, the built binary runs: the libpcap
	// backend must give the same lines.
	pcapBuild := os.Getenv("RDMACM_BUILD_TAGS") == "pcap"
	run := func(args []string) (int, string) {
		if !pcapBuild {
			var out, errOut bytes.Buffer
			return Run(args, &IOStreams{Out: &out, ErrOut: &errOut}), errOut.String()
		}
		cmd := exec.Command(rdmacmBinary(t), args...)
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), errOut.String()
		}
		return 0, errOut.String()
	}
	for _, c := range cases {
		if (capture.Backend == "libpcap" || pcapBuild) && strings.Contains(c.want, "-f needs") {
			continue // the libpcap build takes -f (TestLivePcapFilter)
		}
		code, stderr := run(c.args)
		if code != 2 || stderr != c.want {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
	// An interface that is down.
	if os.Geteuid() == 0 {
		name := fmt.Sprintf("rdtest%d", os.Getpid()%10000)
		if err := exec.Command("ip", "link", "add", name, "type", "veth", "peer", "name", name+"p").Run(); err == nil {
			defer exec.Command("ip", "link", "del", name).Run()
			code, stderr := run([]string{"dissect", "-i", name})
			if want := fmt.Sprintf("rdmacm-pd: interface %s is down (ip link set %s up)\n", name, name); code != 2 || stderr != want {
				t.Errorf("down interface: exit %d, %q", code, stderr)
			}
		} else {
			t.Logf("no veth interface for the down case: %v", err)
		}
	}
	// Two link types cannot share a pcap file; refusing must not empty the
	// file that is there.
	if os.Geteuid() == 0 {
		name := fmt.Sprintf("rdtun%d", os.Getpid()%10000)
		if err := exec.Command("ip", "tuntap", "add", "mode", "tun", "name", name).Run(); err == nil {
			defer exec.Command("ip", "link", "del", name).Run()
			exec.Command("ip", "link", "set", name, "up").Run()
			keep := filepath.Join(t.TempDir(), "keep.pcap")
			old := []byte("an earlier capture")
			os.WriteFile(keep, old, 0o644)
			code, stderr := run([]string{"dissect", "-i", "lo", "-i", name, "-w", keep, "--duration", "1s"})
			want := fmt.Sprintf("rdmacm-pd: %s: a pcap file holds one link type; these interfaces have [1 101]: write .pcapng\n", keep)
			if got, _ := os.ReadFile(keep); code != 2 || stderr != want || !bytes.Equal(got, old) {
				t.Errorf("-w .pcap on two link types: exit %d, %q, file now %q", code, stderr, got)
			}
		} else {
			t.Logf("no tun interface for the -w case: %v", err)
		}
	}
}

// TestLivePcapFilter: the libpcap build takes a tcpdump expression with -f.
func TestLivePcapFilter(t *testing.T) {
	requireCapture(t)
	if os.Getenv("RDMACM_BUILD_TAGS") != "pcap" {
		t.Skip("the libpcap build only (RDMACM_BUILD_TAGS=pcap)")
	}
	c := startCapture(t, "-i", "lo", "-f", "udp dst port 4791", "--duration", "2s", "-T", "json")
	sendCM(t, craft.Exchange{Index: 7})
	mpaExchange(t, "127.0.0.1:0") // filtered out by the expression
	if code := c.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, c.errAll.String())
	}
	var names []string
	for _, m := range messages(records(t, c.stdout.Bytes())) {
		names = append(names, m["message"].(string))
	}
	if strings.Join(names, " ") != "REQ REP RTU" {
		t.Errorf("messages %v", names)
	}
}

// TestLiveNoPermission: without CAP_NET_RAW (as user nobody), one line that
// names the capability, and exit 2.
func TestLiveNoPermission(t *testing.T) {
	requireCapture(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux) to drop privileges")
	}
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", rdmacmBinary(t), "dissect", "-i", "lo")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v (stderr %q)", err, stderr.String())
	}
	want := "rdmacm-pd: capturing on lo needs the CAP_NET_RAW capability (root has it; or sudo setcap cap_net_raw=eip rdmacm-pd): operation not permitted\n"
	if stderr.String() != want {
		t.Errorf("stderr\n got %q\nwant %q", stderr.String(), want)
	}
}
