package shard

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodeList parses "ds.t ds.u t" into DataNodes.
func nodeList(s string) []DataNode {
	var out []DataNode
	for _, f := range strings.Fields(s) {
		if i := strings.IndexByte(f, '.'); i >= 0 {
			out = append(out, DataNode{DataSource: f[:i], Table: f[i+1:]})
		} else {
			out = append(out, DataNode{Table: f})
		}
	}
	return out
}

func TestExpandDataNodes(t *testing.T) {
	cases := []struct {
		expr string
		want string
	}{
		{"ds_${0..1}.t_order_${0..3}", "ds_0.t_order_0 ds_0.t_order_1 ds_0.t_order_2 ds_0.t_order_3 ds_1.t_order_0 ds_1.t_order_1 ds_1.t_order_2 ds_1.t_order_3"},
		{"ds_$->{0..1}.t_order_$->{0..1}", "ds_0.t_order_0 ds_0.t_order_1 ds_1.t_order_0 ds_1.t_order_1"},
		{"ds_${['a','b']}.t_${1..2}", "ds_a.t_1 ds_a.t_2 ds_b.t_1 ds_b.t_2"},
		{`ds_${["a", 'b']}.t`, "ds_a.t ds_b.t"},
		{"ds_0.t_user, ds_1.t_user", "ds_0.t_user ds_1.t_user"},
		{"  ds_0.t_a ,ds_1.t_b  ", "ds_0.t_a ds_1.t_b"},
		{"t_user", "t_user"},
		{"t_${0..1}", "t_0 t_1"},
		{"ds_${0..1}.t_order_${0..1}, ds_2.t_order_9", "ds_0.t_order_0 ds_0.t_order_1 ds_1.t_order_0 ds_1.t_order_1 ds_2.t_order_9"},
		{"ds.t_${3..1}", "ds.t_3 ds.t_2 ds.t_1"},
		{"ds.t_${0..<3}", "ds.t_0 ds.t_1 ds.t_2"},
		{"ds.t_${3..<0}", "ds.t_3 ds.t_2 ds.t_1"},
		{"ds.t_${ ( 0 .. 1 ) }", "ds.t_0 ds.t_1"},
		{"ds.t_${[0, 2, 4]}", "ds.t_0 ds.t_2 ds.t_4"},
		{"ds.t_${['a',]}", "ds.t_a"},
		{"ds.t_${2 * 3}", "ds.t_6"},
		{"ds.t_${(1 + 2) * 3 - 4 / 2 % 3}", "ds.t_7"},
		{"ds.t_${7 / -2}_${-7 % 3}", "ds.t_-3_-1"}, // Java's truncating division and remainder
		{"ds.t_${'x' + 1}", "ds.t_x1"},
		{"ds.t_${1 + 'x'}", "ds.t_1x"},
		{`ds.t_${'it\'s'}`, "ds.t_it's"},
		{"ds.t_${5L}", "ds.t_5"},
		{"ds_${0..1}.t_${0..1}_${['a','b']}", "ds_0.t_0_a ds_0.t_0_b ds_0.t_1_a ds_0.t_1_b ds_1.t_0_a ds_1.t_0_b ds_1.t_1_a ds_1.t_1_b"},
		{"ds.t_${-1..1}", "ds.t_-1 ds.t_0 ds.t_1"},
		{"ds.t_${-9223372036854775808}", "ds.t_-9223372036854775808"},
		{"ds.t_${9223372036854775807}", "ds.t_9223372036854775807"},
		{"ds.$t", "ds.$t"},
		{"ds.t$", "ds.t$"},
		{"ds.t_${ {0}..1 }x", ""}, // braces in code are counted, then refused (below)
	}
	for _, c := range cases {
		if c.want == "" {
			continue
		}
		got, err := ExpandDataNodes(c.expr)
		if assert.NoError(t, err, c.expr) {
			assert.Equal(t, nodeList(c.want), got, c.expr)
		}
	}
	// At the limit.
	nodes, err := ExpandDataNodes("ds.t_${0..65535}")
	require.NoError(t, err)
	assert.Len(t, nodes, 65536)
	assert.Equal(t, DataNode{"ds", "t_65535"}, nodes[65535])
}

func TestExpandDataNodesErrors(t *testing.T) {
	cases := []struct {
		expr   string
		offset int
		reason string
	}{
		{"", 0, "empty item"},
		{"  ", 0, "empty item"},
		{"ds_0.t,,ds_1.t", 7, "empty item"},
		{"ds_0.t,", 7, "empty item"},
		{"ds_${0..1", 3, "unterminated ${"},
		{"ds_$->{0..1", 3, "unterminated $->{"},
		{"ds.t_${'abc}", 5, "unterminated ${"},
		{"ds_${}.t", 3, "empty ${}"},
		{"ds_$->{ }.t", 3, "empty ${}"},
		{"ds.t_${0..}", 10, "unexpected end of ${} code"},
		{"ds.t_${x}", 7, "variable x has no value here"},
		{"ds.t_${[1, x]}", 11, "variable x has no value here"},
		{"ds.t_${0..99999}", 7, "range has more than 65536 values"},
		{"ds.t_${0..65536}", 7, "range has more than 65536 values"},
		{"ds.t_${-9223372036854775808..9223372036854775807}", 7, "range has more than 65536 values"},
		{"ds_${0..999}.t_${0..999}", 0, "expands to more than 65536 names"},
		{"ds.a_${0..40000}, ds.b_${0..40000}", 18, "expands to more than 65536 names"},
		{"ds.t_${0..<0}", 7, "expands to nothing"},
		{"ds.t_${[]}", 7, "expands to nothing"},
		{"a.b.c", 0, `"a.b.c" has more than one dot (want data_source.table)`},
		{".t", 0, `".t" has no data source before the dot`},
		{"ds.", 0, `"ds." has no table name`},
		{"ds t", 0, `"ds t" contains white space`},
		{"ds_0.t, ds_0.t", 8, "data node ds_0.t repeats"},
		{"ds_${[0, 0]}.t", 0, "data node ds_0.t repeats"},
		{"ds.t_${a.hashCode()}", 8, "method calls and properties are not supported (a.)"},
		{"ds.t_${Math.abs(1)}", 11, "method calls and properties are not supported (Math.)"},
		{"ds.t_${f(1)}", 8, "method calls and properties are not supported (f()"},
		{"ds.t_${1.5}", 8, `unexpected "."`},
		{"ds.t_${.5}", 7, "method calls and properties are not supported"},
		{"ds.t_${1/0}", 8, "division by zero"},
		{"ds.t_${1 % (2 - 2)}", 9, "division by zero"},
		{"ds.t_${[0..1]}", 8, "a range or list must be the whole ${} code"},
		{"ds.t_${(0..1) + 1}", 8, "a range or list must be the whole ${} code"},
		{"ds.t_${0..1..2}", 11, `unexpected "."`},
		{`ds.t_${"a$b"}`, 9, `interpolation in a "string" is not supported`},
		{`ds.t_${'a\q'}`, 9, `unknown escape \q`},
		{"ds.t_${9223372036854775808}", 7, "integer out of range"},
		{"ds.t_${99999999999999999999}", 7, "integer out of range"},
		{"ds.t_${1 2}", 9, `unexpected "2"`},
		{"ds.t_${[1, 2}", 12, "want , or ] in list"},
		{"ds.t_${[1}", 9, "want , or ] in list"},
		{"ds.t_${[}", 8, "missing ]"},
		{"ds.t_${(1}", 9, "missing )"},
		{"ds.t_${-'a'}", 7, `cannot negate string "a"`},
		{"ds.t_${'a' * 2}", 11, `operator * wants integers, not "a"`},
		{"ds.t_${#}", 7, `unexpected "#"`},
		{"ds.t_${ {0}..1 }x", 8, `unexpected "{"`},
		{"ds.t_${0..'a'}", 7, "range bounds must be integers"},
	}
	for _, c := range cases {
		_, err := ExpandDataNodes(c.expr)
		if !assert.Error(t, err, c.expr) {
			continue
		}
		var ee *ExprError
		if assert.True(t, errors.As(err, &ee), "%q: %T %v", c.expr, err, err) {
			assert.Equal(t, c.expr, ee.Expr)
			assert.Equal(t, c.reason, ee.Reason, c.expr)
			assert.Equal(t, c.offset, ee.Offset, c.expr)
		}
	}
	_, err := ExpandDataNodes("ds_${0..1")
	assert.EqualError(t, err, `rwshard: shard: inline expression "ds_${0..1": unterminated ${ at offset 3`)

	deep := "ds.t_${" + strings.Repeat("(", 200) + "1" + strings.Repeat(")", 200) + "}"
	_, err = ExpandDataNodes(deep)
	var ee *ExprError
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, "nested too deeply", ee.Reason)
	_, err = ExpandDataNodes("ds.t_" + strings.Repeat("-", 1000) + "1")
	assert.NoError(t, err, "minus signs in literal text are text")
	_, err = ExpandDataNodes("ds.t_${" + strings.Repeat("-", 1000) + "1}")
	require.True(t, errors.As(err, &ee))
	assert.Equal(t, "nested too deeply", ee.Reason)
	nodes, err := ExpandDataNodes("ds.t_${" + strings.Repeat("(", 40) + "1" + strings.Repeat(")", 40) + "}")
	require.NoError(t, err)
	assert.Equal(t, nodeList("ds.t_1"), nodes)
}

func TestInlineAlgorithm(t *testing.T) {
	a := mustAlgorithm(t, "INLINE", map[string]string{"algorithm-expression": "t_order_${order_id % 4}"})
	targets := numbered("t_order_", 4)
	checkShard(t, a, targets, []shardCase{
		{v: int64(5), want: "t_order_1"},
		{v: int64(8), want: "t_order_0"},
		{v: "6", want: "t_order_2"},
		{v: []byte("7"), want: "t_order_3"},
		{v: uint64(5), want: "t_order_1"},
		{v: int32(2), want: "t_order_2"},
		{v: int64(-1), err: true, want: `rwshard: shard: INLINE t_order_${order_id % 4}: value -1 (int64) names "t_order_-1", not among [t_order_0 t_order_1 t_order_2 t_order_3]`},
		{v: "abc", err: true, want: `rwshard: shard: INLINE t_order_${order_id % 4}: value "abc" (string) cannot be used: operator % wants integers, not "abc" at offset 19`},
		{v: 3.5, err: true, want: "rwshard: shard: INLINE t_order_${order_id % 4}: value 3.5 (float64) is not an integer within int64, a string or []byte"},
		{v: uint64(1 << 63), err: true, want: "rwshard: shard: INLINE t_order_${order_id % 4}: value 9223372036854775808 (uint64) is not an integer within int64, a string or []byte"},
		{v: nil, err: true, want: "rwshard: shard: INLINE t_order_${order_id % 4}: value NULL is not an integer within int64, a string or []byte"},
	})
	_, err := a.Shard(targets, int64(-1))
	assert.ErrorIs(t, err, ErrNoTarget)
	assert.Equal(t, "order_id", a.(interface{ ShardingColumn() string }).ShardingColumn())

	_, err = a.ShardRange(targets, Range{Lo: int64(1), Hi: int64(2)})
	assert.EqualError(t, err, "rwshard: shard: INLINE t_order_${order_id % 4}: a range query on order_id is not supported by an inline sharding algorithm; set allow-range-query-with-inline-sharding=true to send it to every target")
	allow := mustAlgorithm(t, "INLINE", map[string]string{"algorithm-expression": "t_order_$->{order_id % 4}", "allow-range-query-with-inline-sharding": "TRUE"})
	got, err := allow.ShardRange(targets, Range{Lo: int64(1), Hi: int64(2)})
	require.NoError(t, err)
	assert.Equal(t, targets, got)
	checkShard(t, allow, targets, []shardCase{{v: int64(6), want: "t_order_2"}})

	cases := []struct {
		expr    string
		targets []string
		cases   []shardCase
	}{
		{"ds_${user_id % 2}", []string{"ds_0", "ds_1"}, []shardCase{{v: int64(3), want: "ds_1"}, {v: int64(10), want: "ds_0"}}},
		{"t_${(order_id / 10) % 2}", []string{"t_0", "t_1"}, []shardCase{
			{v: int64(15), want: "t_1"},
			{v: int64(25), want: "t_0"},
			{v: int64(-15), err: true, want: `rwshard: shard: INLINE t_${(order_id / 10) % 2}: value -15 (int64) names "t_-1", not among [t_0 t_1]`},
		}},
		{"t_${-id % 3}", []string{"t_0", "t_-1", "t_-2"}, []shardCase{{v: int64(4), want: "t_-1"}, {v: int64(5), want: "t_-2"}, {v: int64(-3), want: "t_0"}}},
		{"t_${region}", []string{"t_eu", "t_us", "t_3"}, []shardCase{{v: "eu", want: "t_eu"}, {v: []byte("us"), want: "t_us"}, {v: int64(3), want: "t_3"}}},
		{"t_${id + 1}", []string{"t_6", "t_ab1"}, []shardCase{{v: "5", want: "t_6"}, {v: "ab", want: "t_ab1"}, {v: int64(5), want: "t_6"}}},
		{"t_${10 / id}", []string{"t_5"}, []shardCase{
			{v: int64(2), want: "t_5"},
			{v: int64(0), err: true, want: "rwshard: shard: INLINE t_${10 / id}: value 0 (int64) cannot be used: division by zero at offset 7"},
		}},
		{"t_0", []string{"t_0", "t_1"}, []shardCase{{v: int64(1), want: "t_0"}, {v: "x", want: "t_0"}}},
		{"${'t_' + id * 2}", []string{"t_4"}, []shardCase{{v: int64(2), want: "t_4"}}},
	}
	for _, c := range cases {
		checkShard(t, mustAlgorithm(t, "INLINE", map[string]string{"algorithm-expression": c.expr}), c.targets, c.cases)
	}
	constant := mustAlgorithm(t, "INLINE", map[string]string{"algorithm-expression": "t_0"})
	assert.Equal(t, "", constant.(interface{ ShardingColumn() string }).ShardingColumn())
	_, err = constant.ShardRange(nil, Range{})
	assert.EqualError(t, err, "rwshard: shard: INLINE t_0: a range query on its column is not supported by an inline sharding algorithm; set allow-range-query-with-inline-sharding=true to send it to every target")
}

// FuzzInlineExpr parses, expands and evaluates arbitrary expressions:
// nothing may panic, expansions stay within the bound, and an INLINE
// result is always one of the targets.
func FuzzInlineExpr(f *testing.F) {
	for _, s := range []string{
		"ds_${0..1}.t_order_${0..3}", "ds_$->{0..1}.t_$->{['a','b']}", "ds_0.t_user, ds_1.t_user",
		"t_${order_id % 4}", "t_${(id / 10) % 2 + 'x'}", "t_${-id}", "${[1,2,3]}", "${0..<5}", "t_${'a\\'b'}",
		"t_${\"x\"}", "${", "$->{", "${}", "t_${((1)}", "t_${9223372036854775807 * 2}", "t_${-9223372036854775808 / -1}",
		"t_${-9223372036854775808 % -1}",
	} {
		f.Add(s, int64(7), "5")
	}
	f.Fuzz(func(t *testing.T, expr string, iv int64, sv string) {
		if nodes, err := ExpandDataNodes(expr); err == nil {
			require.LessOrEqual(t, len(nodes), maxInlineExpansion)
			for _, n := range nodes {
				require.NotEmpty(t, n.Table)
			}
		} else {
			var ee *ExprError
			require.True(t, errors.As(err, &ee), "%T %v", err, err)
			require.True(t, ee.Offset >= 0 && ee.Offset <= len(expr), "offset %d of %q", ee.Offset, expr)
		}
		a, err := NewAlgorithm("INLINE", map[string]string{"algorithm-expression": expr})
		if err != nil {
			return
		}
		targets := []string{"t_0", "t_1", "t_5", "t_7", fmt.Sprint("t_", iv), "t_" + sv}
		for _, v := range []Value{iv, sv, []byte(sv), uint64(iv), nil, 1.5} {
			if got, err := a.Shard(targets, v); err == nil {
				require.Contains(t, targets, got)
			}
		}
		_, _ = a.ShardRange(targets, Range{Lo: iv})
	})
}

func ExampleExpandDataNodes() {
	nodes, err := ExpandDataNodes("ds_${0..1}.t_order_${0..1}, ds_2.t_order_9")
	if err != nil {
		panic(err)
	}
	for _, n := range nodes {
		fmt.Println(n.DataSource, n.Table)
	}
	// Output:
	// ds_0 t_order_0
	// ds_0 t_order_1
	// ds_1 t_order_0
	// ds_1 t_order_1
	// ds_2 t_order_9
}
