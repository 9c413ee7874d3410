package shard

import (
	"context"
	"database/sql/driver"
	"slices"

	"github.com/rwshard/rwshard"
	"github.com/rwshard/rwshard/router"
)

// explainer is what the connection of a data source (rwshard's own
// logical connection) offers to Explain a unit: its plan, seeing its own
// transaction or pinned session.
type explainer interface {
	Explain(ctx context.Context, query string) (rwshard.Plan, error)
}

// Explain is the plan of a statement on a fresh sharded connection.
func (c *connector) Explain(ctx context.Context, query string, args ...any) (rwshard.Plan, error) {
	return (&conn{c: c, subs: map[string]*sub{}}).explain(ctx, query, args)
}

// ExplainConn is the plan of a statement on this connection: inside its
// transaction, every unit runs on its data source's part of it.
func (sc *conn) ExplainConn(ctx context.Context, query string, args []any) (rwshard.Plan, error) {
	return sc.explain(ctx, query, args)
}

func (sc *conn) explain(ctx context.Context, query string, args []any) (rwshard.Plan, error) {
	ctx, cls, err := sc.classify(ctx, query)
	if err != nil {
		return rwshard.Plan{}, err
	}
	if cls.Effect != 0 {
		// The logical connection's own: it applies to every data source.
		return rwshard.Plan{SQL: query, Kind: cls.Kind.String(), Statements: cls.Statements,
			Reason: router.ReasonSessionPinned.String(), Units: nil}, nil
	}
	named := make([]driver.NamedValue, len(args))
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return rwshard.Plan{}, err
		}
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	st, release := sc.state()
	defer release()
	rt, err := st.router.RouteContext(ctx, query, named, sc.columnSource(st))
	if err != nil {
		return rwshard.Plan{}, err
	}
	p := rwshard.Plan{SQL: query, Kind: cls.Kind.String(), Statements: cls.Statements, Reason: rt.Reason, Tables: rt.Tables}
	for _, u := range rt.Units {
		up, err := sc.explainUnit(ctx, st, u)
		if err != nil {
			return p, err
		}
		p.Units = append(p.Units, rwshard.PlanUnit{DataSource: u.DataSource, Plan: up})
		p.Targets = append(p.Targets, up.Targets...)
	}
	return p, nil
}

// explainUnit is one unit's plan on its data source: on the connection
// this logical connection holds there, or on a fresh one. A unit of an
// open transaction on a data source the transaction has not touched yet
// would open its part there, on the primary.
func (sc *conn) explainUnit(ctx context.Context, st *state, u Unit) (rwshard.Plan, error) {
	untouched := sc.inTx() && !slices.Contains(sc.txOrder, u.DataSource)
	if s := sc.subs[u.DataSource]; s != nil && s.dc == st.sources[u.DataSource] && !untouched {
		return s.conn.(explainer).Explain(ctx, u.SQL)
	}
	dc := st.sources[u.DataSource]
	fresh, err := dc.Connect(ctx)
	if err != nil {
		return rwshard.Plan{}, err
	}
	defer fresh.Close()
	p, err := fresh.(explainer).Explain(ctx, u.SQL)
	if err != nil || !untouched {
		return p, err
	}
	p.Reason, p.Consistency = router.ReasonInTransaction.String(), ""
	p.Targets = nil
	for _, n := range dc.Stats().Nodes {
		if n.Primary {
			p.Targets = []string{n.Name}
		}
	}
	return p, nil
}
