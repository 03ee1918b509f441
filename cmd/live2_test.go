//go:build linux

package cmd

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmacm-pd/rdmacm-pd/internal/capture"
	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
)

// udpFrame is a captured IPv4 UDP datagram on lo.
type udpFrame struct {
	sport, dport uint16
	payload      []byte
}

// udpFrames reads the IPv4 UDP datagrams of a capture file (Ethernet, as lo
// gives them), and counts every frame.
func udpFrames(t *testing.T, path string) (all int, udp []udpFrame) {
	t.Helper()
	all, udp, err := readUDP(path)
	if err != nil {
		t.Fatal(err)
	}
	return all, udp
}

// openCapture opens a capture file to read it back: a capture.Reader over
// the file, and what closes both.
func openCapture(path string) (*capture.Reader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := capture.NewReader(f, capture.ReaderOptions{})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, func() {
		r.Close()
		f.Close()
	}, nil
}

func readUDP(path string) (all int, udp []udpFrame, err error) {
	r, done, err := openCapture(path)
	if err != nil {
		return 0, nil, err
	}
	defer done()
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		all++
		d := f.Data
		if f.LinkType != 1 || len(d) < 14+20+8 || d[12] != 0x08 || d[13] != 0 || d[14+9] != 17 {
			continue
		}
		ihl := int(d[14]&0x0f) * 4
		u := d[14+ihl:]
		udp = append(udp, udpFrame{binary.BigEndian.Uint16(u[0:]), binary.BigEndian.Uint16(u[2:]), append([]byte(nil), u[8:]...)})
	}
	return all, udp, nil
}

// flood sends numbered datagrams from a socket of its own to 127.0.0.1:port
// as fast as it can until stop; it returns the source port.
func flood(t *testing.T, port int, stop <-chan struct{}, wg *sync.WaitGroup, sent *atomic.Int64) int {
	t.Helper()
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer c.Close()
		buf := make([]byte, 16)
		for i := uint64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			binary.BigEndian.PutUint64(buf, i)
			c.Write(buf)
			sent.Add(1)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestLiveStartupFiltered: frames that arrive while the capture starts are
// filtered like all others. A flood to a port that is no candidate, and one
// to a candidate port (--roce-port), run from before the capture starts:
// the -w file must hold no frame of the first, and each datagram of the
// second once (lo shows every frame twice, going out and coming in). The
// filter used to be attached only after the ring was set up.
func TestLiveStartupFiltered(t *testing.T) {
	requireCapture(t)
	other, cand := 40000+os.Getpid()%10000, 50000+os.Getpid()%10000
	dir := t.TempDir()
	for run := 0; run < 3; run++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var sent atomic.Int64
		osrc := flood(t, other, stop, &wg, &sent)
		csrc := flood(t, cand, stop, &wg, &sent)
		for sent.Load() < 1000 {
			time.Sleep(time.Millisecond)
		}
		wfile := filepath.Join(dir, fmt.Sprintf("start%d.pcapng", run))
		c := startCapture(t, "-i", "lo", "--roce-port", fmt.Sprint(cand), "--duration", "300ms", "-w", wfile, "-T", "json")
		time.Sleep(50 * time.Millisecond) // some more while capturing
		close(stop)
		wg.Wait()
		if code := c.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("exit %d: %s", code, c.errAll.String())
		}
		_, udp := udpFrames(t, wfile)
		seen := map[string]int{}
		ours := 0
		for _, u := range udp {
			if u.sport == uint16(osrc) || u.dport == uint16(other) {
				t.Fatalf("run %d: a datagram to port %d (no candidate) was captured", run, other)
			}
			if u.sport == uint16(csrc) && u.dport == uint16(cand) {
				ours++
				seen[string(u.payload)]++
			}
		}
		for p, n := range seen {
			if n != 1 {
				t.Fatalf("run %d: datagram %x captured %d times", run, p, n)
			}
		}
		t.Logf("run %d: %d candidate datagrams captured, each once", run, ours)
	}
}

// TestLiveWriteFlushed: the -w file holds the frames while the capture
// runs, without waiting for it to stop: a capture killed with SIGKILL
// leaves a readable file with them.
func TestLiveWriteFlushed(t *testing.T) {
	requireCapture(t)
	for _, name := range []string{"flushed.pcapng", "flushed.pcap"} {
		wfile := filepath.Join(t.TempDir(), name)
		c := startCapture(t, "-i", "lo", "-w", wfile)
		port := sendCMFrom(t, craft.Exchange{Initiator: craft.Peer{SendSize: 2048, ReceiveSize: 2048}, Index: 8})
		var ours int
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			ours = 0
			if _, udp, err := readUDP(wfile); err == nil {
				for _, u := range udp {
					if u.sport == uint16(port) && u.dport == 4791 {
						ours++
					}
				}
			}
			if ours == 3 {
				break
			}
		}
		c.cmd.Process.Kill()
		c.wait(t, 10*time.Second)
		if ours != 3 {
			t.Errorf("%s: %d of the 3 frames in the -w file while capturing", name, ours)
		}
		// Still a valid file after SIGKILL.
		if _, udp := udpFrames(t, wfile); len(udp) < 3 {
			t.Errorf("%s after SIGKILL: %d datagrams", name, len(udp))
		}
	}
}

// sendCMFrom is sendCM returning the source port used.
func sendCMFrom(t *testing.T, x craft.Exchange) int {
	t.Helper()
	var port int
	sendCMPort(t, x, &port)
	return port
}

// TestLiveManyHosts: the largest filter (32 IPv4 and 32 IPv6 hosts, 32 TCP
// ports, 32 RoCE ports) is attached; it used to be refused from 20 hosts.
// A REQ from 127.0.0.1, one of the hosts, passes.
func TestLiveManyHosts(t *testing.T) {
	requireCapture(t)
	wfile := filepath.Join(t.TempDir(), "hosts.pcapng")
	args := []string{"-i", "lo", "--duration", "1s", "-w", wfile}
	for i := 0; i < 31; i++ {
		args = append(args, "--host", fmt.Sprintf("10.77.%d.1", i), "--host", fmt.Sprintf("2001:db8:%x::1", i),
			"--port", fmt.Sprint(30000+i), "--roce-port", fmt.Sprint(31000+i))
	}
	args = append(args, "--host", "127.0.0.1", "--host", "fe80::77", "--port", "30099", "--roce-port", "31099")
	c := startCapture(t, args...)
	port := sendCMFrom(t, craft.Exchange{Index: 9})
	if code := c.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, c.errAll.String())
	}
	_, udp := udpFrames(t, wfile)
	n := 0
	for _, u := range udp {
		if u.sport == uint16(port) && u.dport == 4791 {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d of the 3 frames; stdout:\n%s", n, c.stdout.String())
	}
}

// TestLiveInterfaceDown: an interface that goes down mid-capture ends the
// capture with a line that says so.
func TestLiveInterfaceDown(t *testing.T) {
	requireCapture(t)
	name := fmt.Sprintf("rddown%d", os.Getpid()%10000)
	if err := exec.Command("ip", "link", "add", name, "type", "veth", "peer", "name", name+"p").Run(); err != nil {
		t.Skipf("no veth interfaces: %v", err)
	}
	defer exec.Command("ip", "link", "del", name).Run()
	if err := exec.Command("ip", "link", "set", name, "up").Run(); err != nil {
		t.Fatal(err)
	}
	c := startCapture(t, "-i", name)
	if err := exec.Command("ip", "link", "set", name, "down").Run(); err != nil {
		t.Fatal(err)
	}
	code := c.wait(t, 10*time.Second)
	if want := fmt.Sprintf("rdmacm-pd: capture on %s failed: interface %s went down\n", name, name); code == 0 || !strings.HasSuffix(c.errAll.String(), want) {
		t.Errorf("exit %d, stderr %q, want it to end with %q", code, c.errAll.String(), want)
	}
}
