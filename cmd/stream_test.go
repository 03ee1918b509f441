package cmd

import (
	"bufio"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// pcapRecords splits a little-endian pcap file into its file header and
// its records.
func pcapRecords(t *testing.T, name string) (header []byte, records [][]byte) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	header, b = b[:24], b[24:]
	for len(b) >= 16 {
		n := 16 + int(binary.LittleEndian.Uint32(b[8:]))
		records, b = append(records, b[:n]), b[n:]
	}
	return header, records
}

// TestStreamAsItArrives: frames written to standard input or to a FIFO
// are printed as they arrive, each within a second, while the writer keeps
// the input open; SIGTERM while the input is idle ends the run at once,
// after the totals of what was decoded, with exit 0 (as for live capture).
func TestStreamAsItArrives(t *testing.T) {
	header, records := pcapRecords(t, "../pcaps/rocev2-nfs.pcap") // REQ, REP, RTU
	bin := rdmacmBinary(t)
	for _, input := range []string{"stdin", "fifo"} {
		t.Run(input, func(t *testing.T) {
			var cmd *exec.Cmd
			var w io.WriteCloser
			var opened chan io.WriteCloser
			if input == "stdin" {
				cmd = exec.Command(bin, "dissect", "--color", "never", "-")
				var err error
				if w, err = cmd.StdinPipe(); err != nil {
					t.Fatal(err)
				}
			} else {
				fifo := filepath.Join(t.TempDir(), "capture.fifo")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				cmd = exec.Command(bin, "dissect", "--color", "never", fifo)
				opened = make(chan io.WriteCloser, 1)
				go func() { // opening blocks until the reader opens it too
					f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
					if err != nil {
						t.Error(err)
						close(opened)
						return
					}
					opened <- f
				}()
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			if opened != nil {
				if w = <-opened; w == nil {
					t.Fatal("the FIFO was not opened")
				}
			}
			defer w.Close()
			lines := make(chan string, 100)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			// waitFor reads lines until one contains want, for at most d.
			waitFor := func(want string, d time.Duration) bool {
				deadline := time.After(d)
				for {
					select {
					case l, ok := <-lines:
						if !ok {
							return false
						}
						if strings.Contains(l, want) {
							return true
						}
					case <-deadline:
						return false
					}
				}
			}
			if _, err := w.Write(header); err != nil {
				t.Fatal(err)
			}
			for i, want := range []string{"rocev2 REQ", "rocev2 REP", "rocev2 RTU"} {
				if i > 0 {
					time.Sleep(50 * time.Millisecond) // the input stays open, idle
				}
				if _, err := w.Write(records[i]); err != nil {
					t.Fatal(err)
				}
				if !waitFor(want, time.Second) {
					t.Fatalf("frame %d (%s) not printed within a second of being written", i+1, want)
				}
			}
			// The input is idle and open: SIGTERM ends the run.
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if !waitFor("3 frames, 3 messages, 1 connection", 5*time.Second) {
				t.Error("no totals after SIGTERM")
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
					t.Errorf("after SIGTERM: exit %d (%v), want %d (the input was cut short)", code, err, ExitInterrupted)
				}
			case <-time.After(5 * time.Second):
				t.Error("SIGTERM did not end a run reading an idle input")
			}
		})
	}
}

// TestStdinRegularFile: standard input redirected from a regular file is
// read as a file is (not as a stream), to its end.
func TestStdinRegularFile(t *testing.T) {
	f, err := os.Open("../pcaps/rocev2-nfs.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(rdmacmBinary(t), "dissect", "-q", "--color", "never", "-")
	cmd.Stdin = f
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "3 frames, 3 messages, 1 connection (1 established)") {
		t.Errorf("%v\n%s", err, out)
	}
}

// TestSignalWhileFIFOHasNoWriter: opening a FIFO waits for its writer;
// SIGTERM ends that wait too: nothing was read, and the run says its
// results are partial (exit 130).
func TestSignalWhileFIFOHasNoWriter(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "nobody.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	cmd := exec.Command(rdmacmBinary(t), "dissect", "--color", "never", fifo)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let it reach the open
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
			t.Errorf("exit %d (%v), want %d", code, err, ExitInterrupted)
		}
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		// Let the blocked open return, so that the process can end.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Error("SIGTERM did not end a run waiting for a FIFO's writer")
	}
}

// TestInterruptFIFO: Ctrl-C while a FIFO is being read: everything decoded
// is written, the summary says "interrupted at frame N: the results are
// partial" (run-interrupted, in every format), unfinished attempts are cut,
// and the exit is 130.
func TestInterruptFIFO(t *testing.T) {
	capture, err := os.ReadFile("../pcaps/rocev2-nfs.pcap")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "text", "markdown", "text -w"} {
		fifo := filepath.Join(t.TempDir(), "capture.fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		args := []string{"dissect", "-T", format, "--color", "never", fifo}
		written := filepath.Join(t.TempDir(), "o.pcap")
		if format == "text -w" { // -w's second pass reads what the first kept of the FIFO
			format = "text"
			args = []string{"dissect", "-w", written, "--color", "never", fifo}
		}
		cmd := exec.Command(rdmacmBinary(t), args...)
		var errOut strings.Builder
		cmd.Stderr = &errOut
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The file header and the first frame (a REQ), the FIFO kept open.
		first := 24 + 16 + int(binary.LittleEndian.Uint32(capture[24+8:]))
		w.Write(capture[:first])
		rd := bufio.NewReader(stdout)
		var out strings.Builder
		if format != "markdown" { // the report is written at the end only
			for {
				line, err := rd.ReadString('\n')
				out.WriteString(line)
				if err != nil || strings.Contains(line, "REQ") {
					break
				}
			}
		} else {
			time.Sleep(300 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGINT)
		rest, _ := io.ReadAll(rd)
		out.Write(rest)
		cmd.Wait()
		w.Close()
		got := out.String()
		if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
			t.Errorf("%s: exit %d, want %d", format, code, ExitInterrupted)
		}
		if !strings.Contains(got, "run-interrupted") || !strings.Contains(got, "interrupted at frame 1: the results are partial") {
			t.Errorf("%s: no note of the interruption:\n%s", format, got)
		}
		if format == "json" && !strings.Contains(got, `"state":"cut"`) {
			t.Errorf("json: the REQ's attempt is not cut:\n%s", got)
		}
		if args[1] == "-w" {
			if errOut.String() != "rdmacm-pd: wrote 1 frame (of 1 message and 1 connection) to "+written+"\n" {
				t.Errorf("-w: stderr %q", errOut.String())
			}
			if b, err := os.ReadFile(written); err != nil || len(b) != first {
				t.Errorf("-w: %d octets (%v), want the header and the REQ, %d", len(b), err, first)
			}
		}
	}
}

// TestTerminalWidth: on a terminal of 60 columns (a pseudo-terminal, by
// script), the text follows the terminal's width: no line of any shipped
// sample is longer, tables included; --width still wins.
func TestTerminalWidth(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) for a pseudo-terminal")
	}
	bin := rdmacmBinary(t)
	samples, err := filepath.Glob("../pcaps/*.pcap*")
	if err != nil || len(samples) == 0 {
		t.Fatalf("samples: %v", err)
	}
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
	longest := func(args string) (int, string) {
		out, err := exec.Command("script", "-qec", "stty cols 60; "+bin+" "+args, "/dev/null").Output()
		if err != nil {
			t.Fatalf("script: %v", err)
		}
		n, line := 0, ""
		for _, l := range strings.Split(string(out), "\n") {
			l = ansi.ReplaceAllString(strings.TrimRight(l, "\r"), "")
			if w := utf8.RuneCountInString(l); w > n {
				n, line = w, l
			}
		}
		return n, line
	}
	for _, f := range samples {
		if n, line := longest("dissect --datapath all " + f); n > 60 {
			t.Errorf("%s: a line of %d columns on a terminal of 60: %q", f, n, line)
		}
	}
	if n, _ := longest("dissect --width 100 ../pcaps/iwarp-split-ipv6.pcapng"); n <= 60 {
		t.Errorf("--width 100 on a terminal of 60: no line is longer than 60")
	}
}

// TestProgress: under a pseudo-terminal, --progress always draws its line
// on standard error and clears it at the end; in a pipe it draws nothing,
// and auto draws nothing on a run shorter than a second.
func TestProgress(t *testing.T) {
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) for a pseudo-terminal")
	}
	bin := rdmacmBinary(t)
	tty := func(args string) string {
		out, err := exec.Command("script", "-qec", bin+" "+args+" >/dev/null", "/dev/null").Output()
		if err != nil {
			t.Fatalf("script: %v", err)
		}
		return string(out)
	}
	got := tty("dissect -q --progress always ../pcaps/rocev2-nfs.pcap")
	if !regexp.MustCompile(`^\r\x1b\[K[0-9.]+ [KMG]?i?B of 1\.0 KiB \([0-9]+%\), [^\r]* frames?, \d+ connections, \d+ findings\r\x1b\[K$`).MatchString(got) {
		t.Errorf("always, on a terminal: %q", got)
	}
	if got := tty("dissect -q ../pcaps/rocev2-nfs.pcap"); got != "" {
		t.Errorf("auto on a short run: %q", got)
	}
	cmd := exec.Command(bin, "dissect", "-q", "--progress", "always", "../pcaps/rocev2-nfs.pcap")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil || errOut.String() != "" {
		t.Errorf("always, in a pipe: %v, %q", err, errOut.String())
	}
}
