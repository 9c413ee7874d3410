package rwshard

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rwshard/rwshard/internal/redact"
)

// Health is the connector's topology as a load balancer, Kubernetes or an
// operator asks for it: is there a primary to write to, how many replicas
// serve, and why a node is out. The healthz package serves it over HTTP.
type Health struct {
	// Ready: every group has a usable primary (up, writable, no split
	// brain). Reason says why not, for the first group at fault.
	Ready  bool          `json:"ready"`
	Reason string        `json:"reason,omitempty"`
	Groups []GroupHealth `json:"groups"`
}

// GroupHealth is one primary and its replicas: the connector's nodes, or
// one data source of a sharded connector.
type GroupHealth struct {
	Name            string       `json:"name,omitempty"` // the data source; "" without sharding
	Primary         string       `json:"primary"`        // the node taken as primary
	PrimaryUsable   bool         `json:"primary_usable"`
	Reason          string       `json:"reason,omitempty"` // why the primary is not usable
	ReplicasServing int          `json:"replicas_serving"` // up and not fenced
	Nodes           []NodeHealth `json:"nodes"`
}

// NodeHealth is one node's state and, when it is out of rotation or
// fenced, why.
type NodeHealth struct {
	Name       string   `json:"name"`
	Role       string   `json:"role"` // "primary" or "replica"
	Up         bool     `json:"up"`
	Fenced     bool     `json:"fenced"`
	LagSeconds *float64 `json:"lag_seconds,omitempty"` // replicas, when measured; -1 for stopped replication
	Reason     string   `json:"reason,omitempty"`
}

// Health reports the connector's topology now. It does no I/O: it reads
// what health probes last saw (with probes off, or one host, every node
// is up and the first is the primary).
func (c *Connector) Health() Health {
	h := Health{Ready: true}
	for _, cl := range c.clusters() {
		g := cl.health(c.sh != nil)
		if !g.PrimaryUsable && h.Ready {
			h.Ready = false
			h.Reason = g.Reason
			if g.Name != "" {
				h.Reason = g.Name + ": " + g.Reason
			}
		}
		h.Groups = append(h.Groups, g)
	}
	return h
}

func (cl *cluster) health(sharded bool) GroupHealth {
	prim := cl.primary()
	_, usable := cl.mon.Primary()
	g := GroupHealth{Primary: prim.name, PrimaryUsable: usable}
	if sharded {
		g.Name = strings.TrimSuffix(cl.nodes[0].name, "-primary")
	}
	for _, n := range cl.nodes {
		nh := NodeHealth{Name: n.name, Role: roleOf(n == prim), Up: n.h.Up(), Fenced: n.h.Fenced()}
		if lag, ok := n.h.Lag(); ok && n != prim {
			v := lag.Seconds()
			if lag == math.MaxInt64 {
				v = -1
			}
			nh.LagSeconds = &v
		}
		nh.Reason = cl.nodeReason(n, prim)
		if n != prim && nh.Up && !nh.Fenced {
			g.ReplicasServing++
		}
		g.Nodes = append(g.Nodes, nh)
	}
	if !usable {
		g.Reason = cl.primaryReason(prim)
	}
	return g
}

// nodeReason says why n is out of rotation or fenced; "" when it serves.
func (cl *cluster) nodeReason(n, prim *node) string {
	switch {
	case !n.h.Probed() && cl.probing:
		if err := n.h.LastError(); err != nil {
			return "never reached: " + redact.ErrorText(err.Error())
		}
		return "not probed yet"
	case !n.h.Up():
		if err := n.h.LastError(); err != nil {
			return "down: " + redact.ErrorText(err.Error())
		}
		return fmt.Sprintf("down: traffic failed %d times in a row", cl.cfg.FailAfter)
	case n.h.Fenced():
		lag, ok := n.h.Lag()
		switch {
		case ok && lag == math.MaxInt64:
			return "fenced: replication stopped"
		case ok:
			return fmt.Sprintf("fenced: lag %v over maxReplicaLag %v", lag.Round(time.Millisecond), cl.cfg.MaxReplicaLag)
		}
		return "fenced"
	case n == prim && !n.h.Writable() && cl.probing:
		return "read-only"
	}
	return ""
}

// primaryReason says why the group has no usable primary.
func (cl *cluster) primaryReason(prim *node) string {
	switch {
	case cl.mon.SplitBrain():
		return "split brain: more than one writable node, writes refused"
	case cl.starting():
		return "starting: the first probes have not answered yet"
	}
	if r := cl.nodeReason(prim, prim); r != "" {
		return "primary " + prim.name + " " + r
	}
	return "no writable primary"
}
