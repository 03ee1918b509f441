// Package hint asks the processor for memory the program will read soon,
// without waiting for it: the next records of a mapped capture file
// (internal/capture), the flow table's lines for a segment a few records
// ahead (dissect/reassembly). A hint changes no value and never faults;
// on an architecture without one it does nothing.
package hint
