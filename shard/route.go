package shard

// Routing of one statement: which data sources run what.
//
// Router.Route parses a statement once per SQL text (cached, bounded),
// analyses it once (tables, sharding conditions, rewrite templates, merge
// plan) and then, per call, binds the arguments: evaluates the sharding
// conditions to data nodes, renders one unit per data node and fills the
// merge plan's OFFSET and LIMIT. Everything here is pure: no I/O, no
// goroutines, no package-level mutable state.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/rwshard/rwshard/internal/redact"
)

// Reasons of a Route, as Route.Reason.
const (
	ReasonSingleShard    = "single-shard"        // one data node, by shard key
	ReasonMultiShard     = "multi-shard"         // several data nodes, by shard key
	ReasonBroadcastRead  = "broadcast-read"      // any one data source holds the broadcast tables read
	ReasonBroadcastWrite = "broadcast-write"     // every data source, for broadcast tables
	ReasonDefault        = "default-data-source" // no sharded or broadcast table
	ReasonAllShards      = "all-shards"          // every data node: a read without shard key, or DDL
	ReasonAllShardsWrite = "all-shards-write"    // every data node: a write without shard key (AllowBroadcastWrites)
)

// Errors of routing. They come wrapped in a *RouteError that names the
// table, the column and the statement; match them with errors.Is.
var (
	// ErrNoShardKey: a write (or, with Rules.RefuseBroadcastReads, a
	// read) has no value or condition for the sharding column, and
	// Rules.AllowBroadcastWrites does not send it to every data node.
	ErrNoShardKey = errors.New("rwshard: shard: no shard key")
	// ErrShardKeyUpdate: an UPDATE sets a sharding column; the row would
	// have to move to another shard.
	ErrShardKeyUpdate = errors.New("rwshard: shard: update of a sharding column")
	// ErrCrossShardJoin: a statement joins sharded tables that are not
	// bound together, or a sharded table with a table of another data
	// source.
	ErrCrossShardJoin = errors.New("rwshard: shard: join across shards")
	// ErrUnsupported: SQL that rwshard cannot run on sharded tables
	// without risking a wrong answer; the message names the construct.
	ErrUnsupported = errors.New("rwshard: shard: unsupported")
	// ErrTooManyShards: a read without shard key would fan out to more
	// data nodes than Rules.MaxBroadcastShards.
	ErrTooManyShards = errors.New("rwshard: shard: too many shards")
	// ErrUnknownTable: a table is neither sharded nor broadcast and there
	// is no default data source to hold it.
	ErrUnknownTable = errors.New("rwshard: shard: table in no data source")
)

// RouteError is a routing failure: Err (one of the Err… sentinels above,
// possibly wrapped with detail, or an algorithm's or key generator's
// error) with the table, the column and the statement it is about.
type RouteError struct {
	Table, Column, SQL string
	Err                error
}

func (e *RouteError) Error() string {
	var b strings.Builder
	b.WriteString("rwshard: shard: ")
	if e.Err != nil {
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "rwshard: shard: "))
	}
	if e.Table != "" || e.Column != "" {
		b.WriteString(" (")
		if e.Table != "" {
			b.WriteString("table ")
			b.WriteString(e.Table)
		}
		if e.Column != "" {
			if e.Table != "" {
				b.WriteString(", ")
			}
			b.WriteString("column ")
			b.WriteString(e.Column)
		}
		b.WriteByte(')')
	}
	if e.SQL != "" {
		b.WriteString(" in ")
		b.WriteString(quoteStatement(e.SQL))
	}
	return b.String()
}

func (e *RouteError) Unwrap() error { return e.Err }

// quoteStatement quotes the start of a statement for an error message,
// its string literals redacted.
func quoteStatement(sql string) string { return strconv.Quote(redact.Quote(sql)) }

// Unit is one statement for one data source.
type Unit struct {
	DataSource string              // where to run
	SQL        string              // rewritten SQL with '?' placeholders
	Args       []driver.NamedValue // this unit's arguments, renumbered from 1, in placeholder order
}

// Route is where and how a statement runs. It is the caller's to keep;
// Tables, the slices of its merge plan and the Args of broadcast units (one slice
// for all of them) are shared and must not be modified.
type Route struct {
	Units []Unit
	// merge says how to merge the units' results: set for a read with
	// more than one unit, nil for a single unit (the shard's own result is
	// the answer). When the select list has a '*' the width of the shard
	// rows is known only from the results and the indexes of merge that
	// follow the '*' are negative (counted from the end, -1 the last
	// column), which the merge refuses: get the plan from mergePlanFor.
	merge *mergePlan
	// Write: the units change data; the caller sums RowsAffected.
	Write bool
	// Atomic: the units apply together or not at all. Outside a
	// transaction the caller runs them in one of their own, committed
	// after the last unit, rolled back if any fails.
	Atomic bool
	// LastInsertID is the key rwshard generated for the first inserted
	// row, else 0.
	LastInsertID int64
	// Tables are the logical tables involved, lower case, for Explain.
	Tables []string
	// Reason is one of the Reason… constants.
	Reason string
}

// mergePlanFor returns the merge plan for shard rows of ncols columns:
// r.merge itself when its indexes are all known, else a copy with the
// indexes counted from the end resolved. Nil when the route has no merge.
func (r *Route) mergePlanFor(ncols int) *mergePlan {
	m := r.merge
	if m == nil || !mergeNeedsWidth(m) {
		return m
	}
	fix := func(i int) int {
		if i < 0 {
			return ncols + i
		}
		return i
	}
	c := *m
	c.OrderBy = make([]orderKey, len(m.OrderBy))
	for i, k := range m.OrderBy {
		c.OrderBy[i] = orderKey{Index: fix(k.Index), Desc: k.Desc}
	}
	c.GroupBy = make([]int, len(m.GroupBy))
	for i, g := range m.GroupBy {
		c.GroupBy[i] = fix(g)
	}
	c.Aggregates = make([]aggregate, len(m.Aggregates))
	for i, a := range m.Aggregates {
		c.Aggregates[i] = aggregate{Kind: a.Kind, Index: fix(a.Index), SumIndex: fix(a.SumIndex), CountIndex: fix(a.CountIndex),
			Distinct: a.Distinct, ArgIndex: fix(a.ArgIndex)}
	}
	if m.Weights != nil {
		c.Weights = make([]weight, len(m.Weights))
	}
	for i, w := range m.Weights {
		c.Weights[i] = weight{Column: fix(w.Column), Weight: fix(w.Weight)}
	}
	if m.Visible < 0 {
		c.Visible = ncols + m.Visible
	}
	return &c
}

func mergeNeedsWidth(m *mergePlan) bool {
	if m.Visible < 0 {
		return true
	}
	for _, k := range m.OrderBy {
		if k.Index < 0 {
			return true
		}
	}
	for _, g := range m.GroupBy {
		if g < 0 {
			return true
		}
	}
	for _, w := range m.Weights {
		if w.Column < 0 || w.Weight < 0 {
			return true
		}
	}
	for _, a := range m.Aggregates {
		if a.Index < 0 || (a.Kind == aggAvg && (a.SumIndex < 0 || a.CountIndex < 0)) || (a.Distinct && a.ArgIndex < 0) {
			return true
		}
	}
	return false
}

// Router routes and rewrites statements under one set of Rules. It is
// safe for concurrent use. It caches the analysis of each SQL text
// (bounded); the rules must not change while the router is in use (a
// reload builds a new Router).
type Router struct {
	rules     *Rules
	parser    *sqlparser.Parser
	tables    map[string]*routeTable // sharded tables by logical name
	broadcast map[string]bool
	dsNames   []string // every data source, sorted
	readDS    string   // the data source of broadcast reads
	groupErr  []error  // per binding group: why its tables cannot be joined
	cache     routeCache
}

// NewRouter returns a router for rules. It does not validate them (the
// configuration does); a rule it cannot use makes the statements on that
// table fail with ErrUnsupported. Nil rules are empty rules.
func NewRouter(rules *Rules) *Router {
	if rules == nil {
		rules = &Rules{}
	}
	p, err := sqlparser.New(sqlparser.Options{MySQLServerVersion: "8.0.40"})
	if err != nil {
		p = sqlparser.NewTestParser()
	}
	r := &Router{
		rules:     rules,
		parser:    p,
		tables:    make(map[string]*routeTable, len(rules.Tables)),
		broadcast: make(map[string]bool, len(rules.Broadcast)),
	}
	r.cache.init()
	for name := range rules.DataSources {
		r.dsNames = append(r.dsNames, name)
	}
	for _, b := range rules.Broadcast {
		r.broadcast[strings.ToLower(b)] = true
	}
	r.buildTables()
	return r
}

// Route routes sql with its arguments (one per '?', in order).
func (r *Router) Route(sql string, args []driver.NamedValue) (*Route, error) {
	p := r.plan(sql)
	if p.err != nil {
		return nil, p.err
	}
	return p.route(r, sql, args)
}

// ColumnSource gives the columns of a sharded logical table, in table
// order (as information_schema.COLUMNS by ORDINAL_POSITION), for an INSERT
// or REPLACE without a column list. The sharded connector's loads them
// from every data node once per table and caches them.
type ColumnSource interface {
	TableColumns(ctx context.Context, table string) ([]string, error)
}

// ColumnSourceFunc adapts a function to ColumnSource.
type ColumnSourceFunc func(ctx context.Context, table string) ([]string, error)

// TableColumns calls f.
func (f ColumnSourceFunc) TableColumns(ctx context.Context, table string) ([]string, error) {
	return f(ctx, table)
}

// RouteContext is Route, with the columns of the target of an INSERT or
// REPLACE without a column list from cols: it routes as if the column
// list had been written (all the columns; or all but the generated key
// column when each row has one value fewer, as ShardingSphere does). Only
// that statement calls cols, with ctx; with nil cols it is refused.
func (r *Router) RouteContext(ctx context.Context, sql string, args []driver.NamedValue, cols ColumnSource) (*Route, error) {
	p := r.plan(sql)
	if p.err != nil {
		return nil, p.err
	}
	if p.needCols != "" && cols != nil {
		names, err := cols.TableColumns(ctx, p.needCols)
		if err != nil {
			return nil, &RouteError{Table: p.needCols, SQL: sql, Err: err}
		}
		if len(names) == 0 {
			return nil, &RouteError{Table: p.needCols, SQL: sql, Err: fmt.Errorf("%w: no columns known for table %s", ErrUnsupported, p.needCols)}
		}
		// Cached under the text and the columns: a table whose columns
		// changed gets a new analysis.
		key := sql + "\x00" + strings.Join(names, "\x00")
		if p = r.cache.get(key); p == nil {
			p = r.analyzeWith(sql, names)
			r.cache.put(key, p)
		}
		if p.err != nil {
			return nil, p.err
		}
	}
	return p.route(r, sql, args)
}

// dataNodes returns the data nodes of sharded table name (lower case).
func (r *Router) dataNodes(name string) []DataNode {
	if t := r.tables[name]; t != nil {
		return t.nodes
	}
	return nil
}

// plan returns the cached analysis of sql, analysing it on first sight.
func (r *Router) plan(sql string) *routePlan {
	if p := r.cache.get(sql); p != nil {
		return p
	}
	p := r.analyze(sql)
	r.cache.put(sql, p)
	return p
}

// routeCache is a bounded map of analyses by SQL text: two generations;
// when the current one is full it becomes the old one and the old one is
// dropped, so entries in use survive (they are copied forward on a hit).
type routeCache struct {
	mu       sync.RWMutex
	cur, old map[string]*routePlan
}

const (
	routeCacheGeneration = 2048     // entries per generation
	routeCacheMaxSQL     = 32 << 10 // longer texts are not cached
)

func (c *routeCache) init() {
	c.cur = make(map[string]*routePlan)
}

func (c *routeCache) get(sql string) *routePlan {
	c.mu.RLock()
	p := c.cur[sql]
	if p == nil && c.old != nil {
		p = c.old[sql]
		if p != nil {
			c.mu.RUnlock()
			c.put(sql, p)
			return p
		}
	}
	c.mu.RUnlock()
	return p
}

func (c *routeCache) put(sql string, p *routePlan) {
	if len(sql) > routeCacheMaxSQL {
		return
	}
	c.mu.Lock()
	if len(c.cur) >= routeCacheGeneration {
		c.old = c.cur
		c.cur = make(map[string]*routePlan, routeCacheGeneration)
	}
	c.cur[sql] = p
	c.mu.Unlock()
}

func (c *routeCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.cur) + len(c.old)
}
