package rwshard

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/rwshard/rwshard/internal/redact"
)

// The record of a statement that ran: its tracer's StatementEnd and its
// route log line, both from the same plan and the same outcome that the
// counters (cluster.account) read.

// statementEnd describes the statement that just ran, for the tracer.
func (e *exe) statementEnd(p *plan, out *results, took time.Duration, err error) StatementEnd {
	cl := e.c.cl
	se := StatementEnd{Redacted: redact.Literals(e.q), RowsAffected: -1, Waited: e.waited, Retried: e.retried,
		Err: err, Duration: took}
	if p.ok {
		se.Reason, se.Kind = e.final.String(), p.r.cls.Kind.String()
		se.Outcome = e.out.String()
		if p.where == toReplicas {
			for i, n := range cl.nodes {
				if p.targets.has(i) {
					se.Targets = append(se.Targets, n.name)
				}
			}
		}
	}
	if n := e.node(); n != nil {
		se.Node, se.Role, se.Addr = n.name, roleOf(cl.isPrimary(n)), cl.cfg.Nodes[n.index].Addr
	}
	if cl.cfg.Backend != nil {
		se.Database = cl.cfg.Backend.DBName
	}
	if out.res != nil && err == nil {
		if n, rerr := out.res.RowsAffected(); rerr == nil {
			se.RowsAffected = n
		}
	}
	return se
}

func roleOf(primary bool) string {
	if primary {
		return "primary"
	}
	return "replica"
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
func (e *exe) logRoute(ctx context.Context, p *plan, args []driver.NamedValue, took time.Duration, err error) {
	c, q := e.c, e.q
	cfg := c.cl.cfg
	logger := cfg.logger()
	sqlText := q
	if !cfg.LogArgs {
		sqlText = redact.Literals(q)
	}
	if len(sqlText) > 200 {
		sqlText = sqlText[:200] + "…"
	}
	node := ""
	if n := e.node(); n != nil {
		node = n.name
	} else if p.node != nil {
		node = p.node.name
	}
	attrs := []slog.Attr{
		slog.String("node", node),
		slog.String("reason", e.final.String()),
		slog.String("sql", sqlText),
		slog.Duration("took", took),
	}
	if n := e.node(); n != nil && n.pool > 0 {
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
		attrs = append(attrs, slog.String("outcome", e.out.String()), slog.String("err", errText(err)))
	}
	logger.LogAttrs(ctx, level, "rwshard route", attrs...)
}
