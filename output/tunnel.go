package output

import (
	"fmt"
	"strings"

	"github.com/rdmacm-pd/rdmacm-pd/dissect/record"
)

// appendTunnel writes the "tunnel" key of a message: its encapsulations,
// outermost first, each an object with "type", its fields, and "labels" and
// "vlans" where it has them. Nothing when the frame was not encapsulated.
func appendTunnel(j *jw, t []record.Encapsulation) {
	if len(t) == 0 {
		return
	}
	j.key("tunnel")
	j.arr()
	for _, e := range t {
		j.obj()
		j.kstr("type", e.Type)
		for _, f := range e.Fields {
			j.key(f.Key)
			fieldValue(j, f)
		}
		if e.Labels != nil {
			j.key("labels")
			j.arr()
			for _, l := range e.Labels {
				j.obj()
				j.kuint("label", uint64(l.Label))
				j.kuint("tc", uint64(l.TC))
				j.kuint("ttl", uint64(l.TTL))
				j.end()
			}
			j.end()
		}
		if e.VLANs != nil {
			j.key("vlans")
			j.arr()
			for _, v := range e.VLANs {
				j.uint(uint64(v))
			}
			j.end()
		}
		j.end()
	}
	j.end()
}

// tunnelTree writes each encapsulation as a layer of the -V tree, before
// the layers it carried.
func (r *textRenderer) tunnelTree(t []record.Encapsulation) {
	for _, e := range t {
		r.layer(e.Name, e.Fields)
		if len(e.Fields) == 0 {
			fmt.Fprintf(r.w, "%s%s\n", indent, r.p.bold.Sprint(e.Name))
		}
		for _, l := range e.Labels {
			r.field("Label", fmt.Sprintf("%d (TC %d, TTL %d)", l.Label, l.TC, l.TTL))
		}
		if len(e.VLANs) > 0 {
			ids := make([]string, len(e.VLANs))
			for i, v := range e.VLANs {
				ids[i] = fmt.Sprint(v)
			}
			r.field("Carried VLAN IDs", strings.Join(ids, ", "))
		}
	}
}
