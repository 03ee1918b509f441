package capture

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain runs the whole suite twice: reading in the calling goroutine,
// then with read-ahead, with tiny chunks (and headroom) so that records cross
// chunk boundaries and outgrow the headroom all the time. Fuzzing and
// listing run once.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range []string{"test.fuzz", "test.list", "test.fuzzworker"} {
		if fl := flag.Lookup(f); fl != nil && fl.Value.String() != "" && fl.Value.String() != "false" {
			os.Exit(code)
		}
	}
	if code != 0 {
		os.Exit(code)
	}
	fmt.Println("again with read-ahead (chunks of 61 to 244 octets, headroom a quarter)")
	testReadahead.on, testReadahead.size = true, 61
	os.Exit(m.Run())
}
