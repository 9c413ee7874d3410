package rwshard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/hint"
	"github.com/rwshard/rwshard/internal/redact"
	"github.com/rwshard/rwshard/router"
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
	e    router.Effect
	name string
}{{router.Pin, "pin"}, {router.TxBegin, "tx-begin"}, {router.TxEnd, "tx-end"},
	{router.AutocommitOff, "autocommit-off"}, {router.AutocommitOn, "autocommit-on"},
	{router.PrimaryState, "primary-state"}, {router.ReplayState, "session-vars"}}

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
	var r routed
	if _, err := lc.route(ctx, query, nil, &r); err != nil {
		return Plan{}, err
	}
	cls, d, h := r.cls, r.d, r.h
	p := Plan{SQL: query, Kind: cls.Kind.String(), Statements: cls.Statements, Reason: d.Reason.String()}
	for _, en := range effectNames {
		if cls.Effect.Has(en.e) {
			p.Effects = append(p.Effects, en.name)
		}
	}
	described := h
	if lc.rule > 0 {
		described.Pool = "" // the rule's, not a hint's
	}
	p.Hint = describeHint(ctx, cls.Hint, described)
	cl := lc.cl
	switch {
	case d.Target == router.ToNode:
		n, err := cl.namedNode(cls, d, query)
		if err != nil {
			return p, err
		}
		p.Targets = []string{n.name}
	case d.Target == router.ToReplica:
		f := lc.filter(ctx, h)
		if f.pool < 0 {
			return p, cl.unknownPool(query)
		}
		p.Pool = cl.pools[f.pool]
		if lc.rule > 0 {
			p.PoolRule = cl.cfg.rules[lc.rule-1].desc
		}
		p.Consistency = describeConsistency(cl.cfg, f)
		prim := cl.primary()
		anyHealthy := false
		targets := func() {
			for _, n := range cl.nodes {
				ok, healthy := cl.readable(&f, n, prim)
				anyHealthy = anyHealthy || healthy
				if ok {
					p.Targets = append(p.Targets, n.name)
				}
			}
		}
		targets()
		if len(p.Targets) == 0 && f.poolUnavailable(anyHealthy) {
			toPrimary, err := cl.poolFallback(&f, query)
			if err != nil {
				return p, err
			}
			if toPrimary {
				p.Reason, p.Targets = router.ReasonNoHealthyReplica.String(), []string{prim.name}
				p.Pool += " (no replica qualifies: rwshard.poolFallback=primary)"
				return p, nil
			}
			p.Pool += " (no replica qualifies: falls back to " + cl.cfg.PoolFallback + ")"
			targets()
		}
		if len(p.Targets) == 0 && anyHealthy && !f.gtid.IsZero() && cl.cfg.CausalWait == CausalWaitOnReplica {
			if n := cl.closest(&f); n != nil {
				p.Targets = []string{n.name}
				p.Consistency += "; none known to have it yet: the read waits for it on " + n.name
			}
		}
		if len(p.Targets) == 0 {
			reason, err := cl.readFallback(&f, anyHealthy, query)
			if err != nil {
				return p, err
			}
			p.Reason = reason.String()
			p.Targets = []string{prim.name}
		}
	case d.Target == router.ToSession && lc.sess != nil:
		p.Targets = []string{lc.sess.node.name}
	default:
		p.Targets = []string{cl.primary().name}
	}
	return p, nil
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
		return "causal: replicas that applied GTID " + f.gtid.String()
	case !f.since.IsZero():
		return fmt.Sprintf("%s: last write %s ago; replicas with data as of it", cfg.Consistency,
			time.Since(f.since).Round(time.Millisecond))
	default:
		return string(cfg.Consistency) + ": no write in this session; any healthy replica within the lag limit"
	}
}

// errText is an error's message for the route log: the server's texts
// redacted with redact.ErrorText (a syntax error quotes the statement,
// passwords included), rwshard's own already quote redacted SQL.
func errText(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return redact.ErrorText(err.Error())
	}
	return redact.Literals(err.Error())
}

// logRoute writes the route log line of one statement (Config.RouteLog).
func (c *conn) logRoute(ctx context.Context, q string, args []driver.NamedValue, d router.Decision, node string, took time.Duration, err error) {
	cfg := c.cl.cfg
	logger := cfg.logger()
	sqlText := q
	if !cfg.LogArgs {
		sqlText = redact.Literals(q)
	}
	if len(sqlText) > 200 {
		sqlText = sqlText[:200] + "…"
	}
	attrs := []slog.Attr{
		slog.String("node", node),
		slog.String("reason", d.Reason.String()),
		slog.String("sql", sqlText),
		slog.Duration("took", took),
	}
	if n := c.ranOn(); n != nil && n.pool > 0 {
		attrs = append(attrs, slog.String("pool", c.cl.pools[n.pool]))
	}
	if c.rule > 0 {
		// The rule that chose the pool, also when the read fell back out
		// of it (rwshard.poolFallback).
		attrs = append(attrs, slog.String("rule", c.cl.cfg.rules[c.rule-1].desc))
	}
	if len(args) > 0 {
		if cfg.LogArgs {
			vals := make([]any, len(args))
			for i, a := range args {
				vals[i] = a.Value
			}
			attrs = append(attrs, slog.Any("args", vals))
		} else {
			attrs = append(attrs, slog.Int("args", len(args)))
		}
	}
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.String("err", errText(err)))
	}
	logger.LogAttrs(ctx, level, "rwshard route", attrs...)
}
