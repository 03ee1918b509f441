package output

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/finding"
	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// WriteDecode renders the result of checking a private-data blob on its own
// (rdmacm-pd decode): the RFC 8797 message and the findings.
func WriteDecode(w io.Writer, opts Options, pd []byte, rp *record.RPCRDMA, fs []finding.Finding) error {
	bw := bufio.NewWriter(w)
	if opts.Format == JSON {
		var j jw
		j.obj()
		j.key("private_data")
		j.obj()
		j.kint("length", int64(len(pd)))
		j.kstr("hex", hex.EncodeToString(pd))
		j.end()
		j.key("rpcrdma")
		appendRPCRDMA(&j, rp)
		j.key("warnings")
		appendFindings(&j, fs)
		j.end()
		j.b = append(j.b, '\n')
		bw.Write(j.b)
		return bw.Flush()
	}
	r := newText(bw, opts)
	fmt.Fprintf(bw, "%s: %s\n", count(len(pd), "octet"), r.rpcSummary(rp))
	r.findings(fs)
	r.rpcTree(rp)
	r.hexDump(pd, rp, false)
	return bw.Flush()
}
