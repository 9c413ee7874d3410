package shard

// UPDATE of a sharded table, and the one update of a sharding column that
// leaves every row where it is: SET to the value the WHERE clause pins the
// column to (ShardingSphere routes it too). The rows it changes all have
// col = v before (the WHERE clause's AND requires it) and after, so they
// stay on the nodes of v, the only ones the statement runs on.
//
//	UPDATE t SET user_id = 1 WHERE user_id = 1 AND …     routes
//	UPDATE t SET user_id = ? WHERE user_id = ? AND …     routes when both arguments are equal
//	UPDATE t SET user_id = user_id WHERE …               routes (assigns each row its own value)
//	UPDATE t SET user_id = 2 WHERE user_id = 1           ErrShardKeyUpdate
//	UPDATE t SET user_id = 1 WHERE user_id = 1 OR …      ErrShardKeyUpdate (OR does not pin it)
//
// Equal means the same Go value after the conversions of literalValue and
// the driver: integers of any width by value, strings and []byte by bytes,
// time.Time by Equal; an integer and a string are never equal (MySQL's
// comparison would convert, rwshard refuses instead).

import (
	"bytes"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"vitess.io/vitess/go/vt/sqlparser"
)

// keyAssign is SET col = set under a WHERE clause that requires
// col = where, checked per call when one of them is an argument.
type keyAssign struct {
	col        string
	set, where condValue
}

func (a *analyzer) shardedUpdate(p *routePlan, u *sqlparser.Update) (*routePlan, error) {
	t := p.shards[0].table
	at, ok := singleTable(u.TableExprs)
	if !ok {
		return nil, a.fail(unsupported("multi-table UPDATE of a sharded table"), t.name, "")
	}
	if tableNameOf(at) != t.name {
		return nil, a.fail(unsupported("UPDATE of table %s that reads sharded table %s in a subquery", tableNameOf(at), t.name), t.name, "")
	}
	ref := strings.ToLower(at.As.String())
	if ref == "" {
		ref = t.name
	}
	ours := func(c *sqlparser.ColName) bool {
		q := strings.ToLower(c.Qualifier.Name.String())
		return q == "" || q == ref
	}
	for _, e := range u.Exprs {
		col := e.Name.Name.Lowered()
		if !ours(e.Name) || !t.hasColumn(col) {
			continue
		}
		if c, ok := e.Expr.(*sqlparser.ColName); ok && ours(c) && c.Name.Lowered() == col {
			continue // SET col = col
		}
		moves := fmt.Errorf("%w: SET %s would move the row to another shard (delete and insert it instead)", ErrShardKeyUpdate, col)
		set, ok := literalValue(e.Expr)
		if !ok {
			return nil, a.fail(moves, t.name, col)
		}
		where, ok := pinnedValue(u.Where, col, ours)
		if !ok {
			return nil, a.fail(fmt.Errorf("%w: SET %s to a value the WHERE clause does not pin it to (%s = the same value, in its AND) would move the row to another shard (delete and insert it instead)", ErrShardKeyUpdate, col, col), t.name, col)
		}
		if set.arg < 0 && where.arg < 0 {
			if !sameValue(set.lit, where.lit) {
				return nil, a.fail(moves, t.name, col)
			}
			continue
		}
		p.keyAssigns = append(p.keyAssigns, keyAssign{col: col, set: set, where: where})
	}
	var err error
	if p.cond, _, err = a.topLevel(p, u.TableExprs, u.Where, nil, []sqlparser.SQLNode{u.Exprs, u.OrderBy, u.Limit}); err != nil {
		return nil, err
	}
	p.pinned = a.pinned
	p.writeLimit = u.Limit != nil
	c := sqlparser.CloneStatement(u)
	if err := a.rename(c, true); err != nil {
		return nil, err
	}
	p.tmpl = buildTemplate(c, nil, false)
	return p, nil
}

// pinnedValue returns v of a condition col = v (or v = col) that the AND
// of w's top level holds, v a literal or a placeholder.
func pinnedValue(w *sqlparser.Where, col string, ours func(*sqlparser.ColName) bool) (condValue, bool) {
	if w == nil {
		return condValue{}, false
	}
	var found condValue
	ok := false
	var walk func(e sqlparser.Expr)
	walk = func(e sqlparser.Expr) {
		switch e := e.(type) {
		case *sqlparser.AndExpr:
			walk(e.Left)
			walk(e.Right)
		case *sqlparser.ComparisonExpr:
			if ok || e.Operator != sqlparser.EqualOp || e.Modifier != sqlparser.Missing {
				return
			}
			for _, side := range [2][2]sqlparser.Expr{{e.Left, e.Right}, {e.Right, e.Left}} {
				c, isCol := side[0].(*sqlparser.ColName)
				if !isCol || !ours(c) || c.Name.Lowered() != col {
					continue
				}
				if v, lit := literalValue(side[1]); lit {
					found, ok = v, true
					return
				}
			}
		}
	}
	walk(w.Expr)
	return found, ok
}

// checkKeyAssigns refuses a call whose SET value of a sharding column is
// not the value its WHERE clause pins the column to.
func (p *routePlan) checkKeyAssigns(t *routeTable, sql string, args []driver.NamedValue) error {
	for _, k := range p.keyAssigns {
		if !sameValue(k.set.value(args), k.where.value(args)) {
			return &RouteError{Table: t.name, Column: k.col, SQL: sql,
				Err: fmt.Errorf("%w: SET %s to another value than the WHERE clause's would move the row to another shard (delete and insert it instead)", ErrShardKeyUpdate, k.col)}
		}
	}
	return nil
}

// sameValue reports whether the sharding values a and b are the same
// (see above). A NULL in the WHERE clause matches no row: nothing moves.
func sameValue(set, where Value) bool {
	if where == nil {
		return true
	}
	if n, ok := asInt(set); ok {
		m, ok := asInt(where)
		return ok && n == m
	}
	if u, ok := set.(uint64); ok && u > 1<<63-1 {
		v, ok := where.(uint64)
		return ok && u == v
	}
	switch x := set.(type) {
	case string:
		switch y := where.(type) {
		case string:
			return x == y
		case []byte:
			return x == string(y)
		}
	case []byte:
		switch y := where.(type) {
		case string:
			return string(x) == y
		case []byte:
			return bytes.Equal(x, y)
		}
	case float64:
		y, ok := where.(float64)
		return ok && x == y
	case bool:
		y, ok := where.(bool)
		return ok && x == y
	case time.Time:
		y, ok := where.(time.Time)
		return ok && x.Equal(y)
	}
	return false
}

// asInt returns an integer value of any Go integer type as int64, when it
// fits.
func asInt(v Value) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint:
		if uint64(x) <= 1<<63-1 {
			return int64(x), true
		}
	case uint64:
		if x <= 1<<63-1 {
			return int64(x), true
		}
	}
	return 0, false
}
