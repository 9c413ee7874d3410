package shard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Shard rows of SELECT COUNT(DISTINCT x), SUM(DISTINCT x), AVG(DISTINCT x)
// rewritten to GROUP BY x: one row per shard and distinct x, with x, then
// AVG's SUM(DISTINCT x) and COUNT(DISTINCT x).
var distinctGlobalPlan = mergePlan{
	Aggregates: []aggregate{
		{Kind: aggCount, Index: 0, Distinct: true, ArgIndex: 3},
		{Kind: aggSum, Index: 1, Distinct: true, ArgIndex: 3},
		{Kind: aggAvg, Index: 2, SumIndex: 4, CountIndex: 5, Distinct: true, ArgIndex: 3},
		{Kind: aggSum, Index: 4, Distinct: true, ArgIndex: 3},
		{Kind: aggCount, Index: 5, Distinct: true, ArgIndex: 3},
	},
	Limit: noLimit, Visible: 3,
	ColumnTypes: []string{"BIGINT", "DECIMAL", "DECIMAL", "DECIMAL", "DECIMAL", "BIGINT"},
}

func TestMergeDistinctAggregatesGlobal(t *testing.T) {
	cols := []string{"count(distinct x)", "sum(distinct x)", "avg(distinct x)", "x", "sum(distinct x)", "count(distinct x)"}
	// x values: shard 0 {1.50, 2, NULL}, shard 1 {1.5, 3}, shard 2 {2.00}: distinct {1.5, 2, 3}.
	s0 := newMergeSrc(cols,
		mrow(0, nil, nil, nil, nil, 0),
		mrow(1, "1.50", "1.500000", "1.50", "1.50", 1),
		mrow(1, "2.00", "2.000000", "2.00", "2.00", 1))
	s1 := newMergeSrc(cols,
		mrow(1, "1.50", "1.500000", "1.50", "1.50", 1),
		mrow(1, "3.00", "3.000000", "3.00", "3.00", 1))
	s2 := newMergeSrc(cols, mrow(1, "2.00", "2.000000", "2.00", "2.00", 1))
	got := mergeAll(t, distinctGlobalPlan, s0, s1, s2)
	// 6.50 / 3 = 2.166666: SUM's scale 2 + 4.
	assert.Equal(t, mwant([]any{3, "6.50", "2.166667"}), mplain(got))
}

func TestMergeDistinctAggregatesEmpty(t *testing.T) {
	cols := []string{"count(distinct x)", "sum(distinct x)", "avg(distinct x)", "x", "sum(distinct x)", "count(distinct x)"}
	got := mergeAll(t, distinctGlobalPlan, newMergeSrc(cols), newMergeSrc(cols, mrow(0, nil, nil, nil, nil, 0)))
	assert.Equal(t, mwant([]any{0, nil, nil}), mplain(got))
}

// GROUP BY g with COUNT(DISTINCT name) in a case-insensitive collation:
// the argument compares through its weight string, the groups stream in
// g order, LIMIT applies to merged groups.
func TestMergeDistinctAggregatesGrouped(t *testing.T) {
	cols := []string{"g", "count(distinct name)", "count(*)", "name", "weight_string(name)"}
	plan := mergePlan{
		OrderBy: []orderKey{{Index: 0}}, GroupBy: []int{0},
		Aggregates: []aggregate{{Kind: aggCount, Index: 1, Distinct: true, ArgIndex: 3}, {Kind: aggCount, Index: 2}},
		Weights:    []weight{{Column: 3, Weight: 4}},
		Offset:     1, Limit: 2, Visible: 3,
		ColumnTypes: []string{"INT", "BIGINT", "BIGINT", "VARCHAR", "VARBINARY"},
	}
	s0 := newMergeSrc(cols,
		mrow(1, 1, 2, "a", "A"),
		mrow(2, 1, 1, "a", "A"),
		mrow(2, 1, 4, "b", "B"),
		mrow(3, 1, 1, "c", "C"))
	s1 := newMergeSrc(cols,
		mrow(1, 1, 1, "A", "A"),
		mrow(2, 0, 2, nil, nil),
		mrow(2, 1, 1, "B", "B"),
		mrow(3, 1, 1, "d", "D"),
		mrow(4, 1, 1, "e", "E"))
	got := mergeAll(t, plan, s0, s1)
	// Group 1 (skipped): {a}; 2: {a, b} and 9 rows; 3: {c, d}.
	assert.Equal(t, mwant([]any{2, 2, 8}, []any{3, 2, 2}), mplain(got))
}

// ORDER BY the distinct count: groups are merged in memory, then sorted.
func TestMergeDistinctAggregatesOrderByCount(t *testing.T) {
	cols := []string{"g", "n", "x"}
	plan := mergePlan{
		OrderBy: []orderKey{{Index: 1, Desc: true}, {Index: 0}}, GroupBy: []int{0},
		Aggregates: []aggregate{{Kind: aggCount, Index: 1, Distinct: true, ArgIndex: 2}},
		Limit:      2, Visible: 2,
	}
	s0 := newMergeSrc(cols, mrow(1, 1, 10), mrow(1, 1, 11), mrow(2, 1, 10), mrow(3, 1, 7))
	s1 := newMergeSrc(cols, mrow(2, 1, 12), mrow(2, 1, 13), mrow(1, 1, 10), mrow(3, 1, 7))
	got := mergeAll(t, plan, s0, s1)
	assert.Equal(t, mwant([]any{2, 3}, []any{1, 2}), mplain(got))
}

func TestMergeDistinctPlanErrors(t *testing.T) {
	cols := []string{"a", "b"}
	for _, plan := range []mergePlan{
		{Aggregates: []aggregate{{Kind: aggMax, Index: 0, Distinct: true, ArgIndex: 1}}, Limit: noLimit},
		{Aggregates: []aggregate{{Kind: aggCount, Index: 0, Distinct: true, ArgIndex: 0}}, Limit: noLimit},
		{Aggregates: []aggregate{{Kind: aggCount, Index: 0, Distinct: true, ArgIndex: 2}}, Limit: noLimit},
	} {
		_, err := merge(plan, mergeSources([]*mergeSrc{newMergeSrc(cols)}))
		require.ErrorIs(t, err, ErrMergePlan, "%+v", plan)
	}
}
