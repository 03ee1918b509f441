//go:build linux

package cmd

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/afpacket"

	"github.com/rdmacm-pd/rdmacm-pd/internal/craft"
	"github.com/rdmacm-pd/rdmacm-pd/layers"
)

// TestLiveNetns captures on one end of a veth pair while a process in another
// network namespace sends, over a VLAN (ID 100) on top of the pair: a RoCEv2
// CM exchange and an MPA exchange with a server here. The frames are tagged
// on the wire; AF_PACKET hands them over untagged (VLAN offload), and the
// capture must put the tags back, so that the -w file holds them too.
func TestLiveNetns(t *testing.T) {
	requireCapture(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2)")
	}
	ns := fmt.Sprintf("rdmacm%d", os.Getpid()%100000)
	va, vb := ns+"a", ns+"b"
	run := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("netns", "add", ns); err != nil {
		t.Skipf("network namespaces not available: %v", err)
	}
	defer run("netns", "del", ns)
	defer run("link", "del", va)
	for _, args := range [][]string{
		{"link", "add", va, "type", "veth", "peer", "name", vb},
		{"link", "set", vb, "netns", ns},
		{"link", "set", va, "up"},
		{"-n", ns, "link", "set", vb, "up"},
		{"-n", ns, "link", "set", "lo", "up"},
	} {
		if err := run(args...); err != nil {
			t.Skipf("cannot set up the veth pair: %v", err)
		}
	}
	// The traffic goes over VLAN 100 when the kernel has 802.1Q interfaces;
	// otherwise over the pair itself, and the helper injects one tagged frame.
	vlan := run("link", "add", "link", va, "name", va+".100", "type", "vlan", "id", "100") == nil &&
		run("-n", ns, "link", "add", "link", vb, "name", vb+".100", "type", "vlan", "id", "100") == nil
	da, db := va, vb
	if vlan {
		da, db = va+".100", vb+".100"
		run("link", "set", da, "up")
		run("-n", ns, "link", "set", db, "up")
	}
	if err := run("addr", "add", "10.231.0.1/24", "dev", da); err != nil {
		t.Fatal(err)
	}
	if err := run("-n", ns, "addr", "add", "10.231.0.2/24", "dev", db); err != nil {
		t.Fatal(err)
	}
	t.Logf("VLAN interfaces: %v", vlan)
	ln, err := net.Listen("tcp", "10.231.0.1:20049")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 32)
			if n, _ := c.Read(buf); n > 0 {
				c.Write((&craft.MPA{Rev: 1, Data: []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0, 7, 7}}).Bytes())
			}
			time.Sleep(100 * time.Millisecond)
			c.Close()
		}
	}()

	wfile := t.TempDir() + "/veth.pcapng"
	c := startCapture(t, "-i", va, "--duration", "4s", "-w", wfile)
	helper := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestNetnsHelper$")
	helper.Env = append(os.Environ(), "RDMACM_NETNS_HELPER=1", "RDMACM_NETNS_INJECT="+map[bool]string{false: vb}[vlan])
	if out, err := helper.CombinedOutput(); err != nil {
		t.Fatalf("helper in %s: %v\n%s", ns, err, out)
	}
	// The responder's REP, from this side.
	sendFrom(t, netip.MustParseAddr("10.231.0.1"), netip.MustParseAddr("10.231.0.2"), netnsExchange, 1)
	if code := c.wait(t, 15*time.Second); code != 0 {
		t.Fatalf("exit %d: %s", code, c.errAll.String())
	}
	out := c.stdout.String()
	for _, want := range []string{"rocev2 REQ      10.231.0.2 → 10.231.0.1\n       R=1 send=8192 recv=8192\n",
		"rocev2 RTU      10.231.0.2 → 10.231.0.1", "rocev2 REP      10.231.0.1 → 10.231.0.2\n       R=0 send=4096 recv=4096\n",
		"\n       R=0 send=4096 recv=4096  (MPA rev 1)\n", "\n       R=0 send=8192 recv=8192  (MPA rev 1)\n",
		"connection 10.231.0.2 → 10.231.0.1 established: ini→res 4096, res→ini 4096"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !vlan && !strings.Contains(out, "rocev2 REQ      192.0.2.9 → 192.0.2.10\n       R=0 send=2048") {
		t.Errorf("the injected VLAN-tagged REQ is missing:\n%s", out)
	}
	// The captured frames carry their 802.1Q tag with VLAN ID 100: all of
	// them over VLAN interfaces (the tags AF_PACKET took off are put back),
	// else the injected one.
	r, done, err := openCapture(wfile)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	n, tagged := 0, 0
	for {
		f, err := r.Next()
		if err != nil {
			break
		}
		n++
		if len(f.Data) >= 16 && bytes.Equal(f.Data[12:14], []byte{0x81, 0x00}) && f.Data[14]&0x0f == 0 && f.Data[15] == 100 {
			tagged++
		}
	}
	if n < 5 || (vlan && tagged != n) || (!vlan && tagged != 1) {
		t.Errorf("%d frames in the -w file, %d with a VLAN 100 tag", n, tagged)
	}
}

// sendFrom sends the given frames of a RoCEv2 exchange between a (here) and
// b as UDP datagrams from a to b's port 4791. craft builds the ICRC over the
// addresses and ports the kernel will use.
func sendFrom(t *testing.T, a, b netip.Addr, x craft.Exchange, which ...int) {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: a.AsSlice()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := pmtuDiscoverDo(conn); err != nil {
		t.Fatal(err)
	}
	port := uint16(conn.LocalAddr().(*net.UDPAddr).Port)
	ea := craft.Endpoint{IP: a, MAC: net.HardwareAddr{0, 0, 0, 0, 0, 1}, Port: port, LID: 1}
	eb := craft.Endpoint{IP: b, MAC: net.HardwareAddr{0, 0, 0, 0, 0, 2}, Port: port, LID: 2}
	x.Transport = craft.RoCEv2
	// The initiator is 10.231.0.2, in the other namespace.
	if a == netip.MustParseAddr("10.231.0.2") {
		x.Initiator2, x.Responder2 = &ea, &eb
	} else {
		x.Initiator2, x.Responder2 = &eb, &ea
	}
	frames, err := x.Frames()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range which {
		if _, err := conn.WriteToUDP(frames[i].Data[14+20+8:], &net.UDPAddr{IP: b.AsSlice(), Port: 4791}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var netnsExchange = craft.Exchange{Initiator: craft.Peer{SendSize: 8192, ReceiveSize: 8192, RemoteInvalidate: true},
	Responder: craft.Peer{SendSize: 4096, ReceiveSize: 4096}}

// TestNetnsHelper runs inside the other namespace (started by
// TestLiveNetns): it sends the initiator's REQ and RTU, and runs an MPA
// exchange with the server there.
func TestNetnsHelper(t *testing.T) {
	if os.Getenv("RDMACM_NETNS_HELPER") == "" {
		t.Skip("helper process of TestLiveNetns")
	}
	sendFrom(t, netip.MustParseAddr("10.231.0.2"), netip.MustParseAddr("10.231.0.1"), netnsExchange, 0, 2)
	if dev := os.Getenv("RDMACM_NETNS_INJECT"); dev != "" {
		// No VLAN interfaces here: write one tagged REQ onto the wire.
		a, b := craft.Endpoints(4, false)
		cm := craft.CM{Transport: craft.RoCEv2, Src: a, Dst: b, VLAN: 100, TID: 9}
		req := &layers.CMReq{LocalCommID: 0x0a000005, ServiceID: craft.NFSServiceID, PartitionKey: 0xffff}
		req.PrivateData = append(craft.IPCMHeader(a, b, 1), 0xf6, 0xab, 0x0e, 0x18, 1, 0, 1, 1)
		cm.Msg = req
		data, _, err := cm.Frame()
		if err != nil {
			t.Fatal(err)
		}
		h, err := afpacket.NewTPacket(afpacket.OptInterface(dev))
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		if err := h.WritePacketData(data); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.Dial("tcp", "10.231.0.1:20049")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write((&craft.MPA{Request: true, Rev: 1, Data: []byte{0xf6, 0xab, 0x0e, 0x18, 1, 0, 3, 3}}).Bytes()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 28)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(buf); err != nil {
		t.Fatal(err)
	}
}
