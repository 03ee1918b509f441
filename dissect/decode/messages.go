package decode

import "github.com/rdmacm-pd/rdmacm-pd/dissect/record"

// msgStore makes the CM messages: each a new one, or, when the sink reads
// each message during the call only (Config.ReuseMessages), the same
// message and the values it points to, built again for every frame, so
// that a CM frame costs no allocation once the buffers are grown. What
// the tracker keeps of a message it copies; the MPA framer's messages are
// always new.
type msgStore struct {
	reuse bool
	m     record.Message
	ib    record.IBHeaders
	crcs  [2]record.CRCCheck
	cm    record.CMInfo
	rpc   record.RPCRDMA
	pd    []byte
	oct   []byte
	arib  []byte
}

// next is an empty message to build.
func (s *msgStore) next() *record.Message {
	if !s.reuse {
		return &record.Message{}
	}
	fs := s.m.Findings[:0]
	clear(fs[:cap(fs)]) // the findings' strings are the run's, once handed on
	s.m = record.Message{Findings: fs}
	return &s.m
}

// ibHeaders is an empty IBHeaders for the message.
func (s *msgStore) ibHeaders() *record.IBHeaders {
	if !s.reuse {
		return &record.IBHeaders{}
	}
	s.ib = record.IBHeaders{}
	return &s.ib
}

// crc is c, the ICRC (i 0) or the VCRC (1), for the message.
func (s *msgStore) crc(i int, c record.CRCCheck) *record.CRCCheck {
	v := &s.crcs[i]
	if !s.reuse {
		v = new(record.CRCCheck)
	}
	*v = c
	return v
}

// cmInfo is c for the message.
func (s *msgStore) cmInfo(c record.CMInfo) *record.CMInfo {
	v := &s.cm
	if !s.reuse {
		v = new(record.CMInfo)
	}
	*v = c
	return v
}

// rpcrdma is where the RFC 8797 step writes the message's usable RFC 8797
// message; nil: a new one.
func (s *msgStore) rpcrdma() *record.RPCRDMA {
	if !s.reuse {
		return nil
	}
	return &s.rpc
}

// privateData, octets and ari are copies of b for the message (nil when b
// is empty).
func (s *msgStore) privateData(b []byte) []byte { return s.copy(&s.pd, b) }
func (s *msgStore) octets(b []byte) []byte      { return s.copy(&s.oct, b) }
func (s *msgStore) ari(b []byte) []byte         { return s.copy(&s.arib, b) }

func (s *msgStore) copy(buf *[]byte, b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if !s.reuse {
		return append([]byte(nil), b...)
	}
	*buf = append((*buf)[:0], b...)
	return *buf
}
