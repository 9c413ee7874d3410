package shard

// Views over sharded tables, as ShardingSphere has them: the view is
// itself a sharded logical table, bound with the tables it selects from
// (bindingTables: [[t_order, t_order_view]]), and CREATE VIEW makes one
// view per data node over that node's physical tables:
//
//	CREATE VIEW t_order_view AS SELECT order_id, user_id FROM t_order WHERE status = 'ok'
//	→ create view t_order_view_1 as select order_id, user_id from t_order_1 as t_order where …   (per node)
//
// Queries of t_order_view then route and merge like those of any sharded
// table, which is right only when each physical view holds the rows of its
// own node and nothing else: the body must be a plain SELECT (no GROUP BY,
// aggregate, DISTINCT, HAVING, window, LIMIT, UNION, WITH or subquery over
// a sharded table), whose sharded tables are bound with the view (joined by
// their pairing columns, as any binding join), and broadcast tables. A view
// that is not a sharded table, over sharded tables, is refused: one view
// per data source could not say which node's rows it shows. DROP VIEW of
// sharded views drops each physical view, one statement per data source.

import (
	"fmt"
	"strings"

	"vitess.io/vitess/go/vt/sqlparser"
)

// checkView validates CREATE VIEW over sharded tables and returns the
// sharded tables with the view first.
func (a *analyzer) checkView(v *sqlparser.CreateView, sharded []*tableUse) ([]*tableUse, error) {
	name := strings.ToLower(v.ViewName.Name.String())
	view := a.r.tables[name]
	var sources []*tableUse
	for _, u := range sharded {
		if u.name != name {
			sources = append(sources, u)
		}
	}
	if view == nil {
		src := sources[0].name
		return nil, a.fail(unsupported("view %s over sharded table %s: the view must be a sharded table bound with %s (a view per data node)", name, src, src), name+", "+src, "")
	}
	if len(sources) == 0 || len(sources) != len(sharded)-1 {
		return nil, a.fail(unsupported("view %s that does not select from a sharded table bound with it", name), name, "")
	}
	sel, ok := v.Select.(*sqlparser.Select)
	if !ok {
		return nil, a.fail(unsupported("view %s over a UNION of sharded tables", name), name, "")
	}
	switch {
	case sel.With != nil:
		return nil, a.fail(unsupported("view %s with WITH (common table expression)", name), name, "")
	case sel.GroupBy != nil || sel.Having != nil || sel.Distinct || sqlparser.ContainsAggregation(sel.SelectExprs):
		return nil, a.fail(unsupported("view %s that groups or aggregates rows (each data node's view would group only its own rows)", name), name, "")
	case sel.Limit != nil:
		return nil, a.fail(unsupported("view %s with LIMIT (each data node's view would have its own first rows)", name), name, "")
	case sel.Windows != nil || hasWindow(sel):
		return nil, a.fail(unsupported("view %s with a window function", name), name, "")
	}
	for _, u := range sources {
		if ok, err := a.r.bindable(view, a.r.tables[u.name]); !ok || err != nil {
			return nil, a.fail(fmt.Errorf("%w: view %s over %s, which are not binding tables", ErrCrossShardJoin, name, u.name), name+", "+u.name, "")
		}
	}
	return append([]*tableUse{a.useOf[name]}, sources...), nil
}

// dropViews routes DROP VIEW of sharded or broadcast views: one statement
// per data source that drops the physical views it holds.
func (a *analyzer) dropViews(d *sqlparser.DropView) (*routePlan, error) {
	return a.perSourceWrite(d.FromTables, func(names sqlparser.TableNames) string {
		c := *d
		c.FromTables = names
		return sqlparser.String(&c)
	})
}
