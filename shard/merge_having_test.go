package shard

import (
	"database/sql/driver"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func havingCmp(col int, cmp string, v driver.Value) havingExpr {
	return havingExpr{Op: havingCompare, Cmp: cmp, Left: havingOperand{Column: col}, Right: havingOperand{Const: true, Value: v}}
}

// HAVING COUNT(*) > 2 on merged groups: each shard's part of group 1 has
// 2 rows, the group has 4; LIMIT and OFFSET count the groups that pass.
func TestMergeHavingGroups(t *testing.T) {
	cols := []string{"g", "count(*)", "sum(x)"}
	h := havingCmp(1, ">", int64(2))
	plan := mergePlan{
		OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
		Aggregates: []aggregate{{Kind: aggCount, Index: 1}, {Kind: aggSum, Index: 2}},
		Having:     &h, Offset: 1, Limit: 2,
		ColumnTypes: []string{"INT", "BIGINT", "DECIMAL"},
	}
	s0 := newMergeSrc(cols, mrow(1, 2, "1.50"), mrow(2, 1, "1"), mrow(3, 2, "2"), mrow(4, 3, "1"), mrow(5, 3, "1"))
	s1 := newMergeSrc(cols, mrow(1, 2, "1.50"), mrow(2, 1, "1"), mrow(3, 1, "2"), mrow(5, 1, "1"))
	got := mergeAll(t, plan, s0, s1)
	// Passing: 1 (4), 3 (3), 4 (3), 5 (4); offset 1 skips group 1.
	assert.Equal(t, mwant([]any{3, 3, "4"}, []any{4, 3, "1"}), mplain(got))
}

// Three-valued logic: NULL compares unknown; NOT unknown is unknown; OR
// with a true side is true; <=> matches NULL.
func TestMergeHavingNulls(t *testing.T) {
	cols := []string{"g", "max(x)"}
	rows := []driver.Value{nil, int64(5), int64(1)}
	for _, c := range []struct {
		name string
		h    havingExpr
		want []any
	}{
		{"> drops NULL", havingCmp(1, ">", int64(2)), []any{5}},
		{"NOT < drops NULL", havingExpr{Op: havingNot, Sub: []havingExpr{havingCmp(1, "<", int64(2))}}, []any{5}},
		{"IS NULL", havingExpr{Op: havingIsNull, Left: havingOperand{Column: 1}}, []any{nil}},
		{"<=> NULL", havingCmp(1, "<=>", nil), []any{nil}},
		{"= NULL is never true", havingCmp(1, "=", nil), nil},
		{"OR", havingExpr{Op: havingOr, Sub: []havingExpr{havingCmp(1, "=", int64(1)), {Op: havingIsNull, Left: havingOperand{Column: 1}}}}, []any{nil, 1}},
		{"AND", havingExpr{Op: havingAnd, Sub: []havingExpr{havingCmp(1, ">=", []byte("1.0")), havingCmp(1, "!=", "5")}}, []any{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := c.h
			plan := mergePlan{GroupBy: []int{0}, Aggregates: []aggregate{{Kind: aggMax, Index: 1}}, Having: &h, Limit: noLimit,
				ColumnTypes: []string{"INT", "INT"}}
			var srcs []*mergeSrc
			for i, v := range rows {
				srcs = append(srcs, newMergeSrc(cols, mrow(i, v)))
			}
			got := mergeAll(t, plan, srcs...)
			var vals []any
			for _, r := range mplain(got) {
				vals = append(vals, r[1])
			}
			assert.Equal(t, mwant(c.want)[0], vals)
		})
	}
}

// Without GROUP BY, HAVING filters the one global row.
func TestMergeHavingGlobal(t *testing.T) {
	cols := []string{"count(*)"}
	h := havingCmp(0, ">", int64(3))
	plan := mergePlan{Aggregates: []aggregate{{Kind: aggCount, Index: 0}}, Having: &h, Limit: noLimit}
	assert.Empty(t, mergeAll(t, plan, newMergeSrc(cols, mrow(2)), newMergeSrc(cols, mrow(1))))
	assert.Equal(t, mwant([]any{4}), mplain(mergeAll(t, plan, newMergeSrc(cols, mrow(2)), newMergeSrc(cols, mrow(2)))))
}

func TestMergeHavingPlanErrors(t *testing.T) {
	cols := []string{"g", "max(s)"}
	for i, h := range []havingExpr{
		{},
		havingCmp(2, ">", int64(1)),
		havingCmp(1, "LIKE", "a"),
		{Op: havingNot},
		{Op: havingNot, Sub: []havingExpr{havingCmp(1, ">", int64(1)), havingCmp(1, ">", int64(1))}},
		havingCmp(1, "=", "a"), // VARCHAR: the server's collation
	} {
		plan := mergePlan{GroupBy: []int{0}, Aggregates: []aggregate{{Kind: aggMax, Index: 1}}, Having: &h, Limit: noLimit,
			ColumnTypes: []string{"INT", "INT"}}
		if i == 5 {
			plan.ColumnTypes[1] = "VARCHAR"
		}
		_, err := merge(plan, mergeSources([]*mergeSrc{newMergeSrc(cols)}))
		require.ErrorIs(t, err, ErrMergePlan, "%+v", h)
	}
}
