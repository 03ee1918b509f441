package hint

// Lines asks the processor for the two cache lines from p on, to be read
// once (PREFETCHNTA), without waiting for them. Lines read once do not push
// out of the core's caches what is read again and again. A hint never
// faults, whatever the address.
//
//go:noescape
func Lines(p *byte)

// Line asks for the cache line that holds p, to be kept (PREFETCHT0): a
// flow table's slot or entry that the next segments will read and may
// write.
//
//go:noescape
func Line(p *byte)
