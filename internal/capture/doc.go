// Package capture is where the dissector's frames come from: the sources
// the run loop (package dissect) reads, and the one Frame type they hand
// out, which the run loop and the decoder read as it was filled in.
//
//   - Reader reads packet capture files quickly and safely (the sections
//     below). File is the Source of one capture file, standard input or a
//     FIFO: it opens and hashes the file, reads it ahead or through a memory
//     mapping, and turns a mapping that faults into the file's error
//     (CatchFaults).
//   - Live is the Source of a live capture on one or more interfaces, read
//     together: AF_PACKET in pure Go on Linux, or libpcap in a build with
//     the "pcap" tag, each with a kernel filter (Filter) that lets through
//     only the candidates for RDMA connection setup. LiveFile is the -w file
//     it writes as it goes.
//   - Excerpt writes the frames that carried chosen messages to a capture
//     file (-w with file input).
//
// It is internal: package dissect keeps the names its API had for them
// (dissect.Frame, dissect.Source, dissect.File...) as aliases, and cmd
// opens live captures and excerpts with it directly.
//
// # Formats
//
// The format is recognised by content, never by file name:
//
//   - pcap (libpcap), microsecond (magic a1b2c3d4) or nanosecond (a1b23c4d)
//     timestamps, either byte order, version 2.x;
//   - pcapng version 1.x: Section Header, Interface Description, Enhanced
//     Packet, Simple Packet and the obsolete Packet Block are decoded; every
//     other block (statistics, name resolution, secrets, custom, unknown) is
//     skipped. Sections may switch byte order; interfaces are numbered across
//     the whole file, so a second section's first interface continues where
//     the first section stopped. Timestamps honour if_tsresol (10^-n or 2^-n,
//     default 10^-6) and if_tsoffset. Simple Packet Blocks carry no
//     timestamp: their frames have a zero Time;
//   - either of the above compressed with gzip (several members, a header
//     name and comment of any length, zero padding after the last member; a
//     gzip stream inside the gzip stream is not unpacked; inflate by
//     klauspost/compress), Zstandard (klauspost/compress/zstd, window at
//     most 128 MiB) or LZ4 (pierrec/lz4/v4: frames, and the legacy format).
//
// A record whose captured length exceeds the snap length or its original
// length is returned as captured, with Frame.Issue saying so, and reading
// goes on: its extent in the file is known. A captured length that runs
// beyond the end of the input is damage.
//
// # Limits
//
// Memory stays bounded on any input. The captured length of one record is
// capped by ReaderOptions.MaxRecord (default 256 KiB, raised to the file's snap
// length when that is larger, never above 16 MiB; for pcapng, the largest
// interface snap length met so far); a pcapng block may not be
// longer than 16 MiB + 64 KiB. The read buffer starts at 1 MiB and grows, by
// doubling and only while it is full of real data, when a single record needs
// more room, so a false length in a short file costs little. A section may
// describe at most 65536 interfaces. Option contents never cause an error:
// garbled options are ignored from the first one out of bounds. A source
// that keeps returning no data without an error ends in io.ErrNoProgress.
//
// # Zero copy
//
// Reader.Next returns a pointer to a Frame owned by the Reader, and Frame.Data
// points into the Reader's buffer. Both are valid only until the next call to
// Next (or Close); copy what must be kept. Data's capacity is its length, so
// appending to it never writes into the buffer. The source is read in large
// chunks straight into that buffer and the octets are not copied again; in
// steady state Next allocates nothing.
//
// # Errors
//
// Problems with the file are reported as *Error, carrying the offset (in the
// decompressed stream) and the frame number concerned. Frames decoded before
// the damage are returned first; the error comes from the Next call that
// reaches the damaged record, and every later call returns it again. Use
// errors.Is with ErrEmpty, ErrNotCapture, ErrTruncated, ErrTooLarge,
// ErrMalformed or ErrGzip (any corrupt compressed stream) to classify an
// error.
package capture
