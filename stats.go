package rwshard

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// NodeStats is one node as the router sees it now.
type NodeStats struct {
	Name     string
	Primary  bool // the node currently taken as primary
	Up       bool // in rotation: probes answer, traffic does not fail
	Fenced   bool // a replica over the lag limit or with replication stopped
	Lag      time.Duration
	LagKnown bool
	InFlight int64
	Latency  time.Duration // EWMA of statement latency
}

// Stats is a snapshot of the cluster.
type Stats struct {
	Nodes []NodeStats
	// Retries made and refused by the retry budget.
	Retries, RetriesRefused uint64
}

// Stats returns a snapshot of the connector's nodes.
func (c *Connector) Stats() Stats {
	cl := c.cl
	prim := cl.primary()
	var s Stats
	for _, n := range cl.nodes {
		lag, known := n.h.Lag()
		s.Nodes = append(s.Nodes, NodeStats{
			Name: n.name, Primary: n == prim, Up: n.h.Up(), Fenced: n.h.Fenced(),
			Lag: lag, LagKnown: known, InFlight: n.inFlight.Load(), Latency: n.latency.Value(),
		})
	}
	s.Retries, s.RetriesRefused = cl.budget.Counts()
	return s
}

// ConnectorOf returns the rwshard Connector behind db, which may come from
// sql.Open("rwshard", …), sql.OpenDB(connector) or OpenDB. It borrows one
// logical connection for a moment (no backend connection).
func ConnectorOf(ctx context.Context, db *sql.DB) (*Connector, error) {
	sc, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	var c *Connector
	err = sc.Raw(func(dc any) error {
		rc, ok := dc.(*conn)
		if !ok {
			return errors.New("rwshard: not an rwshard *sql.DB")
		}
		c = rc.connector
		return nil
	})
	return c, err
}
