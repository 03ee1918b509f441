package pcapfile

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the whole suite twice: reading in the calling goroutine,
// then with read-ahead, with tiny chunks (and headroom) so that records cross
// chunk boundaries and outgrow the headroom all the time.
func TestMain(m *testing.M) {
	code := m.Run()
	if code != 0 {
		os.Exit(code)
	}
	fmt.Println("again with read-ahead (chunks of 61 to 244 octets, headroom a quarter)")
	testReadahead.on, testReadahead.size = true, 61
	os.Exit(m.Run())
}
