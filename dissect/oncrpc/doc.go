/*
Package oncrpc decodes the ONC RPC message (RFC 5531) that an
RPC-over-RDMA Send carries after its transport header. It reads the
message in place and allocates nothing.

A Call gives its XID, program, version and procedure, its credential's
flavor and, for RPCSEC_GSS (RFC 2203), the gss_proc, the sequence number
and the service. A Reply gives its reply_stat, accept_stat or reject_stat,
the auth_stat of an AUTH_ERROR and the versions of a mismatch. A Reply
does not name its procedure, so DecodeReply takes a CallInfo: what the
Call with the same XID said, kept by the caller.

Past the header the package reads little. An NFS (versions 2 and 3),
NFSACL, MOUNT MNT or NLM Reply gives the status its results start with.
An NFSv4 COMPOUND (RFC 7530, 8881, 7862) gives its minor version and the
list of its operations; its Reply gives the COMPOUND status and the
operations up to the first that failed, with that one's status. The same
holds for the callback program's CB_COMPOUND, whose program number the
caller gives (CallOptions). With RPCSEC_GSS integrity the arguments and
results are read inside their wrapping; with privacy they are encrypted,
and only that is said (Message.Encrypted).

To reach an operation, the ones before it must be skipped, so every
operation of NFSv4.0, 4.1 and 4.2, and every callback operation, has its
layout written out here. The list ends, and says why, at an opcode with no
known layout, at a value no layout allows, where the octets run out, or
after MaxOps operations (Message.OpsEnd).

What it never keeps: arguments and results are skipped, never stored or
copied. No file handle, name, attribute, credential body or data octet
leaves the decoder; a Message holds numbers only.

Names are constants, spelled as the RFCs spell them: ProgramName,
ProcedureName, OpName, CBOpName, NFS3StatusName, NFS4StatusName and the
others return "" for a number they do not know.

Errors are the package's Error values. ErrTruncated means the octets ran
out (a snap length, or a data path that kept only the first octets of a
Send); the others mean a value the RFCs do not allow.
*/
package oncrpc
