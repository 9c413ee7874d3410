package shard

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"vitess.io/vitess/go/vt/sqlparser"
)

// expandWeights replaces each WEIGHT(x) in an expected SQL text by the
// weight column the rewriter derives for x (weightExpr), which is too long
// to spell out in every case.
func expandWeights(sql string) string {
	var b strings.Builder
	for {
		i := strings.Index(sql, "WEIGHT(")
		if i < 0 {
			b.WriteString(sql)
			return b.String()
		}
		b.WriteString(sql[:i])
		depth, j := 0, i+len("WEIGHT")
		for ; j < len(sql); j++ {
			if sql[j] == '(' {
				depth++
			} else if sql[j] == ')' {
				if depth--; depth == 0 {
					break
				}
			}
		}
		e, err := sqlparser.NewTestParser().ParseExpr(sql[i+len("WEIGHT(") : j])
		if err != nil {
			panic(err)
		}
		buf := sqlparser.NewTrackedBuffer(func(buf *sqlparser.TrackedBuffer, n sqlparser.SQLNode) {
			if _, ok := n.(*sqlparser.Argument); ok {
				buf.WriteByte('?') // as the templates print placeholders
				return
			}
			n.Format(buf)
		})
		buf.Myprintf("%v", weightExpr(e))
		b.WriteString(buf.String())
		sql = sql[j+1:]
	}
}

// ds1 lists the four t_order units of data source ds_1 (user_id = 1).
func routeDS1(format string, args ...any) []unitWant {
	var out []unitWant
	for t := 0; t < 4; t++ {
		out = append(out, unitWant{ds: "ds_1", sql: strings.ReplaceAll(format, "%s", fmt.Sprintf("t_order_%d", t)), args: args})
	}
	return out
}

func TestRewriteMultiShardSelect(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "LIMIT o, n → LIMIT 0, o+n", sql: "SELECT id FROM t_order WHERE user_id = 1 ORDER BY id LIMIT 10, 5",
			reason: ReasonMultiShard,
			units:  routeDS1("select id, WEIGHT(id) from %s where user_id = 1 order by id asc limit 0, 15"),
			merge:  &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, Offset: 10, Limit: 5, Visible: 1, Weights: []weight{{0, 1}}},
		},
		{
			name: "LIMIT ?, ? → LIMIT 0, ?", sql: "SELECT id FROM t_order WHERE user_id = ? ORDER BY id DESC LIMIT ?, ?",
			args: []any{int64(1), int64(20), int64(10)}, reason: ReasonMultiShard,
			units: routeDS1("select id, WEIGHT(id) from %s where user_id = ? order by id desc limit 0, ?", int64(1), int64(30)),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0, Desc: true}}, Offset: 20, Limit: 10, Visible: 1, Weights: []weight{{0, 1}}},
		},
		{
			name: "LIMIT n OFFSET o", sql: "SELECT id FROM t_order WHERE user_id = 1 LIMIT 5 OFFSET ?", args: []any{int64(2)},
			reason: ReasonMultiShard,
			units:  routeDS1("select id from %s where user_id = 1 limit 0, ?", int64(7)),
			merge:  &mergePlan{Offset: 2, Limit: 5},
		},
		{
			name: "LIMIT o, 18446744073709551615", sql: "SELECT id FROM t_order WHERE user_id = 1 ORDER BY id LIMIT 5, 18446744073709551615",
			reason: ReasonMultiShard,
			units:  routeDS1("select id, WEIGHT(id) from %s where user_id = 1 order by id asc limit 0, 9223372036854775807"),
			merge:  &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, Offset: 5, Limit: math.MaxInt64, Visible: 1, Weights: []weight{{0, 1}}},
		},
		{
			name: "LIMIT n", sql: "SELECT id FROM t_order WHERE user_id = 1 LIMIT ?", args: []any{int64(3)},
			reason: ReasonMultiShard,
			units:  routeDS1("select id from %s where user_id = 1 limit ?", int64(3)),
			merge:  &mergePlan{Limit: 3},
		},
		{
			name: "ORDER BY a column not selected: derived", sql: "SELECT id, status FROM t_order WHERE user_id = 1 ORDER BY created DESC, id",
			reason: ReasonMultiShard,
			units:  routeDS1("select id, `status`, created, WEIGHT(created), WEIGHT(id) from %s where user_id = 1 order by created desc, id asc"),
			merge:  &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 2, Desc: true}, {Index: 0}}, Limit: noLimit, Visible: 2, Weights: []weight{{2, 3}, {0, 4}}},
		},
		{
			name: "ORDER BY alias and position", sql: "SELECT id AS i, amount * 2 AS double FROM t_order WHERE user_id = 1 ORDER BY double DESC, 1",
			reason: ReasonMultiShard,
			units:  routeDS1("select id as i, amount * 2 as `double`, WEIGHT(id) from %s where user_id = 1 order by `double` desc, 1 asc"),
			merge:  &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 1, Desc: true}, {Index: 0}}, Limit: noLimit, Visible: 2, Weights: []weight{{0, 2}}},
		},
		{
			name: "ORDER BY a qualified column matches the unqualified one", sql: "SELECT o.id FROM t_order o WHERE o.user_id = 1 ORDER BY id",
			reason: ReasonMultiShard,
			units:  routeDS1("select o.id, WEIGHT(o.id) from %s as o where o.user_id = 1 order by id asc"),
			merge:  &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, Limit: noLimit, Visible: 1, Weights: []weight{{0, 1}}},
		},
		{
			name:   "SELECT * with ORDER BY: derived after *, counted from the end",
			sql:    "SELECT * FROM t_order WHERE user_id = 1 ORDER BY created LIMIT 5",
			reason: ReasonMultiShard,
			units:  routeDS1("select *, created, WEIGHT(created) from %s where user_id = 1 order by created asc limit 5"),
			merge:  &mergePlan{Collated: true, OrderBy: []orderKey{{Index: -2}}, Limit: 5, Visible: -2, Weights: []weight{{-2, -1}}},
		},
		{
			name: "SELECT * without derived columns", sql: "SELECT * FROM t_order WHERE user_id = 1",
			reason: ReasonMultiShard,
			units:  routeDS1("select * from %s where user_id = 1"),
			merge:  &mergePlan{Limit: noLimit},
		},
		{
			name:   "GROUP BY without ORDER BY: ORDER BY the group columns",
			sql:    "SELECT status, COUNT(*), SUM(amount), MIN(amount), MAX(amount) FROM t_order WHERE user_id = 1 GROUP BY status LIMIT 3",
			reason: ReasonMultiShard,
			units:  routeDS1("select `status`, count(*), sum(amount), min(amount), max(amount), WEIGHT(min(amount)), WEIGHT(max(amount)), WEIGHT(`status`) from %s where user_id = 1 group by `status` order by `status` asc limit 3"),
			merge: &mergePlan{Collated: true,
				OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
				Aggregates: []aggregate{{Kind: aggCount, Index: 1}, {Kind: aggSum, Index: 2}, {Kind: aggMin, Index: 3}, {Kind: aggMax, Index: 4}},
				Limit:      3, Visible: 5, Weights: []weight{{3, 5}, {4, 6}, {0, 7}},
			},
		},
		{
			name: "GROUP BY a column not selected", sql: "SELECT COUNT(*) FROM t_order WHERE user_id = 1 GROUP BY status",
			reason: ReasonMultiShard,
			units:  routeDS1("select count(*), `status`, WEIGHT(`status`) from %s where user_id = 1 group by `status` order by `status` asc"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 1}}, GroupBy: []int{1},
				Aggregates: []aggregate{{Kind: aggCount, Index: 0}}, Limit: noLimit, Visible: 1, Weights: []weight{{1, 2}}},
		},
		{
			name: "AVG: SUM and COUNT derived", sql: "SELECT user_id, AVG(amount) AS a FROM t_order WHERE user_id IN (1, 2) GROUP BY user_id",
			reason: ReasonMultiShard,
			units:  routeEvery8("select user_id, avg(amount) as a, sum(amount), count(amount), WEIGHT(user_id) from %s where user_id in (1, 2) group by user_id order by user_id asc"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
				Aggregates: []aggregate{{Kind: aggAvg, Index: 1, SumIndex: 2, CountIndex: 3}, {Kind: aggSum, Index: 2}, {Kind: aggCount, Index: 3}},
				Limit:      noLimit, Visible: 2, Weights: []weight{{0, 4}}},
		},
		{
			name:   "GROUP BY with ORDER BY an aggregate: grouped in memory, no LIMIT on the shards",
			sql:    "SELECT status, COUNT(*) AS n FROM t_order WHERE user_id = 1 GROUP BY status ORDER BY n DESC LIMIT 2, 3",
			reason: ReasonMultiShard,
			units:  routeDS1("select `status`, count(*) as n, WEIGHT(`status`) from %s where user_id = 1 group by `status` order by n desc"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 1, Desc: true}}, GroupBy: []int{0},
				Aggregates: []aggregate{{Kind: aggCount, Index: 1}}, Offset: 2, Limit: 3, Visible: 2, Weights: []weight{{0, 2}}},
		},
		{
			name:   "ORDER BY an aggregate not selected: hidden aggregate",
			sql:    "SELECT status FROM t_order WHERE user_id = 1 GROUP BY status ORDER BY SUM(amount) DESC",
			reason: ReasonMultiShard,
			units:  routeDS1("select `status`, WEIGHT(`status`), sum(amount) from %s where user_id = 1 group by `status` order by sum(amount) desc"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 2, Desc: true}}, GroupBy: []int{0},
				Aggregates: []aggregate{{Kind: aggSum, Index: 2}}, Limit: noLimit, Visible: 1, Weights: []weight{{0, 1}}},
		},
		{
			name: "aggregates without GROUP BY", sql: "SELECT COUNT(*), MAX(created) FROM t_order",
			reason: ReasonAllShards,
			units:  routeEvery8("select count(*), max(created), WEIGHT(max(created)) from %s"),
			merge: &mergePlan{Collated: true, Aggregates: []aggregate{{Kind: aggCount, Index: 0}, {Kind: aggMax, Index: 1}}, Limit: noLimit,
				Visible: 2, Weights: []weight{{1, 2}}},
		},
		{
			name: "DISTINCT", sql: "SELECT DISTINCT status FROM t_order WHERE user_id = 1 ORDER BY status LIMIT 4",
			reason: ReasonMultiShard,
			units:  routeDS1("select distinct `status`, WEIGHT(`status`) from %s where user_id = 1 order by `status` asc limit 4"),
			merge:  &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, Distinct: true, Limit: 4, Visible: 1, Weights: []weight{{0, 1}}},
		},
		{
			name:   "DISTINCT with a derived column: no LIMIT on the shards",
			sql:    "SELECT DISTINCT status FROM t_order WHERE user_id = 1 ORDER BY created LIMIT 4",
			reason: ReasonMultiShard,
			units:  routeDS1("select distinct `status`, created, WEIGHT(created), WEIGHT(`status`) from %s where user_id = 1 order by created asc"),
			merge:  &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 1}}, Distinct: true, Limit: 4, Visible: 1, Weights: []weight{{1, 2}, {0, 3}}},
		},
		{
			name: "ORDER BY NULL is no order", sql: "SELECT user_id, COUNT(*) FROM t_order GROUP BY user_id ORDER BY NULL",
			reason: ReasonAllShards,
			units:  routeEvery8("select user_id, count(*), WEIGHT(user_id) from %s group by user_id order by user_id asc"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
				Aggregates: []aggregate{{Kind: aggCount, Index: 1}}, Limit: noLimit, Visible: 2, Weights: []weight{{0, 2}}},
		},
		{
			name: "placeholders in derived columns are duplicated with their arguments",
			sql:  "SELECT id FROM t_order WHERE user_id = ? ORDER BY amount > ? DESC", args: []any{int64(1), int64(100)},
			reason: ReasonMultiShard,
			units:  routeDS1("select id, amount > ? from %s where user_id = ? order by amount > ? desc", int64(100), int64(1), int64(100)),
			merge:  &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 1, Desc: true}}, Limit: noLimit, Visible: 1},
		},
		{
			name:   "HAVING on one shard is fine",
			sql:    "SELECT status, COUNT(*) FROM t_order WHERE user_id = 1 AND order_id = 1 GROUP BY status HAVING COUNT(*) > 1",
			reason: ReasonSingleShard,
			units:  []unitWant{{"ds_1", "select `status`, count(*) from t_order_1 where user_id = 1 and order_id = 1 group by `status` having count(*) > 1", nil}},
		},
		{
			name:   "ORDER BY SUM(x) uses the SUM derived for AVG(x)",
			sql:    "SELECT user_id, AVG(amount) FROM t_order WHERE user_id = 1 GROUP BY user_id ORDER BY SUM(amount) DESC",
			reason: ReasonMultiShard,
			units:  routeDS1("select user_id, avg(amount), sum(amount), count(amount), WEIGHT(user_id) from %s where user_id = 1 group by user_id order by sum(amount) desc"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 2, Desc: true}}, GroupBy: []int{0},
				Aggregates: []aggregate{{Kind: aggAvg, Index: 1, SumIndex: 2, CountIndex: 3}, {Kind: aggSum, Index: 2}, {Kind: aggCount, Index: 3}},
				Limit:      noLimit, Visible: 2, Weights: []weight{{0, 4}}},
		},
		{name: "GROUP BY an aggregate's alias", sql: "SELECT COUNT(*) AS n FROM t_order GROUP BY n", err: ErrUnsupported, errHas: []string{"GROUP BY an aggregate"}},
		{
			name: "HAVING: aggregate conditions to the merge, group-column ones stay, no LIMIT on the shards",
			sql:  "SELECT status, COUNT(*) FROM t_order WHERE user_id = 1 GROUP BY status HAVING COUNT(*) > ? AND status <> 'x' ORDER BY status LIMIT ?",
			args: []any{int64(3), int64(7)}, reason: ReasonMultiShard,
			units: routeDS1("select `status`, count(*), WEIGHT(`status`) from %s where user_id = 1 group by `status` having `status` != 'x' order by `status` asc"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0}, Aggregates: []aggregate{{Kind: aggCount, Index: 1}},
				Having: &havingExpr{Op: havingCompare, Cmp: ">", Left: havingOperand{Column: 1}, Right: havingOperand{Const: true, Value: int64(3)}},
				Limit:  7, Visible: 2, Weights: []weight{{0, 2}}},
		},
		{
			name:   "HAVING on an alias, aggregates not selected, OR, NOT, IS NULL",
			sql:    "SELECT status, SUM(amount) AS s FROM t_order WHERE user_id = 1 GROUP BY status HAVING s >= 10.5 OR MAX(amount) IS NULL OR NOT AVG(amount) < -2",
			reason: ReasonMultiShard,
			units:  routeDS1("select `status`, sum(amount) as s, WEIGHT(`status`), max(amount), WEIGHT(max(amount)), avg(amount), sum(amount), count(amount) from %s where user_id = 1 group by `status` order by `status` asc"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
				Aggregates: []aggregate{{Kind: aggSum, Index: 1}, {Kind: aggMax, Index: 3}, {Kind: aggAvg, Index: 5, SumIndex: 6, CountIndex: 7},
					{Kind: aggSum, Index: 6}, {Kind: aggCount, Index: 7}},
				Having: &havingExpr{Op: havingOr, Sub: []havingExpr{
					{Op: havingOr, Sub: []havingExpr{
						{Op: havingCompare, Cmp: ">=", Left: havingOperand{Column: 1}, Right: havingOperand{Const: true, Value: []byte("10.5")}},
						{Op: havingIsNull, Left: havingOperand{Column: 3}},
					}},
					{Op: havingNot, Sub: []havingExpr{{Op: havingCompare, Cmp: "<", Left: havingOperand{Column: 5}, Right: havingOperand{Const: true, Value: int64(-2)}}}},
				}},
				Limit: noLimit, Visible: 2, Weights: []weight{{0, 2}, {3, 4}}},
		},
		{
			name: "HAVING COUNT(DISTINCT) without GROUP BY", sql: "SELECT COUNT(*) FROM t_order WHERE user_id = 1 HAVING COUNT(DISTINCT status) > 1",
			reason: ReasonMultiShard,
			units:  routeDS1("select count(*), count(distinct `status`), `status`, WEIGHT(`status`) from %s where user_id = 1 group by `status`"),
			merge: &mergePlan{Collated: true, Aggregates: []aggregate{{Kind: aggCount, Index: 0}, {Kind: aggCount, Index: 1, Distinct: true, ArgIndex: 2}},
				Having: &havingExpr{Op: havingCompare, Cmp: ">", Left: havingOperand{Column: 1}, Right: havingOperand{Const: true, Value: int64(1)}},
				Limit:  noLimit, Visible: 1, Weights: []weight{{2, 3}}},
		},
		{
			name: "HAVING without aggregates stays on the shards", sql: "SELECT status, COUNT(*) FROM t_order WHERE user_id = 1 GROUP BY status HAVING status IN ('a', 'b') LIMIT 2",
			reason: ReasonMultiShard,
			units:  routeDS1("select `status`, count(*), WEIGHT(`status`) from %s where user_id = 1 group by `status` having `status` in ('a', 'b') order by `status` asc limit 2"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0}, Aggregates: []aggregate{{Kind: aggCount, Index: 1}},
				Limit: 2, Visible: 2, Weights: []weight{{0, 2}}},
		},
		{name: "HAVING arithmetic", sql: "SELECT status FROM t_order GROUP BY status HAVING COUNT(*) + 1 > 2", err: ErrUnsupported, errHas: []string{"HAVING operand count(*) + 1"}},
		{
			name:   "HAVING compares text: both operands' weights in the comparison's collation",
			sql:    "SELECT status FROM t_order WHERE user_id = 1 GROUP BY status HAVING MAX(note) = 'a' OR MIN(note) < ?",
			args:   []any{"b"},
			reason: ReasonMultiShard,
			units: routeDS1("select `status`, WEIGHT(`status`), max(note), WEIGHT(max(note)), WEIGHT(if(false, 'a', max(note))), WEIGHT(if(false, max(note), 'a')), "+
				"min(note), WEIGHT(min(note)), WEIGHT(if(false, ?, min(note))), WEIGHT(if(false, min(note), ?)) from %s where user_id = 1 group by `status` order by `status` asc",
				"b", "b", "b", "b", "b", "b", "b", "b", "b", "b", "b", "b", "b", "b", "b", "b"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
				Aggregates: []aggregate{{Kind: aggMax, Index: 2}, {Kind: aggMin, Index: 6}},
				Having: &havingExpr{Op: havingOr, Sub: []havingExpr{
					{Op: havingCompare, Cmp: "=", Left: havingOperand{Column: 2, Weighted: true, Weight: 4}, Right: havingOperand{Const: true, Value: []byte("a"), Weighted: true, Weight: 5}},
					{Op: havingCompare, Cmp: "<", Left: havingOperand{Column: 6, Weighted: true, Weight: 8}, Right: havingOperand{Const: true, Value: "b", Weighted: true, Weight: 9}},
				}},
				Limit: noLimit, Visible: 1, Weights: []weight{{0, 1}, {2, 3}, {6, 7}}},
		},
		{name: "HAVING string literal of a function", sql: "SELECT status FROM t_order GROUP BY status HAVING MAX(note) = CONCAT('a', 'b')", err: ErrUnsupported, errHas: []string{"HAVING operand CONCAT"}},
		{name: "HAVING IN", sql: "SELECT status FROM t_order GROUP BY status HAVING COUNT(*) IN (1, 2)", err: ErrUnsupported, errHas: []string{"HAVING comparison in"}},
		{name: "HAVING with *", sql: "SELECT *, COUNT(*) FROM t_order GROUP BY status HAVING COUNT(*) > 2", err: ErrUnsupported, errHas: []string{"HAVING on aggregates with *"}},
		{
			name: "COUNT(DISTINCT): the shards group by the argument", sql: "SELECT COUNT(DISTINCT user_id) FROM t_order WHERE user_id = 1 LIMIT 1",
			reason: ReasonMultiShard,
			units:  routeDS1("select count(distinct user_id), user_id, WEIGHT(user_id) from %s where user_id = 1 group by user_id"),
			merge: &mergePlan{Collated: true, Aggregates: []aggregate{{Kind: aggCount, Index: 0, Distinct: true, ArgIndex: 1}},
				Limit: 1, Visible: 1, Weights: []weight{{1, 2}}},
		},
		{
			name:   "COUNT/SUM/AVG(DISTINCT) with GROUP BY, ORDER BY, LIMIT",
			sql:    "SELECT status, COUNT(DISTINCT note), SUM(DISTINCT amount), AVG(DISTINCT amount), COUNT(*) FROM t_order WHERE user_id = 1 GROUP BY status ORDER BY status LIMIT 2",
			reason: ReasonMultiShard,
			units: routeDS1("select `status`, count(distinct note), sum(distinct amount), avg(distinct amount), count(*), note, WEIGHT(note), amount, WEIGHT(amount), " +
				"sum(distinct amount), count(distinct amount), WEIGHT(`status`) from %s where user_id = 1 group by `status`, note, amount order by `status` asc"),
			merge: &mergePlan{Collated: true,
				OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
				Aggregates: []aggregate{
					{Kind: aggCount, Index: 1, Distinct: true, ArgIndex: 5},
					{Kind: aggSum, Index: 2, Distinct: true, ArgIndex: 7},
					{Kind: aggAvg, Index: 3, SumIndex: 9, CountIndex: 10, Distinct: true, ArgIndex: 7},
					{Kind: aggSum, Index: 9, Distinct: true, ArgIndex: 7},
					{Kind: aggCount, Index: 10, Distinct: true, ArgIndex: 7},
					{Kind: aggCount, Index: 4},
				},
				Limit: 2, Visible: 5, Weights: []weight{{5, 6}, {7, 8}, {0, 11}},
			},
		},
		{
			name: "ORDER BY a COUNT(DISTINCT) alias", sql: "SELECT status, COUNT(DISTINCT amount) AS n FROM t_order WHERE user_id = 1 GROUP BY status ORDER BY n DESC LIMIT 1",
			reason: ReasonMultiShard,
			units:  routeDS1("select `status`, count(distinct amount) as n, amount, WEIGHT(amount), WEIGHT(`status`) from %s where user_id = 1 group by `status`, amount order by n desc"),
			merge: &mergePlan{Collated: true, OrderBy: []orderKey{{Index: 1, Desc: true}}, GroupBy: []int{0},
				Aggregates: []aggregate{{Kind: aggCount, Index: 1, Distinct: true, ArgIndex: 2}},
				Limit:      1, Visible: 2, Weights: []weight{{2, 3}, {0, 4}}},
		},
		{name: "COUNT(DISTINCT a, b)", sql: "SELECT COUNT(DISTINCT user_id, status) FROM t_order", err: ErrUnsupported, errHas: []string{"COUNT(DISTINCT …) of 2 expressions"}},
		{name: "GROUP_CONCAT", sql: "SELECT GROUP_CONCAT(note) FROM t_order", err: ErrUnsupported, errHas: []string{"GROUP_CONCAT"}},
		{name: "aggregate in an expression", sql: "SELECT COUNT(*) + 1 FROM t_order", err: ErrUnsupported, errHas: []string{"inside an expression"}},
		{name: "window function", sql: "SELECT id, ROW_NUMBER() OVER (ORDER BY id) FROM t_order", err: ErrUnsupported, errHas: []string{"window function"}},
		{name: "WITH ROLLUP", sql: "SELECT user_id, COUNT(*) FROM t_order GROUP BY user_id WITH ROLLUP", err: ErrUnsupported, errHas: []string{"ROLLUP"}},
		{name: "SQL_CALC_FOUND_ROWS", sql: "SELECT SQL_CALC_FOUND_ROWS id FROM t_order LIMIT 1", err: ErrUnsupported, errHas: []string{"SQL_CALC_FOUND_ROWS"}},
		{name: "LIMIT with an expression", sql: "SELECT id FROM t_order LIMIT 1 + 1", err: ErrUnsupported},
	})
}

// TestMergePlanFor resolves indexes counted from the end once the width
// of the shard rows is known.
func TestMergePlanFor(t *testing.T) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	rt, err := r.Route("SELECT o.*, i.note, AVG(i.qty) FROM t_order o JOIN t_order_item i USING (order_id) WHERE o.user_id = 1 GROUP BY o.status ORDER BY i.note", nil)
	require.NoError(t, err)
	assert.Equal(t, expandWeights("select o.*, i.note, avg(i.qty), sum(i.qty), count(i.qty), o.`status`, WEIGHT(o.`status`), WEIGHT(i.note) from t_order_0 as o join t_order_item_0 as i using (order_id) where o.user_id = 1 group by o.`status` order by i.note asc"),
		rt.Units[0].SQL)
	// Shard rows: 5 columns of o.*, note, avg, sum, count, status and the
	// weight strings of status and note = 12.
	assert.Equal(t, &mergePlan{Collated: true,
		OrderBy:    []orderKey{{Index: -7}},
		GroupBy:    []int{-3},
		Aggregates: []aggregate{{Kind: aggAvg, Index: -6, SumIndex: -5, CountIndex: -4}, {Kind: aggSum, Index: -5}, {Kind: aggCount, Index: -4}},
		Limit:      noLimit,
		Visible:    -5,
		Weights:    []weight{{-3, -2}, {-7, -1}},
	}, rt.merge)
	assert.Equal(t, &mergePlan{Collated: true,
		OrderBy:    []orderKey{{Index: 5}},
		GroupBy:    []int{9},
		Aggregates: []aggregate{{Kind: aggAvg, Index: 6, SumIndex: 7, CountIndex: 8}, {Kind: aggSum, Index: 7}, {Kind: aggCount, Index: 8}},
		Limit:      noLimit,
		Visible:    7,
		Weights:    []weight{{9, 10}, {5, 11}},
	}, rt.mergePlanFor(12))

	// Without '*' mergePlanFor is the merge plan itself; without one nil.
	rt, err = r.Route("SELECT id FROM t_order ORDER BY created", nil)
	require.NoError(t, err)
	assert.Same(t, rt.merge, rt.mergePlanFor(2))
	rt, err = r.Route("SELECT id FROM t_order WHERE user_id = 1 AND order_id = 1", nil)
	require.NoError(t, err)
	assert.Nil(t, rt.mergePlanFor(1))

	// An aggregate between two stars has no known index.
	_, err = r.Route("SELECT o.*, COUNT(*), i.* FROM t_order o JOIN t_order_item i USING (order_id) GROUP BY o.id", nil)
	assert.ErrorIs(t, err, ErrUnsupported)
}

// TestRewriteMergeEndToEnd runs the merge on fake shard results of a
// rewritten statement: the plan the router builds is one merge accepts
// and answers right with.
func TestRewriteMergeEndToEnd(t *testing.T) {
	rules, _ := routeTestRules()
	r := NewRouter(rules)
	rt, err := r.Route("SELECT status, AVG(amount) FROM t_order WHERE user_id = 1 GROUP BY status ORDER BY status LIMIT 1, 1", nil)
	require.NoError(t, err)
	require.Len(t, rt.Units, 4)
	cols := []string{"status", "avg(amount)", "sum(amount)", "count(amount)", "WEIGHT(`status`)"}
	// status a: amounts 1,2 on shard 0 and 3 on shard 1; b: 10 on shard 2; c: 4 on shard 3.
	shards := [][][]any{
		{{"a", "1.5000", int64(3), int64(2), padWeight("A")}},
		{{"a", "3.0000", int64(3), int64(1), padWeight("A")}},
		{{"b", "10.0000", int64(10), int64(1), padWeight("B")}},
		{{"c", "4.0000", int64(4), int64(1), padWeight("C")}},
	}
	var sources []rowSource
	for _, rows := range shards {
		sources = append(sources, newRouteFakeSource(cols, rows))
	}
	plan := *rt.mergePlanFor(len(cols))
	plan.ColumnTypes = []string{"VARCHAR", "DECIMAL", "DECIMAL", "BIGINT", "VARBINARY"}
	m, err := merge(plan, sources)
	require.NoError(t, err)
	got := routeDrain(t, m)
	// Offset 1 skips group a; one row: b with AVG 10.
	require.Len(t, got, 1)
	assert.Equal(t, "b", got[0][0])
	assert.Equal(t, "10.0000", fmt.Sprintf("%s", got[0][1]))
	assert.Equal(t, []string{"status", "avg(amount)"}, m.Columns())
}

func TestRewriteInsert(t *testing.T) {
	runRouteCases(t, []routeCase{
		{
			name: "one row with key", sql: "INSERT INTO t_order (order_id, user_id, note) VALUES (?, ?, ?)",
			args: []any{int64(6), int64(3), "n"}, reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "insert into t_order_2(order_id, user_id, note) values (?, ?, ?)", []any{int64(6), int64(3), "n"}}},
		},
		{
			name: "rows split per node, arguments renumbered",
			sql:  "INSERT INTO t_order (order_id, user_id, note) VALUES (?, ?, ?), (1, 2, 'b'), (?, ?, ?), (5, ?, 'd')",
			args: []any{int64(1), int64(1), "a", int64(2), int64(1), "c", int64(3)}, reason: ReasonMultiShard, write: true,
			units: []unitWant{
				{"ds_0", "insert into t_order_1(order_id, user_id, note) values (1, 2, 'b')", nil},
				{"ds_1", "insert into t_order_1(order_id, user_id, note) values (?, ?, ?), (5, ?, 'd')", []any{int64(1), int64(1), "a", int64(3)}},
				{"ds_1", "insert into t_order_2(order_id, user_id, note) values (?, ?, ?)", []any{int64(2), int64(1), "c"}},
			},
		},
		{
			name: "generated key added per row, as a placeholder when the statement has some",
			sql:  "INSERT INTO t_order (user_id, note) VALUES (?, 'a'), (?, 'b')", args: []any{int64(1), int64(1)},
			reason: ReasonMultiShard, write: true, lastID: 1000,
			units: []unitWant{
				{"ds_1", "insert into t_order_0(user_id, note, order_id) values (?, 'a', ?)", []any{int64(1), int64(1000)}},
				{"ds_1", "insert into t_order_1(user_id, note, order_id) values (?, 'b', ?)", []any{int64(1), int64(1001)}},
			},
		},
		{
			name: "generated key as a literal in a statement without placeholders",
			sql:  "INSERT INTO t_order (user_id) VALUES (2)", reason: ReasonSingleShard, write: true, lastID: 1000,
			units: []unitWant{{"ds_0", "insert into t_order_0(user_id, order_id) values (2, 1000)", nil}},
		},
		{
			name: "generated key of a binding table that is not its sharding column",
			sql:  "INSERT INTO t_order_item (order_id, user_id) VALUES (3, 3)", reason: ReasonSingleShard, write: true, lastID: 1000,
			units: []unitWant{{"ds_1", "insert into t_order_item_3(order_id, user_id, item_id) values (3, 3, 1000)", nil}},
		},
		{
			name: "REPLACE", sql: "REPLACE INTO t_order (order_id, user_id) VALUES (4, 4)", reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_0", "replace into t_order_0(order_id, user_id) values (4, 4)", nil}},
		},
		{
			name: "INSERT IGNORE … SET", sql: "INSERT IGNORE INTO t_order SET order_id = 1, user_id = ?", args: []any{int64(2)},
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_0", "insert ignore into t_order_1(order_id, user_id) values (1, ?)", []any{int64(2)}}},
		},
		{
			name: "ON DUPLICATE KEY UPDATE with its arguments after the rows",
			sql:  "INSERT INTO t_order (order_id, user_id, qty) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE qty = qty + ?, t_order.note = VALUES(note)",
			args: []any{int64(1), int64(1), 5, int64(2), int64(2), 6, 1}, reason: ReasonMultiShard, write: true,
			units: []unitWant{
				{"ds_0", "insert into t_order_2(order_id, user_id, qty) values (?, ?, ?) on duplicate key update qty = qty + ?, t_order_2.note = values(note)", []any{int64(2), int64(2), 6, 1}},
				{"ds_1", "insert into t_order_1(order_id, user_id, qty) values (?, ?, ?) on duplicate key update qty = qty + ?, t_order_1.note = values(note)", []any{int64(1), int64(1), 5, 1}},
			},
		},
		{
			name: "database-qualified target", sql: "INSERT INTO shop.t_order (order_id, user_id) VALUES (1, 1)",
			reason: ReasonSingleShard, write: true,
			units: []unitWant{{"ds_1", "insert into t_order_1(order_id, user_id) values (1, 1)", nil}},
		},
		{
			name: "no column list", sql: "INSERT INTO t_order VALUES (1, 2, 'x')", err: ErrUnsupported,
			errHas: []string{"column list", "table t_order"},
		},
		{
			name: "no database sharding value", sql: "INSERT INTO t_order (order_id, note) VALUES (1, 'x')", err: ErrNoShardKey,
			errHas: []string{"table t_order", "column user_id"},
		},
		{
			name: "no table sharding value and no generator for it", sql: "INSERT INTO t_order_item (user_id, item_id) VALUES (1, 2)",
			err: ErrNoShardKey, errHas: []string{"table t_order_item", "column order_id"},
		},
		{
			name: "NULL sharding value", sql: "INSERT INTO t_order (order_id, user_id) VALUES (1, ?)", args: []any{nil},
			err: ErrNoShardKey, errHas: []string{"NULL", "column user_id"},
		},
		{
			name: "sharding value from an expression", sql: "INSERT INTO t_order (order_id, user_id) VALUES (1, 1 + 1)",
			err: ErrUnsupported, errHas: []string{"column user_id", "row 1"},
		},
		{
			name: "INSERT … SELECT", sql: "INSERT INTO t_order (order_id, user_id) SELECT id, 1 FROM t_dict",
			err: ErrUnsupported, errHas: []string{"INSERT … SELECT"},
		},
		{
			name: "ON DUPLICATE KEY UPDATE of a sharding column",
			sql:  "INSERT INTO t_order (order_id, user_id) VALUES (1, 1) ON DUPLICATE KEY UPDATE user_id = 2",
			err:  ErrUnsupported, errHas: []string{"ON DUPLICATE KEY UPDATE", "column user_id"},
		},
		{
			name: "key generator not configured", rules: func(r *Rules) { r.KeyGenerators = nil },
			sql: "INSERT INTO t_order (user_id) VALUES (1)", err: ErrUnsupported, errHas: []string{`key generator "fake"`},
		},
		{
			name: "INSERT into a default table", sql: "INSERT INTO t_user (name) VALUES (?)", args: []any{"x"},
			reason: ReasonDefault, write: true,
			units: []unitWant{{"ds_0", "INSERT INTO t_user (name) VALUES (?)", []any{"x"}}},
		},
	})
}

func TestRewriteInsertKeyError(t *testing.T) {
	rules, keys := routeTestRules()
	keys.err = errors.New("clock moved backwards")
	r := NewRouter(rules)
	_, err := r.Route("INSERT INTO t_order (user_id) VALUES (1)", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "clock moved backwards (table t_order, column order_id)")
}

// TestRewriteTemplate checks the printer cuts: placeholders in print
// order, table holes, INSERT rows.
func TestRewriteTemplate(t *testing.T) {
	p := sqlparser.NewTestParser()
	stmt, err := p.Parse("INSERT INTO t (a, b) VALUES (?, 1), (2, ?) ON DUPLICATE KEY UPDATE b = ?")
	require.NoError(t, err)
	ins := stmt.(*sqlparser.Insert)
	ins.Table.Expr = tableMarker(0)
	tmpl := buildTemplate(ins, nil, true)
	require.Len(t, tmpl.rows, 2)
	u := unitRender{tables: []string{"t_9"}, in: routeArgs("x", "y", "z")}
	assert.Equal(t, "insert into t_9(a, b) values (2, ?) on duplicate key update b = ?", tmpl.renderRows(&u, []int{1}, nil))
	assert.Equal(t, []any{"y", "z"}, []any{u.out[0].Value, u.out[1].Value})
	assert.Equal(t, []int{1, 2}, []int{u.out[0].Ordinal, u.out[1].Ordinal})

	// A table name that needs quoting is quoted.
	assert.Equal(t, "`order`", escapeTableName("order"))
	assert.Equal(t, "`t-1`", escapeTableName("t-1"))
}

func TestQuoteStatement(t *testing.T) {
	assert.Equal(t, `"SELECT 1"`, quoteStatement("  SELECT 1\n"))
	long := strings.Repeat("é", 60) // 120 bytes
	q := quoteStatement(long)
	assert.True(t, strings.HasSuffix(q, `…"`), q)
	assert.NotContains(t, q, `\x`) // cut on a rune boundary
}

// A weight column asks the server first whether its value is text at
// all: for a number, a date or a binary string COLLATION says 'binary'
// and the column is NULL, decided once per statement, so a numeric ORDER
// BY costs the shards no weight strings. A placeholder's collation is not
// known at prepare, so its weight is always computed.
func TestWeightExprSkipsNonText(t *testing.T) {
	format := func(e sqlparser.Expr) string {
		buf := sqlparser.NewTrackedBuffer(nil)
		buf.Myprintf("%v", e)
		return buf.String()
	}
	col := format(weightExpr(sqlparser.NewColName("amount")))
	assert.True(t, strings.HasPrefix(col, "if(collation(amount) = 'binary', null, concat("), col)
	arg := format(weightExpr(sqlparser.NewArgument("v1")))
	assert.True(t, strings.HasPrefix(arg, "concat("), arg)
	assert.NotContains(t, arg, "collation(")
}
