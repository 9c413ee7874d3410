package shard

// Foreign keys in the DDL of a sharded table (CREATE TABLE … FOREIGN KEY
// … REFERENCES t, ALTER TABLE … ADD CONSTRAINT … REFERENCES t, a column's
// REFERENCES). The DDL runs on every data node of the table; on each, the
// referenced table must be the physical table of the same data source that
// holds the rows the keys point to:
//
//	the table itself         its own physical table (a self-reference)
//	a binding table          the physical table paired with this one (t_order_1 → t_order_item_1)
//	a broadcast table        its name (every data source has it)
//	a table of the default   its name, when every data node of the table is in the
//	data source              default data source (else the others have no such table)
//
// Anything else (a sharded table not bound with it, a default table that
// other data sources lack, a non-sharded table referencing a sharded one)
// fails with ErrCrossShardJoin naming both tables: a key to rows of other
// data nodes cannot be checked by any one server.

import (
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// ddlTarget returns the table a CREATE or ALTER TABLE defines, lower case,
// or "".
func (a *analyzer) ddlTarget() string {
	switch s := a.stmt.(type) {
	case *sqlparser.CreateTable:
		return strings.ToLower(s.Table.Name.String())
	case *sqlparser.AlterTable:
		return strings.ToLower(s.Table.Name.String())
	}
	return ""
}

// foreignKeys checks the tables of a DDL statement that only its foreign
// keys reference and returns the sharded tables with the target first and
// the other tables without those the keys may reference.
func (a *analyzer) foreignKeys(sharded, other []*tableUse) ([]*tableUse, []*tableUse, error) {
	target := a.ddlTarget()
	t := a.r.tables[target]
	if t == nil {
		for _, u := range sharded {
			if u.fk > 0 {
				return nil, nil, a.fail(fmt.Errorf("%w: a foreign key of %s, which is not sharded, to sharded table %s", ErrCrossShardJoin, target, u.name), target+", "+u.name, "")
			}
		}
		return sharded, other, nil
	}
	out := make([]*tableUse, 0, len(sharded))
	for _, u := range sharded {
		if u.name == target {
			out = append([]*tableUse{u}, out...)
			continue
		}
		if u.fk > 0 && u.top == 0 && u.all == 0 {
			if ok, _ := a.r.bindable(t, a.r.tables[u.name]); !ok {
				return nil, nil, a.fail(fmt.Errorf("%w: a foreign key of %s to %s, which are not binding tables (the rows it refers to may be on other data nodes)", ErrCrossShardJoin, target, u.name), target+", "+u.name, "")
			}
		}
		out = append(out, u)
	}
	var rest []*tableUse
	for _, u := range other {
		if u.fk == 0 || u.top > 0 || u.all > 0 {
			rest = append(rest, u)
			continue
		}
		def := a.r.rules.DefaultDataSource
		if def == "" {
			return nil, nil, a.fail(fmt.Errorf("%w: it is neither sharded nor broadcast and there is no default data source", ErrUnknownTable), u.name, "")
		}
		for _, ds := range t.ds {
			if ds != def {
				return nil, nil, a.fail(fmt.Errorf("%w: a foreign key of sharded table %s to %s, which only the default data source has (%s has data nodes in %s)", ErrCrossShardJoin, target, u.name, target, ds), target+", "+u.name, "")
			}
		}
	}
	return out, rest, nil
}

// markReferences turns the referenced tables of the foreign keys of c that
// have markers into their markers.
func (a *analyzer) markReferences(c sqlparser.SQLNode) {
	mark := func(r *sqlparser.ReferenceDefinition) {
		if r == nil {
			return
		}
		if m, ok := a.markers[strings.ToLower(r.ReferencedTable.Name.String())]; ok {
			r.ReferencedTable = tableMarker(m)
		}
	}
	_ = sqlparser.Walk(func(node sqlparser.SQLNode) (bool, error) {
		switch n := node.(type) {
		case *sqlparser.ReferenceDefinition:
			mark(n)
			return false, nil
		case *sqlparser.ColumnDefinition:
			mark(columnReference(n)) // Walk does not visit it
		}
		return true, nil
	}, c)
}
