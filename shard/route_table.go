package shard

// The router's view of a sharded table: its data nodes grouped by data
// source, the targets its algorithms choose among, and node sets as
// bitsets over its nodes.
//
// The nodes of the tables of one binding group are put in one order: the
// i-th node of every member has the same data source and the same
// position among that data source's tables (t_order_1 ↔ t_order_item_1),
// so the node sets of members combine with a bitwise AND.

import (
	"fmt"
	"sort"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

type routeTable struct {
	name  string // logical, lower case
	rule  *TableRule
	nodes []DataNode // in binding order (see above)
	phys  []string   // escaped physical table name per node
	words int        // uint64 words of a node set

	ds       []string         // data sources in order of first appearance
	dsIndex  map[string]int   // data source → position in ds
	dsNodes  [][]int          // per data source: its nodes, in order
	dsTables [][]string       // per data source: its table names, in order
	nodeOf   []map[string]int // per data source: table name → node
	dsMask   [][]uint64       // per data source: node set
	full     []uint64         // every node
	sameTabs bool             // every data source has the same table names
	dbCol    string           // sharding column of the database strategy, or ""
	tblCol   string           // sharding column of the table strategy, or ""
	group    int              // binding group, or -1
	err      error            // the rule cannot route (no data nodes)
}

func (r *Router) buildTables() {
	seen := make(map[string]bool)
	for _, ds := range r.dsNames {
		seen[ds] = true
	}
	addDS := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			r.dsNames = append(r.dsNames, name)
		}
	}
	for name, rule := range r.rules.Tables {
		if rule == nil {
			continue
		}
		t := &routeTable{name: strings.ToLower(name), rule: rule, group: -1}
		t.nodes = append([]DataNode(nil), rule.DataNodes...)
		if rule.DatabaseStrategy != nil {
			t.dbCol = strings.ToLower(rule.DatabaseStrategy.Column)
		}
		if rule.TableStrategy != nil {
			t.tblCol = strings.ToLower(rule.TableStrategy.Column)
		}
		switch {
		case len(t.nodes) == 0:
			t.err = fmt.Errorf("table %s has no data nodes", t.name)
		case rule.DatabaseStrategy != nil && rule.DatabaseStrategy.Algorithm == nil:
			t.err = fmt.Errorf("the database strategy of table %s has no algorithm", t.name)
		case rule.TableStrategy != nil && rule.TableStrategy.Algorithm == nil:
			t.err = fmt.Errorf("the table strategy of table %s has no algorithm", t.name)
		}
		for _, n := range t.nodes {
			addDS(n.DataSource)
		}
		r.tables[t.name] = t
	}
	addDS(r.rules.DefaultDataSource)
	sort.Strings(r.dsNames)
	r.readDS = r.rules.DefaultDataSource
	if r.readDS == "" && len(r.dsNames) > 0 {
		r.readDS = r.dsNames[0]
	}

	// Binding groups: align every member's nodes on the group's first
	// table.
	r.groupErr = make([]error, len(r.rules.BindingGroups))
	for g, names := range r.rules.BindingGroups {
		var lead *routeTable
		for _, name := range names {
			t := r.tables[strings.ToLower(name)]
			if t == nil || t.group >= 0 {
				continue
			}
			t.group = g
			if lead == nil {
				lead = t
				continue
			}
			if err := alignNodes(lead, t); err != nil && r.groupErr[g] == nil {
				r.groupErr[g] = err
			}
		}
	}
	for _, t := range r.tables {
		t.index()
	}
}

// alignNodes puts t's nodes in lead's order: same data source, same
// position within the data source.
func alignNodes(lead, t *routeTable) error {
	pos := func(nodes []DataNode) map[DataNode]int {
		m := make(map[DataNode]int, len(nodes))
		count := make(map[string]int)
		for _, n := range nodes {
			m[n] = count[n.DataSource]
			count[n.DataSource]++
		}
		return m
	}
	if len(lead.nodes) != len(t.nodes) {
		return fmt.Errorf("binding tables %s and %s have %d and %d data nodes", lead.name, t.name, len(lead.nodes), len(t.nodes))
	}
	byPos := make(map[string][]DataNode)
	for _, n := range t.nodes {
		byPos[n.DataSource] = append(byPos[n.DataSource], n)
	}
	leadPos := pos(lead.nodes)
	aligned := make([]DataNode, len(lead.nodes))
	for i, n := range lead.nodes {
		list := byPos[n.DataSource]
		k := leadPos[n]
		if k >= len(list) {
			return fmt.Errorf("binding tables %s and %s have different tables in data source %s", lead.name, t.name, n.DataSource)
		}
		aligned[i] = list[k]
	}
	t.nodes = aligned
	return nil
}

// index computes the lookup structures from t.nodes.
func (t *routeTable) index() {
	n := len(t.nodes)
	t.words = (n + 63) / 64
	if t.words == 0 {
		t.words = 1
	}
	t.full = make([]uint64, t.words)
	t.dsIndex = make(map[string]int)
	t.phys = make([]string, n)
	for i, node := range t.nodes {
		t.full[i/64] |= 1 << (i % 64)
		t.phys[i] = escapeTableName(node.Table)
		d, ok := t.dsIndex[node.DataSource]
		if !ok {
			d = len(t.ds)
			t.dsIndex[node.DataSource] = d
			t.ds = append(t.ds, node.DataSource)
			t.dsNodes = append(t.dsNodes, nil)
			t.dsTables = append(t.dsTables, nil)
			t.nodeOf = append(t.nodeOf, make(map[string]int))
			t.dsMask = append(t.dsMask, make([]uint64, t.words))
		}
		t.dsNodes[d] = append(t.dsNodes[d], i)
		t.dsTables[d] = append(t.dsTables[d], node.Table)
		t.nodeOf[d][node.Table] = i
		t.dsMask[d][i/64] |= 1 << (i % 64)
	}
	t.sameTabs = true
	for d := 1; d < len(t.ds); d++ {
		if !equalStrings(t.dsTables[d], t.dsTables[0]) {
			t.sameTabs = false
			break
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// escapeTableName quotes a table name for SQL when it needs it.
func escapeTableName(name string) string {
	return sqlparser.String(sqlparser.NewIdentifierCS(name))
}

// shardingColumns names t's sharding columns for messages.
func (t *routeTable) shardingColumns() string {
	switch {
	case t.dbCol != "" && t.tblCol != "" && t.dbCol != t.tblCol:
		return t.dbCol + ", " + t.tblCol
	case t.dbCol != "":
		return t.dbCol
	default:
		return t.tblCol
	}
}

// hasColumn reports whether col shards t.
func (t *routeTable) hasColumn(col string) bool {
	return col != "" && (col == t.dbCol || col == t.tblCol)
}

// bindable reports whether a and b route together.
func (r *Router) bindable(a, b *routeTable) (bool, error) {
	if a.group < 0 || a.group != b.group || a == b {
		return false, nil
	}
	return true, r.groupErr[a.group]
}
