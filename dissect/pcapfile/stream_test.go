package pcapfile

import (
	"io"
	"testing"
	"time"
)

// TestStreamReadahead: with Stream, read-ahead hands on each record as soon
// as it is written to a pipe that stays open, instead of waiting for a full
// chunk.
func TestStreamReadahead(t *testing.T) {
	pr, pw := io.Pipe()
	file := newPcap(false, false, 65535, 1)
	head := len(file.b)
	file.rec(1, 0, payload(100, 1), 0).rec(2, 0, payload(200, 2), 0)
	go pw.Write(file.b[:head]) // the file header alone
	rd, err := NewReader(pr, Options{Readahead: true, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	defer pw.Close() // first: the read-ahead waits in a read
	got := make(chan int)
	go func() {
		defer close(got)
		for {
			f, err := rd.Next()
			if err != nil {
				return
			}
			got <- len(f.Data)
		}
	}()
	for i, r := range [][]byte{file.b[head : head+16+100], file.b[head+16+100:]} {
		go pw.Write(r) // one record at a time, the pipe staying open
		select {
		case n := <-got:
			if n != 100*(i+1) {
				t.Errorf("record %d: %d octets", i+1, n)
			}
		case <-time.After(time.Second):
			t.Fatalf("record %d waited for more data", i+1)
		}
	}
}
