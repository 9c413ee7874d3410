package shard

import (
	"database/sql/driver"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"vitess.io/vitess/go/vt/sqlparser"
)

// routeTestMod places an integer value v on the target whose name
// ends with "_<v mod len(targets)>"; ranges of fewer values than targets
// go to the targets of their values, wider ones everywhere.
type routeTestMod struct{}

func routeTestInt(v Value) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("test algorithm: %v (%T) is not an integer", v, v)
}

func (routeTestMod) Shard(targets []string, v Value) (string, error) {
	n, err := routeTestInt(v)
	if err != nil {
		return "", err
	}
	m := n % int64(len(targets))
	if m < 0 {
		m += int64(len(targets))
	}
	suffix := "_" + strconv.FormatInt(m, 10)
	for _, t := range targets {
		if strings.HasSuffix(t, suffix) {
			return t, nil
		}
	}
	return "", fmt.Errorf("test algorithm: no target for %d", n)
}

func (a routeTestMod) ShardRange(targets []string, r Range) ([]string, error) {
	if r.Lo == nil || r.Hi == nil {
		return targets, nil
	}
	lo, err1 := routeTestInt(r.Lo)
	hi, err2 := routeTestInt(r.Hi)
	if err1 != nil || err2 != nil {
		return targets, nil
	}
	if r.LoExclusive {
		lo++
	}
	if r.HiExclusive {
		hi--
	}
	if hi-lo+1 >= int64(len(targets)) {
		return targets, nil
	}
	var out []string
	seen := map[string]bool{}
	for v := lo; v <= hi; v++ {
		t, err := a.Shard(targets, v)
		if err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// routeTestKeys hands out 1000, 1001, … (or fails when err is set).
type routeTestKeys struct {
	mu   sync.Mutex
	next int64
	err  error
}

func (k *routeTestKeys) NextID() (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return 0, k.err
	}
	k.next++
	return 999 + k.next, nil
}

func routeTestNodes(dss, tables int, table string) []DataNode {
	var out []DataNode
	for d := 0; d < dss; d++ {
		for t := 0; t < tables; t++ {
			out = append(out, DataNode{DataSource: "ds_" + strconv.Itoa(d), Table: table + "_" + strconv.Itoa(t)})
		}
	}
	return out
}

// testRules: t_order and t_order_item on ds_0..ds_1 × _0.._3 (user_id
// picks the data source, order_id the table), bound; t_account on ds_0
// and ds_1 by user_id, one table each; t_dict broadcast; default ds_0.
func routeTestRules() (*Rules, *routeTestKeys) {
	keys := &routeTestKeys{}
	mod := routeTestMod{}
	db := &Strategy{Column: "user_id", Algorithm: mod, AlgorithmName: "db_mod"}
	tbl := &Strategy{Column: "order_id", Algorithm: mod, AlgorithmName: "table_mod"}
	r := &Rules{
		DataSources: map[string]*DataSource{
			"ds_0": {Name: "ds_0", Primary: "u:p@tcp(127.0.0.1:3306)/db_0"},
			"ds_1": {Name: "ds_1", Primary: "u:p@tcp(127.0.0.1:3307)/db_1"},
		},
		Tables: map[string]*TableRule{
			"t_order": {Logical: "t_order", DataNodes: routeTestNodes(2, 4, "t_order"),
				DatabaseStrategy: db, TableStrategy: tbl, KeyColumn: "order_id", KeyGenerator: "fake"},
			"t_order_item": {Logical: "t_order_item", DataNodes: routeTestNodes(2, 4, "t_order_item"),
				DatabaseStrategy: db, TableStrategy: tbl, KeyColumn: "item_id", KeyGenerator: "fake"},
			"t_account": {Logical: "t_account", DataNodes: []DataNode{{"ds_0", "t_account"}, {"ds_1", "t_account"}},
				DatabaseStrategy: db},
		},
		BindingGroups:     [][]string{{"t_order", "t_order_item"}},
		Broadcast:         []string{"t_dict"},
		DefaultDataSource: "ds_0",
		KeyGenerators:     map[string]KeyGenerator{"fake": keys},
	}
	return r, keys
}

func routeArgs(vals ...any) []driver.NamedValue {
	out := make([]driver.NamedValue, len(vals))
	for i, v := range vals {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

// routeFakeSource is a shard result of fixed rows.
type routeFakeSource struct {
	cols []string
	rows [][]driver.Value
}

func newRouteFakeSource(cols []string, rows [][]any) *routeFakeSource {
	s := &routeFakeSource{cols: cols}
	for _, r := range rows {
		row := make([]driver.Value, len(r))
		for i, v := range r {
			row[i] = v
		}
		s.rows = append(s.rows, row)
	}
	return s
}

func (s *routeFakeSource) Columns() []string { return s.cols }
func (s *routeFakeSource) Close() error      { return nil }
func (s *routeFakeSource) Next(dest []driver.Value) error {
	if len(s.rows) == 0 {
		return io.EOF
	}
	copy(dest, s.rows[0])
	s.rows = s.rows[1:]
	return nil
}

// routeDrain reads every row of src.
func routeDrain(t *testing.T, src rowSource) [][]driver.Value {
	t.Helper()
	var out [][]driver.Value
	for {
		row := make([]driver.Value, len(src.Columns()))
		err := src.Next(row)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, row)
	}
}

// routeUnparsed reports whether sql is a table maintenance statement
// (ANALYZE, CHECK, CHECKSUM, OPTIMIZE, REPAIR TABLE), whose forms of several
// tables vitess does not parse.
func routeUnparsed(sql string) bool { return NewRouter(nil).adminVerb(sql) != "" }

// routeCheckMerge checks that merge accepts the route's plan for the
// columns the units' SQL selects (each '*' counted as three columns).
func routeCheckMerge(rt *Route) error {
	if rt.merge == nil {
		if len(rt.Units) > 1 && !rt.Write {
			return fmt.Errorf("%d read units without merge plan", len(rt.Units))
		}
		return nil
	}
	if routeUnparsed(rt.Units[0].SQL) {
		// ANALYZE, CHECK …: the servers' rows one after the other.
		sources := make([]rowSource, len(rt.Units))
		for i := range sources {
			sources[i] = newRouteFakeSource([]string{"Table", "Op", "Msg_type", "Msg_text"}, nil)
		}
		m, err := merge(*rt.mergePlanFor(4), sources)
		if err != nil {
			return err
		}
		return m.Close()
	}
	stmt, err := sqlparser.NewTestParser().Parse(rt.Units[0].SQL)
	if err != nil {
		return err
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok {
		return fmt.Errorf("merge plan for %T", stmt)
	}
	ncols := 0
	for _, e := range sel.SelectExprs.Exprs {
		if _, star := e.(*sqlparser.StarExpr); star {
			ncols += 3
		} else {
			ncols++
		}
	}
	cols := make([]string, ncols)
	for i := range cols {
		cols[i] = "c" + strconv.Itoa(i)
	}
	sources := make([]rowSource, len(rt.Units))
	for i := range sources {
		sources[i] = newRouteFakeSource(cols, nil)
	}
	m, err := merge(*rt.mergePlanFor(ncols), sources)
	if err != nil {
		return err
	}
	return m.Close()
}
