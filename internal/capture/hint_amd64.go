package capture

// hintOnce asks the processor for the two cache lines from p on, to be
// read once (PREFETCHNTA), without waiting for them. The parser of a mapped
// file calls it for the next record as it hands one out: by the time it
// reads that record's header and its frame's first octets they are on
// their way, and lines read once do not push out of the core's caches what
// is read again and again (the flow table of a capture of many TCP flows:
// docs/performance.md). A hint never faults, whatever the address.
//
//go:noescape
func hintOnce(p *byte)
