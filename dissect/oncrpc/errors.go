package oncrpc

// Error is what the decoders return: one of the values below, never a
// value made per message. Compare with errors.Is, or ask Truncated.
type Error struct {
	text      string
	truncated bool
}

func (e *Error) Error() string { return e.text }

// Truncated reports whether the octets ran out before the layout did. The
// capture's snap length, or a data path that keeps only the first octets
// of a Send, cut a message short; so does a sender that lies about a
// length. It cannot be told which.
func (e *Error) Truncated() bool { return e.truncated }

// The errors. ErrTruncated is the only one with Truncated() true; the
// others say a value no RFC allows was found.
var (
	ErrTruncated = &Error{"oncrpc: message truncated", true}

	ErrMsgType    = &Error{"oncrpc: msg_type is neither CALL (0) nor REPLY (1)", false}
	ErrNotCall    = &Error{"oncrpc: a REPLY where a CALL was expected", false}
	ErrNotReply   = &Error{"oncrpc: a CALL where a REPLY was expected", false}
	ErrRPCVersion = &Error{"oncrpc: rpcvers is not 2", false}
	ErrAuthLength = &Error{"oncrpc: opaque_auth body longer than 400 octets", false}
	ErrGSSCred    = &Error{"oncrpc: RPCSEC_GSS credential shorter than its fields", false}
	ErrGSSVersion = &Error{"oncrpc: RPCSEC_GSS credential version is not 1", false}
	ErrGSSService = &Error{"oncrpc: RPCSEC_GSS service is not none (1), integrity (2) or privacy (3)", false}
	ErrReplyStat  = &Error{"oncrpc: reply_stat is neither MSG_ACCEPTED (0) nor MSG_DENIED (1)", false}
	ErrAcceptStat = &Error{"oncrpc: accept_stat is not one of SUCCESS to SYSTEM_ERR (0 to 5)", false}
	ErrRejectStat = &Error{"oncrpc: reject_stat is neither RPC_MISMATCH (0) nor AUTH_ERROR (1)", false}
	ErrBody       = &Error{"oncrpc: arguments or results longer than the RPCSEC_GSS body around them", false}
)
