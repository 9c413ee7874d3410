package shard

// The cached analysis of one SQL text and its per-call half: bind the
// arguments, evaluate the sharding conditions, render the units.

import (
	"database/sql/driver"
	"fmt"
	"strconv"
)

type planKind uint8

const (
	planFixed          planKind = iota // one data source (default, or any for a broadcast read)
	planBroadcastWrite                 // every data source
	planSharded                        // data nodes of sharded tables
	planUnits                          // units fixed by the analysis (see route_admin.go)
)

// routePlan is the analysis of one SQL text; immutable once built.
type routePlan struct {
	err    error // the statement cannot be routed, whatever its arguments
	kind   planKind
	reason string // planFixed and planBroadcastWrite
	ds     string // planFixed
	write  bool
	read   bool // a sharded SELECT
	ddl    bool // a sharded DDL
	tables []string
	nargs  int

	// tmpl renders the units; nil (planFixed, planBroadcastWrite): the
	// SQL text goes as it is.
	tmpl       *sqlTemplate
	fixedNames []string // table names of tmpl for planFixed, planBroadcastWrite

	// planSharded
	refNames   []string // per table reference: its escaped logical name
	shards     []*shardRef
	cond       *routeCond
	writeLimit bool           // UPDATE/DELETE … LIMIT: one unit only
	keyAssigns []keyAssign    // UPDATE … SET of a sharding column to its pinned value
	multi      *sqlTemplate   // SELECT over several units
	pinned     []pinnedCond   // subqueries that must be on the statement's one node
	multiErr   error          // why a SELECT cannot run over several units
	merge      *selectRewrite // the merge of a SELECT over several units
	ins        *insertPlan
	needCols   string // an INSERT without a column list into this sharded table

	units []Unit // planUnits, without arguments
}

// routeWithUnits allocates a Route and its first unit together.
type routeWithUnits struct {
	Route
	one [1]Unit
}

func newRoute(n int) *Route {
	if n == 1 {
		ru := &routeWithUnits{}
		ru.Units = ru.one[:]
		return &ru.Route
	}
	return &Route{Units: make([]Unit, n)}
}

func (p *routePlan) route(r *Router, sql string, args []driver.NamedValue) (*Route, error) {
	if len(args) != p.nargs {
		return nil, &RouteError{SQL: sql, Err: fmt.Errorf("rwshard: shard: the statement has %d placeholders, got %d arguments", p.nargs, len(args))}
	}
	if p.needCols != "" {
		return nil, &RouteError{Table: p.needCols, SQL: sql, Err: fmt.Errorf("%w: INSERT into a sharded table without a column list needs the table's columns (Router.RouteContext with a ColumnSource)", ErrUnsupported)}
	}
	switch p.kind {
	case planFixed:
		rt := newRoute(1)
		u := &rt.Units[0]
		u.DataSource = p.ds
		u.SQL, u.Args = p.fixedSQL(sql, args)
		rt.Write, rt.Tables, rt.Reason = p.write, p.tables, p.reason
		return rt, nil
	case planBroadcastWrite:
		names := r.dsNames
		rt := newRoute(len(names))
		text, uargs := p.fixedSQL(sql, args)
		for i, ds := range names {
			rt.Units[i] = Unit{DataSource: ds, SQL: text, Args: uargs}
		}
		rt.Write, rt.Tables, rt.Reason = true, p.tables, p.reason
		return rt, nil
	case planUnits:
		rt := newRoute(len(p.units))
		copy(rt.Units, p.units)
		rt.Write, rt.Tables, rt.Reason = p.write, p.tables, p.reason
		if !p.write && len(p.units) > 1 {
			// The rows of every data source, one after the other.
			rt.merge = &mergePlan{Limit: noLimit}
		}
		return rt, nil
	}
	if p.ins != nil {
		return p.routeInsert(r, sql, args)
	}
	return p.routeSharded(r, sql, args)
}

// fixedSQL is the SQL and arguments of a planFixed or planBroadcastWrite
// unit.
func (p *routePlan) fixedSQL(sql string, args []driver.NamedValue) (string, []driver.NamedValue) {
	if p.tmpl == nil {
		return sql, ordinals(args)
	}
	u := unitRender{tables: p.fixedNames, in: args, out: make([]driver.NamedValue, 0, p.nargs)}
	return p.tmpl.render(&u), u.out
}

// ordinals returns args numbered from 1, copying only when needed.
func ordinals(args []driver.NamedValue) []driver.NamedValue {
	for i := range args {
		if args[i].Ordinal != i+1 {
			out := make([]driver.NamedValue, len(args))
			for j, a := range args {
				a.Ordinal = j + 1
				out[j] = a
			}
			return out
		}
	}
	return args
}

func (p *routePlan) routeSharded(r *Router, sql string, args []driver.NamedValue) (*Route, error) {
	lead := p.shards[0].table
	if err := p.checkKeyAssigns(lead, sql, args); err != nil {
		return nil, err
	}
	var stack [8]uint64
	ev := nodeEval{shards: p.shards, args: args, words: lead.words, scratch: stack[:0]}
	set, keyed, err := ev.eval(p.cond)
	if err != nil {
		return nil, &RouteError{Table: lead.name, SQL: sql, Err: err}
	}
	// allShards: a write without shard key, on every node of the table
	// it writes (lead: the target of UPDATE, DELETE and INSERT … SELECT).
	allShards := false
	if !keyed && !p.ddl {
		switch {
		case p.read:
			if r.rules.RefuseBroadcastReads {
				return nil, &RouteError{Table: lead.name, Column: lead.shardingColumns(), SQL: sql,
					Err: fmt.Errorf("%w: reads without one are refused (RefuseBroadcastReads)", ErrNoShardKey)}
			}
		case r.rules.AllowBroadcastWrites || lead.rule.AllowBroadcastWrites:
			allShards = true
		default:
			return nil, &RouteError{Table: lead.name, Column: lead.shardingColumns(), SQL: sql,
				Err: fmt.Errorf("%w: an UPDATE, DELETE or INSERT … SELECT of a sharded table needs a condition on its sharding column", ErrNoShardKey)}
		}
	}
	for _, pc := range p.pinned {
		// A subquery not linked with the query around it reads its rows
		// where they are: the statement and all such subqueries must be
		// on one data node.
		s, _, err := ev.eval(pc.cond)
		if err != nil {
			return nil, &RouteError{Table: pc.table, SQL: sql, Err: err}
		}
		orInto(set, s)
		if n := countBits(set); n > 1 {
			return nil, &RouteError{Table: pc.table, SQL: sql, Err: unsupported("a subquery or derived table over sharded table %s whose rows may be on other data nodes than the rest of the statement (%d data nodes): it runs only on the statement's one node, or linked with it by the binding column", pc.table, n)}
		}
	}
	n := countBits(set)
	if n == 0 {
		// No row can match (x = 1 AND x = 2, x = NULL): any one node gives
		// the right empty answer.
		set[0] = 1
		n = 1
	}
	if !keyed && p.read && r.rules.MaxBroadcastShards > 0 && n > r.rules.MaxBroadcastShards {
		return nil, &RouteError{Table: lead.name, Column: lead.shardingColumns(), SQL: sql,
			Err: fmt.Errorf("%w: a read without shard key would go to %d data nodes, more than MaxBroadcastShards=%d", ErrTooManyShards, n, r.rules.MaxBroadcastShards)}
	}
	if n > 1 && p.writeLimit {
		// Each node would apply the LIMIT to its own rows: n times the rows.
		return nil, &RouteError{Table: lead.name, SQL: sql, Err: unsupported("UPDATE, DELETE or INSERT … SELECT with LIMIT over %d shards", n)}
	}

	rt := newRoute(n)
	rt.Write, rt.Tables = p.write, p.tables
	switch {
	case allShards:
		rt.Reason, rt.Atomic = ReasonAllShardsWrite, n > 1
	case p.ddl || (!keyed && p.read):
		rt.Reason = ReasonAllShards
	case n == 1:
		rt.Reason = ReasonSingleShard
	default:
		rt.Reason = ReasonMultiShard
	}

	tmpl := p.tmpl
	u := unitRender{in: args}
	if n > 1 && p.read {
		if p.multiErr != nil {
			return nil, p.multiErr
		}
		tmpl = p.multi
		mp, lim, err := p.merge.bind(args)
		if err != nil {
			return nil, &RouteError{Table: lead.name, SQL: sql, Err: err}
		}
		rt.merge, u.limit = mp, lim
	}

	k := 0
	forBits(set, func(i int) {
		unit := &rt.Units[k]
		k++
		unit.DataSource = lead.nodes[i].DataSource
		u.tables = p.unitTables(i)
		u.out = make([]driver.NamedValue, 0, p.nargs)
		unit.SQL = tmpl.render(&u)
		unit.Args = u.out
	})
	return rt, nil
}

// unitTables returns the table names of the unit on node i.
func (p *routePlan) unitTables(i int) []string {
	if len(p.refNames) == 1 {
		return p.shards[0].table.phys[i : i+1]
	}
	names := make([]string, len(p.refNames))
	copy(names, p.refNames)
	for _, sr := range p.shards {
		names[sr.marker] = sr.table.phys[i]
	}
	return names
}

// intArg reads a LIMIT or OFFSET argument.
func intArg(v driver.Value) (int64, error) {
	switch x := v.(type) {
	case int64:
		if x >= 0 {
			return x, nil
		}
	case uint64:
		if x <= 1<<63-1 {
			return int64(x), nil
		}
		return 1<<63 - 1, nil
	case int:
		if x >= 0 {
			return int64(x), nil
		}
	case string:
		if n, err := strconv.ParseInt(x, 10, 64); err == nil && n >= 0 {
			return n, nil
		}
	case []byte:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("rwshard: shard: LIMIT argument %v (%T) is not a non-negative integer", v, v)
}
