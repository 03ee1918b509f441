package record

// Sink receives the records of a run, in order: the messages as they are
// decoded, the "rpc" records of the data path among them in capture order,
// the connection attempts (at the end of their input, or as soon as their
// state is known in live mode), the updates of connection records handed
// on before their traffic ended, and last the summary. It is declared here,
// beside the records it carries, so that whoever renders them (package
// output) needs the records and nothing of the pipeline that makes them.
//
// A record is the sink's once handed on, except a Message: its maker may
// reuse it after the call, so a sink that keeps a message keeps its Clone.
type Sink interface {
	Message(*Message) error
	RPC(*RPC) error
	Connection(*Connection) error
	// Update follows a Connection handed on before its traffic ended
	// (a state limit, live capture): what the data path saw after it.
	Update(*ConnectionUpdate) error
	Summary(*Summary) error
}

// NopSink ignores everything; embed it to take only some of the records.
type NopSink struct{}

func (NopSink) Message(*Message) error         { return nil }
func (NopSink) RPC(*RPC) error                 { return nil }
func (NopSink) Connection(*Connection) error   { return nil }
func (NopSink) Update(*ConnectionUpdate) error { return nil }
func (NopSink) Summary(*Summary) error         { return nil }
