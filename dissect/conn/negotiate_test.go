package conn

import (
	"testing"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

func TestNegotiate(t *testing.T) {
	r := func(s, v int, inv bool) *record.RPCRDMA {
		return &record.RPCRDMA{SendSize: s, ReceiveSize: v, RemoteInvalidate: inv}
	}
	cases := []struct {
		ini, res *record.RPCRDMA
		want     record.InlineThresholds
		inv      bool
	}{
		{nil, nil, record.InlineThresholds{InitiatorToResponder: 1024, ResponderToInitiator: 1024}, false},
		{r(4096, 4096, true), nil, record.InlineThresholds{InitiatorToResponder: 1024, ResponderToInitiator: 1024}, false},
		{r(4096, 8192, true), r(16384, 2048, true), record.InlineThresholds{InitiatorToResponder: 2048, ResponderToInitiator: 8192}, true},
		{r(262144, 262144, false), r(262144, 262144, true), record.InlineThresholds{InitiatorToResponder: 262144, ResponderToInitiator: 262144}, false},
	}
	for i, c := range cases {
		got, inv := Negotiate(c.ini, c.res)
		if got != c.want || inv != c.inv {
			t.Errorf("case %d: %+v %v", i, got, inv)
		}
	}
}
