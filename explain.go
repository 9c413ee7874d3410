package rwshard

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/redact"
	"github.com/rwshard/rwshard/internal/route"
)

// Plan is where a statement would run and why, as Explain sees it.
type Plan struct {
	// SQL is the text that would be sent (unchanged without sharding).
	SQL string
	// Kind is the classifier's verdict: read, session-read, locking-read,
	// write or unknown.
	Kind string
	// Effects on the session: pin, tx-begin, tx-end, autocommit-off,
	// autocommit-on.
	Effects    []string
	Statements int
	// Reason is the routing reason, as in Stats and the route log.
	Reason string
	// Targets are the nodes that may run it: for a replica read, every
	// replica that qualifies now (the balancer picks one per execution).
	Targets []string
	// Hint is the hint that applied, with its source, or "".
	Hint string
	// Pool is the replica pool of a read hinted to one (Config.Pools) or
	// sent there by a pool rule.
	Pool string
	// PoolRule is the pool rule that chose Pool ("1: tables report_daily",
	// numbered from 1 in Config.PoolRules), or "" (a hint, or none).
	PoolRule string
	// Consistency says what the read rules decided for this context.
	Consistency string
	// Fallback says where a read goes when none of its targets serves
	// it: the primary, with the reason it will then be counted under,
	// and while the primary is away the most advanced replica.
	Fallback string
	// Pins says that the statement pins the logical connection to its
	// connection, and so where later statements run.
	Pins string
	// Units: for a sharded connector, the statement as each shard gets
	// it, with that shard's own plan (read/write splitting inside it).
	// Reason is then the sharding decision ("single-shard",
	// "multi-shard", "all-shards", "broadcast-read", …) and Tables the
	// logical tables.
	Units  []PlanUnit
	Tables []string
}

// PlanUnit is one shard's part of a sharded statement.
type PlanUnit struct {
	DataSource string
	Plan       Plan
}

// String is the plan for people: SQL texts with their string literals
// redacted (IDENTIFIED BY '?'); the SQL fields hold the texts as given.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kind: %s", p.Kind)
	if len(p.Effects) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(p.Effects, ", "))
	}
	fmt.Fprintf(&b, "\nreason: %s\ntargets: %s", p.Reason, strings.Join(p.Targets, ", "))
	if p.Hint != "" {
		fmt.Fprintf(&b, "\nhint: %s", p.Hint)
	}
	if p.Pool != "" {
		fmt.Fprintf(&b, "\npool: %s", p.Pool)
		if p.PoolRule != "" {
			fmt.Fprintf(&b, " (rule %s)", p.PoolRule)
		}
	}
	if p.Consistency != "" {
		fmt.Fprintf(&b, "\nconsistency: %s", p.Consistency)
	}
	if p.Fallback != "" {
		fmt.Fprintf(&b, "\nfallback: %s", p.Fallback)
	}
	if p.Pins != "" {
		fmt.Fprintf(&b, "\npins: %s", p.Pins)
	}
	fmt.Fprintf(&b, "\nsql: %s", redact.Literals(p.SQL))
	for _, u := range p.Units {
		fmt.Fprintf(&b, "\n  shard %s: %s on %s", u.DataSource, u.Plan.Reason, strings.Join(u.Plan.Targets, ", "))
		if u.Plan.Pool != "" {
			fmt.Fprintf(&b, " (pool %s", u.Plan.Pool)
			if u.Plan.PoolRule != "" {
				fmt.Fprintf(&b, ", rule %s", u.Plan.PoolRule)
			}
			b.WriteString(")")
		}
		fmt.Fprintf(&b, ": %s", redact.Literals(u.Plan.SQL))
	}
	return b.String()
}

var effectNames = []struct {
	e    route.Effect
	name string
}{{route.Pin, "pin"}, {route.TxBegin, "tx-begin"}, {route.TxEnd, "tx-end"},
	{route.AutocommitOff, "autocommit-off"}, {route.AutocommitOn, "autocommit-on"},
	{route.PrimaryState, "primary-state"}, {route.ReplayState, "session-vars"},
	{route.Lock, "lock"}, {route.Unlock, "unlock"}, {route.TempTable, "temporary-table"}, {route.UserVars, "user-vars"}}

// Explain returns the plan of a statement on db (an rwshard *sql.DB)
// without running it: its classification, the hint that applied, the
// routing reason and the nodes that may run it now, given the hints and
// session carried by ctx and the current health of every node. It sees a
// fresh logical connection: no open transaction or pinned session. args
// are the statement's arguments (used by sharding to find shard keys).
func Explain(ctx context.Context, db *sql.DB, query string, args ...any) (Plan, error) {
	c, err := ConnectorOf(ctx, db)
	if err != nil {
		return Plan{}, err
	}
	return c.Explain(ctx, query, args...)
}

// ExplainConn is Explain on one *sql.Conn: it sees that connection's open
// transaction or pinned session.
func ExplainConn(ctx context.Context, sc *sql.Conn, query string, args ...any) (Plan, error) {
	var p Plan
	err := sc.Raw(func(dc any) error {
		var err error
		switch lc := dc.(type) {
		case *conn:
			p, err = lc.explain(ctx, query)
		case interface {
			ExplainConn(context.Context, string, []any) (Plan, error)
		}: // a sharded connection
			p, err = lc.ExplainConn(ctx, query, args)
		default:
			err = errNotRwshard
		}
		return err
	})
	return p, err
}

// Explain is the Connector's form of Explain.
func (c *Connector) Explain(ctx context.Context, query string, args ...any) (Plan, error) {
	if c.closed.Load() {
		return Plan{}, &RouteError{Err: ErrClosed}
	}
	if c.sh != nil {
		return c.sh.Explain(ctx, query, args...)
	}
	return newConn(c.cl).explain(ctx, query)
}

// Explain is the plan of query on this logical connection, seeing its
// transaction or pinned session. The sharding module calls it on the
// connection of each data source (see ExplainConn).
func (lc *conn) Explain(ctx context.Context, query string) (Plan, error) {
	return lc.explain(ctx, query)
}

func (lc *conn) explain(ctx context.Context, query string) (Plan, error) {
	var p plan
	if err := lc.plan(ctx, query, nil, &p); err != nil {
		return Plan{}, err
	}
	if p.where == toReplicas && p.targets == 0 && p.fallbackErr != nil {
		return lc.describe(ctx, query, &p), p.fallbackErr
	}
	return lc.describe(ctx, query, &p), nil
}

// describe is the plan p of query for people and programs: what the
// executor will do with it.
func (lc *conn) describe(ctx context.Context, query string, p *plan) Plan {
	cl := lc.cl
	cls, h := p.r.cls, p.r.h
	out := Plan{SQL: query, Kind: cls.Kind.String(), Statements: cls.Statements, Reason: p.reason.String()}
	for _, en := range effectNames {
		if cls.Effect.Has(en.e) {
			out.Effects = append(out.Effects, en.name)
		}
	}
	described := h
	if lc.rule > 0 {
		described.Pool = "" // the rule's, not a hint's
	}
	out.Hint = describeHint(ctx, cls.Hint, described)
	switch p.where {
	case toNode:
		out.Targets = []string{p.node.name}
	case toHeld:
		if lc.sess != nil {
			out.Targets = []string{lc.sess.node.name}
		} else {
			out.Targets = []string{cl.primary().name}
		}
		switch {
		case p.effects.Has(route.Pin):
			out.Pins = "every later statement of this connection runs on " + out.Targets[0] +
				" until it is closed or reset (rwshard.resetSession)"
		case p.effects&(route.Lock|route.TempTable|route.UserVars|route.PrimaryState) != 0:
			out.Pins = "this connection keeps its connection to " + out.Targets[0] +
				" for what the statement leaves there (a lock, a temporary table, variables); later reads still go to replicas"
		}
	case toReplicas:
		out.Pool = cl.pools[p.f.pool]
		if lc.rule > 0 {
			out.PoolRule = cl.cfg.rules[lc.rule-1].desc
		}
		out.Consistency = describeConsistency(cl.cfg, p.f)
		for i, n := range cl.nodes {
			if p.targets.has(i) {
				out.Targets = append(out.Targets, n.name)
			}
		}
		prim := cl.primary()
		switch {
		case p.targets == 0:
			out.Reason, out.Targets = p.fallback.String(), []string{prim.name}
			if p.fallbackErr != nil {
				out.Targets = nil
			}
		case !p.wait.IsZero():
			out.Consistency += "; none known to have it yet: the read waits for it on " + strings.Join(out.Targets, " or ")
		}
		if p.targets != 0 {
			out.Fallback = p.fallback.String() + ": " + prim.name
		}
		out.Fallback = strings.TrimPrefix(out.Fallback+"; while the primary is away: the most advanced replica", "; ")
	default:
		out.Targets = []string{cl.primary().name}
	}
	return out
}

func describeHint(ctx context.Context, comment, merged hint.Hint) string {
	if merged.IsZero() {
		return ""
	}
	src := "comment"
	if ch, ok := hint.FromContext(ctx); ok && !ch.IsZero() {
		src = "context"
		if !comment.IsZero() {
			src = "context and comment"
		}
	}
	var parts []string
	switch merged.Route {
	case hint.PrimaryOnly:
		parts = append(parts, "primary")
	case hint.ReplicaOK:
		parts = append(parts, "replica")
	case hint.NodeOnly:
		parts = append(parts, "node="+merged.Node)
	}
	if merged.MaxLag > 0 {
		parts = append(parts, "max_lag="+merged.MaxLag.String())
	}
	if merged.Pool != "" {
		parts = append(parts, "pool="+merged.Pool)
	}
	return src + ": " + strings.Join(parts, ", ")
}

func describeConsistency(cfg *Config, f readFilter) string {
	switch {
	case cfg.Consistency == ConsistencyEventual:
		return "eventual: any healthy replica within the lag limit"
	case !f.gtid.IsZero():
		return string(cfg.Consistency) + ": replicas that applied GTID " + f.gtid.String()
	case !f.since.IsZero():
		return fmt.Sprintf("%s: last write %s ago; replicas with data as of it", cfg.Consistency,
			time.Since(f.since).Round(time.Millisecond))
	default:
		return string(cfg.Consistency) + ": no write in this session; any healthy replica within the lag limit"
	}
}
