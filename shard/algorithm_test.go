package shard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numbered returns prefix0 … prefix(n-1).
func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func mustAlgorithm(t testing.TB, typ string, props map[string]string) Algorithm {
	t.Helper()
	a, err := NewAlgorithm(typ, props)
	require.NoError(t, err)
	return a
}

type shardCase struct {
	v    Value
	want string // target, or the error message when err is set
	err  bool
}

func checkShard(t *testing.T, a Algorithm, targets []string, cases []shardCase) {
	t.Helper()
	for _, c := range cases {
		got, err := a.Shard(targets, c.v)
		if c.err {
			if assert.Error(t, err, "value %#v", c.v) {
				assert.Equal(t, c.want, err.Error(), "value %#v", c.v)
			}
			continue
		}
		if assert.NoError(t, err, "value %#v", c.v) {
			assert.Equal(t, c.want, got, "value %#v", c.v)
		}
	}
}

type rangeCase struct {
	name string
	r    Range
	want []string
	err  string
}

func checkRanges(t *testing.T, a Algorithm, targets []string, cases []rangeCase) {
	t.Helper()
	for _, c := range cases {
		got, err := a.ShardRange(targets, c.r)
		if c.err != "" {
			if assert.Error(t, err, c.name) {
				assert.Equal(t, c.err, err.Error(), c.name)
			}
			continue
		}
		if assert.NoError(t, err, c.name) {
			assert.Equal(t, c.want, got, c.name)
		}
	}
}

func TestNewAlgorithmErrors(t *testing.T) {
	interval := func(kv ...string) map[string]string {
		m := map[string]string{
			"datetime-pattern":        "yyyy-MM-dd HH:mm:ss",
			"datetime-lower":          "2024-01-01 00:00:00",
			"datetime-upper":          "2024-12-31 23:59:59",
			"sharding-suffix-pattern": "yyyyMM",
			"datetime-interval-unit":  "MONTHS",
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<delete>" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	cases := []struct {
		typ   string
		props map[string]string
		prop  string // PropError.Prop
		want  string
	}{
		{"FOO", nil, "", `rwshard: shard: "FOO": unknown sharding algorithm type; want one of MOD, HASH_MOD, SS_HASH_MOD, JAVA_HASH_MOD, BOUNDARY_RANGE, VOLUME_RANGE, INTERVAL, INLINE`},
		{"CLASS_BASED", nil, "", `rwshard: shard: "CLASS_BASED": unknown sharding algorithm type; want one of MOD, HASH_MOD, SS_HASH_MOD, JAVA_HASH_MOD, BOUNDARY_RANGE, VOLUME_RANGE, INTERVAL, INLINE`},

		{"MOD", nil, "sharding-count", "rwshard: shard: MOD: property sharding-count is required"},
		{"MOD", map[string]string{"sharding-count": " "}, "sharding-count", "rwshard: shard: MOD: property sharding-count is required"},
		{"MOD", map[string]string{"sharding-count": "abc"}, "sharding-count", `rwshard: shard: MOD: property sharding-count="abc": not an integer`},
		{"MOD", map[string]string{"sharding-count": "0"}, "sharding-count", `rwshard: shard: MOD: property sharding-count="0": out of range [1, 2147483647]`},
		{"MOD", map[string]string{"sharding-count": "2147483648"}, "sharding-count", `rwshard: shard: MOD: property sharding-count="2147483648": out of range [1, 2147483647]`},
		{"MOD", map[string]string{"sharding-count": "4", "start-offset": "-1"}, "start-offset", `rwshard: shard: MOD: property start-offset="-1": out of range [0, 2147483647]`},
		{"MOD", map[string]string{"sharding-count": "4", "stop-offset": "x"}, "stop-offset", `rwshard: shard: MOD: property stop-offset="x": not an integer`},
		{"MOD", map[string]string{"sharding-count": "4", "zero-padding": "yes"}, "zero-padding", `rwshard: shard: MOD: property zero-padding="yes": want true or false`},

		{"HASH_MOD", nil, "sharding-count", "rwshard: shard: HASH_MOD: property sharding-count is required"},
		{"HASH_MOD", map[string]string{"sharding-count": "-4"}, "sharding-count", `rwshard: shard: HASH_MOD: property sharding-count="-4": out of range [1, 2147483647]`},
		{"HASH_MOD", map[string]string{"sharding-count": "4", "value-type": "float"}, "value-type", `rwshard: shard: HASH_MOD: property value-type="float": want one of auto, long, int, string`},

		{"SS_HASH_MOD", map[string]string{"sharding-count": "4.5"}, "sharding-count", `rwshard: shard: SS_HASH_MOD: property sharding-count="4.5": not an integer`},
		{"SS_HASH_MOD", map[string]string{"sharding-count": "4", "value-type": "auto"}, "value-type", `rwshard: shard: SS_HASH_MOD: property value-type="auto": want one of long, int, string`},
		{"java_hash_mod", nil, "sharding-count", "rwshard: shard: JAVA_HASH_MOD: property sharding-count is required"},

		{"BOUNDARY_RANGE", nil, "sharding-ranges", "rwshard: shard: BOUNDARY_RANGE: property sharding-ranges is required"},
		{"BOUNDARY_RANGE", map[string]string{"sharding-ranges": "10,x,30"}, "sharding-ranges", `rwshard: shard: BOUNDARY_RANGE: property sharding-ranges="10,x,30": entry "x" is not an integer`},
		{"BOUNDARY_RANGE", map[string]string{"sharding-ranges": "10,,30"}, "sharding-ranges", `rwshard: shard: BOUNDARY_RANGE: property sharding-ranges="10,,30": entry "" is not an integer`},

		{"VOLUME_RANGE", map[string]string{"range-upper": "45", "sharding-volume": "10"}, "range-lower", "rwshard: shard: VOLUME_RANGE: property range-lower is required"},
		{"VOLUME_RANGE", map[string]string{"range-lower": "10", "sharding-volume": "10"}, "range-upper", "rwshard: shard: VOLUME_RANGE: property range-upper is required"},
		{"VOLUME_RANGE", map[string]string{"range-lower": "10", "range-upper": "45"}, "sharding-volume", "rwshard: shard: VOLUME_RANGE: property sharding-volume is required"},
		{"VOLUME_RANGE", map[string]string{"range-lower": "10", "range-upper": "45", "sharding-volume": "0"}, "sharding-volume", `rwshard: shard: VOLUME_RANGE: property sharding-volume="0": out of range [1, 9223372036854775807]`},
		{"VOLUME_RANGE", map[string]string{"range-lower": "10", "range-upper": "15", "sharding-volume": "10"}, "sharding-volume", `rwshard: shard: VOLUME_RANGE: property sharding-volume="10": range-upper - range-lower (15 - 10) must be at least the volume`},
		{"VOLUME_RANGE", map[string]string{"range-lower": "45", "range-upper": "10", "sharding-volume": "10"}, "sharding-volume", `rwshard: shard: VOLUME_RANGE: property sharding-volume="10": range-upper - range-lower (10 - 45) must be at least the volume`},
		{"VOLUME_RANGE", map[string]string{"range-lower": "0", "range-upper": "9000000000000", "sharding-volume": "1"}, "sharding-volume", `rwshard: shard: VOLUME_RANGE: property sharding-volume="1": makes 9000000000000 partitions, more than 2147483647`},

		{"INTERVAL", interval("datetime-pattern", "<delete>"), "datetime-pattern", "rwshard: shard: INTERVAL: property datetime-pattern is required"},
		{"INTERVAL", interval("datetime-pattern", "yyyy-MMM-dd"), "datetime-pattern", `rwshard: shard: INTERVAL: property datetime-pattern="yyyy-MMM-dd": unsupported pattern letters "MMM" at offset 5`},
		{"INTERVAL", interval("datetime-pattern", "yyyy-MM-dd hh:mm"), "datetime-pattern", `rwshard: shard: INTERVAL: property datetime-pattern="yyyy-MM-dd hh:mm": unsupported pattern letters "hh" at offset 11`},
		{"INTERVAL", interval("datetime-pattern", "yyyy-MM-dd'T"), "datetime-pattern", `rwshard: shard: INTERVAL: property datetime-pattern="yyyy-MM-dd'T": unterminated quote at offset 10`},
		{"INTERVAL", interval("datetime-pattern", "yyyy[-MM]"), "datetime-pattern", `rwshard: shard: INTERVAL: property datetime-pattern="yyyy[-MM]": unsupported pattern character "[" at offset 4`},
		{"INTERVAL", interval("datetime-pattern", "MM-dd"), "datetime-pattern", `rwshard: shard: INTERVAL: property datetime-pattern="MM-dd": has no year (y)`},
		{"INTERVAL", interval("datetime-pattern", "yyyy-MM-dd yyyy"), "datetime-pattern", `rwshard: shard: INTERVAL: property datetime-pattern="yyyy-MM-dd yyyy": pattern letters "yyyy" repeat a field at offset 11`},
		{"INTERVAL", interval("sharding-suffix-pattern", "<delete>"), "sharding-suffix-pattern", "rwshard: shard: INTERVAL: property sharding-suffix-pattern is required"},
		{"INTERVAL", interval("sharding-suffix-pattern", "yyyyMMMM"), "sharding-suffix-pattern", `rwshard: shard: INTERVAL: property sharding-suffix-pattern="yyyyMMMM": unsupported pattern letters "MMMM" at offset 4`},
		{"INTERVAL", interval("datetime-lower", "<delete>"), "datetime-lower", "rwshard: shard: INTERVAL: property datetime-lower is required"},
		{"INTERVAL", interval("datetime-lower", "2024/01/01 00:00:00"), "datetime-lower", `rwshard: shard: INTERVAL: property datetime-lower="2024/01/01 00:00:00": text "2024/01/01 00:00:00" does not match pattern "yyyy-MM-dd HH:mm:ss" at offset 4`},
		{"INTERVAL", interval("datetime-lower", "2024-02-30 00:00:00"), "datetime-lower", `rwshard: shard: INTERVAL: property datetime-lower="2024-02-30 00:00:00": text "2024-02-30 00:00:00" is not a valid date-time for pattern "yyyy-MM-dd HH:mm:ss"`},
		{"INTERVAL", interval("datetime-upper", "<delete>"), "datetime-upper", "rwshard: shard: INTERVAL: property datetime-upper is required"},
		{"INTERVAL", interval("datetime-upper", "2023-12-31 00:00:00"), "datetime-upper", `rwshard: shard: INTERVAL: property datetime-upper="2023-12-31 00:00:00": is before datetime-lower`},
		{"INTERVAL", interval("datetime-interval-unit", "fortnights"), "datetime-interval-unit", `rwshard: shard: INTERVAL: property datetime-interval-unit="FORTNIGHTS": want one of NANOS, MICROS, MILLIS, SECONDS, MINUTES, HOURS, HALF_DAYS, DAYS, WEEKS, MONTHS, YEARS, DECADES, CENTURIES, MILLENNIA`},
		{"INTERVAL", interval("datetime-interval-amount", "0"), "datetime-interval-amount", `rwshard: shard: INTERVAL: property datetime-interval-amount="0": out of range [1, 2147483647]`},
		{"INTERVAL", interval("datetime-interval-amount", "200000", "datetime-interval-unit", "DAYS"), "datetime-interval-amount", `rwshard: shard: INTERVAL: property datetime-interval-amount="200000": is too long a step in DAYS`},
		{"INTERVAL", interval("datetime-interval-unit", "SECONDS"), "datetime-interval-amount", `rwshard: shard: INTERVAL: property datetime-interval-amount="1": in SECONDS makes more than 131072 steps from datetime-lower to datetime-upper`},

		{"INLINE", nil, "algorithm-expression", "rwshard: shard: INLINE: property algorithm-expression is required"},
		{"INLINE", map[string]string{"algorithm-expression": "t_${order_id % 4"}, "algorithm-expression", `rwshard: shard: INLINE: property algorithm-expression="t_${order_id % 4": unterminated ${ at offset 2`},
		{"INLINE", map[string]string{"algorithm-expression": "t_${order_id %}"}, "algorithm-expression", `rwshard: shard: INLINE: property algorithm-expression="t_${order_id %}": unexpected end of ${} code at offset 14`},
		{"INLINE", map[string]string{"algorithm-expression": "t_${0..3}"}, "algorithm-expression", `rwshard: shard: INLINE: property algorithm-expression="t_${0..3}": a range or list at offset 4 names several targets; INLINE must name one (ranges and lists belong in actual-data-nodes)`},
		{"INLINE", map[string]string{"algorithm-expression": "t_${a % 2}_${b % 2}"}, "algorithm-expression", `rwshard: shard: INLINE: property algorithm-expression="t_${a % 2}_${b % 2}": uses a and b; INLINE shards on one column`},
		{"INLINE", map[string]string{"algorithm-expression": "t_${id.hashCode() % 2}"}, "algorithm-expression", `rwshard: shard: INLINE: property algorithm-expression="t_${id.hashCode() % 2}": method calls and properties are not supported (id.) at offset 6`},
		{"INLINE", map[string]string{"algorithm-expression": "t_${id}", "allow-range-query-with-inline-sharding": "maybe"}, "allow-range-query-with-inline-sharding", `rwshard: shard: INLINE: property allow-range-query-with-inline-sharding="maybe": want true or false`},
	}
	for _, c := range cases {
		_, err := NewAlgorithm(c.typ, c.props)
		if !assert.Error(t, err, "%s %v", c.typ, c.props) {
			continue
		}
		assert.Equal(t, c.want, err.Error())
		var pe *PropError
		if assert.True(t, errors.As(err, &pe), "%s: %T", c.want, err) {
			assert.Equal(t, c.prop, pe.Prop, c.want)
		}
	}
}

func TestNewAlgorithmTypeIgnoresCase(t *testing.T) {
	for _, typ := range []string{"mod", "Mod", " MOD "} {
		a, err := NewAlgorithm(typ, map[string]string{"sharding-count": "4"})
		require.NoError(t, err, typ)
		assert.Equal(t, "MOD(sharding-count=4)", fmt.Sprint(a))
	}
}

func TestAlgorithmStrings(t *testing.T) {
	cases := []struct {
		typ   string
		props map[string]string
		want  string
	}{
		{"MOD", map[string]string{"sharding-count": "4", "start-offset": "2"}, "MOD(sharding-count=4, start-offset=2, stop-offset=0)"},
		{"HASH_MOD", map[string]string{"sharding-count": "8"}, "HASH_MOD(sharding-count=8)"},
		{"HASH_MOD", map[string]string{"sharding-count": "8", "value-type": "INT"}, "HASH_MOD(sharding-count=8, value-type=long)"},
		{"SS_HASH_MOD", map[string]string{"sharding-count": "8"}, "SS_HASH_MOD(sharding-count=8, value-type=long)"},
		{"JAVA_HASH_MOD", map[string]string{"sharding-count": "8", "value-type": "string"}, "JAVA_HASH_MOD(sharding-count=8, value-type=string)"},
		{"BOUNDARY_RANGE", map[string]string{"sharding-ranges": " 30, 10 ,20"}, "BOUNDARY_RANGE(sharding-ranges=10,20,30)"},
		{"VOLUME_RANGE", map[string]string{"range-lower": "10", "range-upper": "45", "sharding-volume": "10"}, "VOLUME_RANGE(range-lower=10, range-upper=45, sharding-volume=10)"},
		{"INLINE", map[string]string{"algorithm-expression": "t_${id % 2}"}, "INLINE(t_${id % 2})"},
		{"INTERVAL", map[string]string{
			"datetime-pattern": "yyyy-MM-dd", "datetime-lower": "2024-01-01", "datetime-upper": "2024-12-01",
			"sharding-suffix-pattern": "yyyyMM", "datetime-interval-unit": "months",
		}, "INTERVAL(datetime-pattern=yyyy-MM-dd, datetime-lower=2024-01-01, steps=12, datetime-interval=1 MONTHS, sharding-suffix-pattern=yyyyMM)"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, fmt.Sprint(mustAlgorithm(t, c.typ, c.props)))
	}
}

func TestMod(t *testing.T) {
	a := mustAlgorithm(t, "MOD", map[string]string{"sharding-count": "4"})
	targets := numbered("t_order_", 4)
	checkShard(t, a, targets, []shardCase{
		{v: int64(0), want: "t_order_0"},
		{v: int64(3), want: "t_order_3"},
		{v: int64(4), want: "t_order_0"},
		{v: int64(7), want: "t_order_3"},
		{v: int64(-1), want: "t_order_3"}, // non-negative remainder, as BigInteger.mod
		{v: int64(-4), want: "t_order_0"},
		{v: int64(math.MinInt64), want: "t_order_0"},
		{v: int64(math.MaxInt64), want: "t_order_3"},
		{v: 5, want: "t_order_1"},
		{v: int32(-6), want: "t_order_2"},
		{v: int8(9), want: "t_order_1"},
		{v: uint64(7), want: "t_order_3"},
		{v: uint64(math.MaxUint64), want: "t_order_3"},
		{v: uint16(10), want: "t_order_2"},
		{v: "6", want: "t_order_2"},
		{v: "+5", want: "t_order_1"},
		{v: "-5", want: "t_order_3"},
		{v: "-0", want: "t_order_0"},
		{v: []byte("9"), want: "t_order_1"},
		{v: "123456789012345678901234567890", want: "t_order_2"}, // …90 mod 4
		{v: "-123456789012345678901234567890", want: "t_order_2"},
		{v: 3.5, err: true, want: "rwshard: shard: MOD: value 3.5 (float64) is not an integer"},
		{v: float64(4), err: true, want: "rwshard: shard: MOD: value 4 (float64) is not an integer"},
		{v: "abc", err: true, want: `rwshard: shard: MOD: value "abc" (string) is not an integer`},
		{v: " 5", err: true, want: `rwshard: shard: MOD: value " 5" (string) is not an integer`},
		{v: "", err: true, want: `rwshard: shard: MOD: value "" (string) is not an integer`},
		{v: "-", err: true, want: `rwshard: shard: MOD: value "-" (string) is not an integer`},
		{v: []byte("1x"), err: true, want: `rwshard: shard: MOD: value "1x" ([]byte) is not an integer`},
		{v: nil, err: true, want: "rwshard: shard: MOD: value NULL is not an integer"},
		{v: true, err: true, want: "rwshard: shard: MOD: value true (bool) is not an integer"},
		{v: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), err: true, want: "rwshard: shard: MOD: value 2024-01-02T03:04:05Z (time.Time) is not an integer"},
	})
}

func TestModTargetMatching(t *testing.T) {
	a := mustAlgorithm(t, "MOD", map[string]string{"sharding-count": "12"})
	// t_11 must not answer 1: the whole trailing number counts.
	targets := numbered("t_", 12)
	checkShard(t, a, targets, []shardCase{
		{v: int64(1), want: "t_1"},
		{v: int64(11), want: "t_11"},
		{v: int64(13), want: "t_1"},
	})
	// Zero-padded names answer their number.
	padded := []string{"t_order_00", "t_order_01", "t_order_02", "t_order_03"}
	a4 := mustAlgorithm(t, "MOD", map[string]string{"sharding-count": "4", "zero-padding": "true"})
	checkShard(t, a4, padded, []shardCase{{v: int64(6), want: "t_order_02"}})
	// Data sources, the target order does not matter.
	checkShard(t, mustAlgorithm(t, "MOD", map[string]string{"sharding-count": "2"}), []string{"ds1", "ds0"}, []shardCase{
		{v: int64(4), want: "ds0"},
		{v: int64(5), want: "ds1"},
	})
	// No target, several targets.
	checkShard(t, a4, []string{"t_order_0", "t_order_1"}, []shardCase{
		{v: int64(3), err: true, want: "rwshard: shard: MOD: value 3 (int64): no target ends with 3 among [t_order_0 t_order_1]"},
	})
	checkShard(t, a4, []string{"t_1", "t_01", "t_2"}, []shardCase{
		{v: int64(1), err: true, want: "rwshard: shard: MOD: value 1 (int64): several targets end with 1 among [t_1 t_01 t_2]"},
	})
	checkShard(t, a4, []string{"t_a", "t_b"}, []shardCase{
		{v: int64(1), err: true, want: "rwshard: shard: MOD: value 1 (int64): no target ends with 1 among [t_a t_b]"},
	})
	_, err := a4.Shard(numbered("t_order_", 9)[4:], int64(1))
	assert.ErrorIs(t, err, ErrNoTarget)
	assert.EqualError(t, err, "rwshard: shard: MOD: value 1 (int64): no target ends with 1 among [t_order_4 t_order_5 t_order_6 t_order_7 t_order_8]")
	_, err = a4.Shard(numbered("x_", 20)[4:], int64(1))
	assert.EqualError(t, err, "rwshard: shard: MOD: value 1 (int64): no target ends with 1 among [x_4 x_5 x_6 x_7 x_8 x_9 x_10 x_11 ... (16 in all)]")
	// Long string values are cut in messages.
	long := "x" + string(make([]byte, 100))
	_, err = a4.Shard(padded, long)
	assert.Contains(t, err.Error(), `..." (string) is not an integer`)
}

func TestModOffsets(t *testing.T) {
	a := mustAlgorithm(t, "MOD", map[string]string{"sharding-count": "4", "start-offset": "3"})
	targets := numbered("t_", 4)
	checkShard(t, a, targets, []shardCase{
		{v: "ORD00042", want: "t_2"},
		{v: []byte("ORD00043"), want: "t_3"},
		{v: int64(1005), want: "t_1"}, // "1005" cut to "5"
		{v: "ORD", err: true, want: `rwshard: shard: MOD: value "ORD" (string) is not an integer once cut by start-offset and stop-offset`},
		{v: "OR", err: true, want: `rwshard: shard: MOD: value "OR" (string) is shorter than start-offset + stop-offset`},
		{v: "ORDX1", err: true, want: `rwshard: shard: MOD: value "ORDX1" (string) is not an integer once cut by start-offset and stop-offset`},
		{v: 1.5, err: true, want: "rwshard: shard: MOD: value 1.5 (float64) is not an integer"},
	})
	b := mustAlgorithm(t, "MOD", map[string]string{"sharding-count": "4", "stop-offset": "2"})
	checkShard(t, b, targets, []shardCase{
		{v: "1234XX", want: "t_2"},
		{v: int64(-1399), want: "t_3"}, // "-13"
	})
	got, err := a.ShardRange(targets, Range{Lo: "ORD1", Hi: "ORD2"})
	require.NoError(t, err)
	assert.Equal(t, targets, got, "ranges on cut values go everywhere")
}

func TestModRange(t *testing.T) {
	a := mustAlgorithm(t, "MOD", map[string]string{"sharding-count": "4"})
	targets := numbered("t_order_", 4)
	checkRanges(t, a, targets, []rangeCase{
		{name: "[1,2]", r: Range{Lo: int64(1), Hi: int64(2)}, want: []string{"t_order_1", "t_order_2"}},
		{name: "[3,5] wraps", r: Range{Lo: int64(3), Hi: int64(5)}, want: []string{"t_order_0", "t_order_1", "t_order_3"}},
		{name: "[6,6]", r: Range{Lo: "6", Hi: "6"}, want: []string{"t_order_2"}},
		{name: "[-1,0]", r: Range{Lo: int64(-1), Hi: int64(0)}, want: []string{"t_order_0", "t_order_3"}},
		{name: "[0,3] all", r: Range{Lo: int64(0), Hi: int64(3)}, want: targets},
		{name: "[10,100] all", r: Range{Lo: int64(10), Hi: int64(100)}, want: targets},
		{name: "(1,3)", r: Range{Lo: int64(1), Hi: int64(3), LoExclusive: true, HiExclusive: true}, want: []string{"t_order_2"}},
		{name: "(1,2)", r: Range{Lo: int64(1), Hi: int64(2), LoExclusive: true, HiExclusive: true}, want: []string{}},
		{name: "[5,4]", r: Range{Lo: int64(5), Hi: int64(4)}, want: []string{}},
		{name: "[1,+inf)", r: Range{Lo: int64(1)}, want: targets},
		{name: "(-inf,1]", r: Range{Hi: int64(1)}, want: targets},
		{name: "uint64 past int64", r: Range{Lo: uint64(1 << 63), Hi: uint64(1<<63 + 1)}, want: targets},
		{name: "(MaxInt64, x]", r: Range{Lo: int64(math.MaxInt64), Hi: uint64(math.MaxUint64), LoExclusive: true}, want: targets},
		{name: "[x, MinInt64)", r: Range{Lo: "-99999999999999999999", Hi: int64(math.MinInt64), HiExclusive: true}, want: targets},
		{name: "bad lo", r: Range{Lo: "abc", Hi: int64(1)}, err: `rwshard: shard: MOD: value "abc" (string) is not an integer`},
		{name: "bad hi", r: Range{Hi: 2.5}, err: "rwshard: shard: MOD: value 2.5 (float64) is not an integer"},
	})
	// Targets that miss a remainder are skipped.
	got, err := a.ShardRange([]string{"t_order_0", "t_order_2", "other"}, Range{Lo: int64(1), Hi: int64(2)})
	require.NoError(t, err)
	assert.Equal(t, []string{"t_order_2"}, got)
	// A large count narrows without walking the values.
	big := mustAlgorithm(t, "MOD", map[string]string{"sharding-count": "2147483647"})
	got, err = big.ShardRange([]string{"t_5", "t_2147483646", "t_0", "t_7"}, Range{Lo: int64(-1), Hi: int64(2147483647*3 + 5)})
	require.NoError(t, err)
	assert.Len(t, got, 4)
	got, err = big.ShardRange([]string{"t_5", "t_2147483646", "t_0", "t_7"}, Range{Lo: int64(2147483646), Hi: int64(2147483647 + 5)})
	require.NoError(t, err)
	assert.Equal(t, []string{"t_5", "t_2147483646", "t_0"}, got)
}

func TestHashMod(t *testing.T) {
	a := mustAlgorithm(t, "HASH_MOD", map[string]string{"sharding-count": "8"})
	targets := numbered("t_", 8)
	be := func(u uint64) string {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], u)
		return "t_" + strconv.FormatUint(xxhash.Sum64(b[:])%8, 10)
	}
	str := func(s string) string { return "t_" + strconv.FormatUint(xxhash.Sum64String(s)%8, 10) }
	when := time.Date(2024, 3, 15, 10, 20, 30, 123456789, time.UTC)
	checkShard(t, a, targets, []shardCase{
		{v: int64(5), want: be(5)},
		{v: 5, want: be(5)},
		{v: int32(5), want: be(5)},
		{v: uint64(5), want: be(5)},
		{v: uint8(5), want: be(5)},
		{v: int64(-1), want: be(math.MaxUint64)},
		{v: int16(-1), want: be(math.MaxUint64)},
		{v: uint64(math.MaxUint64), want: be(math.MaxUint64)},
		{v: "abc", want: str("abc")},
		{v: []byte("abc"), want: str("abc")},
		{v: "", want: str("")},
		{v: when, want: str("2024-03-15T10:20:30.123456789Z")},
		{v: when.In(time.FixedZone("X", 3600)), want: str("2024-03-15T10:20:30.123456789Z")},
		{v: 1.5, err: true, want: "rwshard: shard: HASH_MOD: value 1.5 (float64) cannot be hashed (want an integer, string, []byte or time.Time)"},
		{v: nil, err: true, want: "rwshard: shard: HASH_MOD: value NULL cannot be hashed (want an integer, string, []byte or time.Time)"},
	})
	// With the default value type, "5" is a string: it hashes otherwise.
	assert.NotEqual(t, be(5), str("5"), "test vector: pick values that differ")

	long := mustAlgorithm(t, "HASH_MOD", map[string]string{"sharding-count": "8", "value-type": "long"})
	checkShard(t, long, targets, []shardCase{
		{v: "5", want: be(5)},
		{v: []byte("-1"), want: be(math.MaxUint64)},
		{v: "18446744073709551615", want: be(math.MaxUint64)},
		{v: int64(5), want: be(5)},
		{v: "abc", err: true, want: `rwshard: shard: HASH_MOD: value "abc" (string) is not an integer (value-type=long)`},
		{v: "18446744073709551616", err: true, want: `rwshard: shard: HASH_MOD: value "18446744073709551616" (string) is out of the int64 and uint64 range`},
		{v: "-9223372036854775809", err: true, want: `rwshard: shard: HASH_MOD: value "-9223372036854775809" (string) is out of the int64 and uint64 range`},
		{v: when, err: true, want: "rwshard: shard: HASH_MOD: value 2024-03-15T10:20:30.123456789Z (time.Time) cannot be hashed as value-type=long"},
	})
	strs := mustAlgorithm(t, "HASH_MOD", map[string]string{"sharding-count": "8", "value-type": "string"})
	checkShard(t, strs, targets, []shardCase{
		{v: int64(5), want: str("5")},
		{v: int32(-12), want: str("-12")},
		{v: uint64(math.MaxUint64), want: str("18446744073709551615")},
		{v: "5", want: str("5")},
		{v: when, err: true, want: "rwshard: shard: HASH_MOD: value 2024-03-15T10:20:30.123456789Z (time.Time) cannot be hashed as value-type=string"},
	})
	got, err := a.ShardRange(targets, Range{Lo: int64(1), Hi: int64(2)})
	require.NoError(t, err)
	assert.Equal(t, targets, got)
	_, err = a.Shard([]string{"t_x"}, int64(5))
	assert.ErrorIs(t, err, ErrNoTarget)
}

func TestJavaHashCodeVectors(t *testing.T) {
	strs := []struct {
		s    string
		want int32
	}{
		{"hello", 99162322},
		{"", 0},
		{"Aa", 2112},
		{"BB", 2112},
		{"a", 97},
		{"5", 53},
		{"中文", 20013*31 + 25991},            // U+4E2D, U+6587: one UTF-16 unit each
		{"😀", 0xD83D*31 + 0xDE00},           // U+1F600: a surrogate pair
		{"\xff", 0xFFFD},                    // invalid UTF-8 reads as U+FFFD, as Java's decoder
		{"polygenelubricants", -2147483648}, // a well-known Integer.MIN_VALUE hashCode
	}
	for _, c := range strs {
		assert.Equal(t, c.want, javaStringHash(c.s), "%q", c.s)
		assert.Equal(t, c.want, javaBytesHash([]byte(c.s)), "%q", c.s)
	}
	longs := []struct {
		v    int64
		want int32
	}{
		{0, 0},
		{5, 5},
		{1 << 32, 1},
		{-1, 0},
		{-5, 4},
		{1 << 31, math.MinInt32},
		{math.MaxInt64, math.MinInt32},
		{math.MinInt64, math.MinInt32},
	}
	for _, c := range longs {
		assert.Equal(t, c.want, javaLongHash(c.v), "Long %d", c.v)
	}
	assert.Equal(t, int32(-7), javaIntegerHash(-7))
	assert.Equal(t, int64(2147483648), javaAbs(math.MinInt32), "Math.abs((long) Integer.MIN_VALUE)")
	assert.Equal(t, int64(7), javaAbs(-7))
}

func TestSSHashMod(t *testing.T) {
	long := mustAlgorithm(t, "SS_HASH_MOD", map[string]string{"sharding-count": "4"})
	targets := numbered("t_", 10)
	checkShard(t, long, targets[:4], []shardCase{
		{v: int64(5), want: "t_1"},
		{v: int64(1 << 32), want: "t_1"}, // hashCode 1
		{v: int64(-1), want: "t_0"},      // hashCode 0
		{v: int64(-5), want: "t_0"},      // hashCode 4
		{v: "7", want: "t_3"},
		{v: uint64(7), want: "t_3"},
		{v: int64(math.MinInt64), want: "t_0"}, // 2147483648 % 4
		{v: uint64(math.MaxUint64), err: true, want: "rwshard: shard: SS_HASH_MOD: value 18446744073709551615 (uint64) is not an integer in the Java long range (value-type=long)"},
		{v: "abc", err: true, want: `rwshard: shard: SS_HASH_MOD: value "abc" (string) is not an integer in the Java long range (value-type=long)`},
	})
	// Long 2147483648 hashes to Integer.MIN_VALUE; Math.abs as a long is
	// 2147483648, and 2^31 mod 3 is 2.
	three := mustAlgorithm(t, "SS_HASH_MOD", map[string]string{"sharding-count": "3"})
	checkShard(t, three, targets[:3], []shardCase{{v: int64(1 << 31), want: "t_2"}})

	ints := mustAlgorithm(t, "SS_HASH_MOD", map[string]string{"sharding-count": "10", "value-type": "int"})
	checkShard(t, ints, targets, []shardCase{
		{v: int64(math.MinInt32), want: "t_8"}, // 2147483648 % 10
		{v: int64(-5), want: "t_5"},            // Integer -5: abs 5; a Long -5 would give 4
		{v: int32(123), want: "t_3"},
		{v: "-7", want: "t_7"},
		{v: int64(1 << 31), err: true, want: "rwshard: shard: SS_HASH_MOD: value 2147483648 (int64) is not an integer in the Java int range (value-type=int)"},
		{v: "x", err: true, want: `rwshard: shard: SS_HASH_MOD: value "x" (string) is not an integer in the Java int range (value-type=int)`},
	})

	strs := mustAlgorithm(t, "JAVA_HASH_MOD", map[string]string{"sharding-count": "4", "value-type": "string"})
	checkShard(t, strs, targets[:4], []shardCase{
		{v: "hello", want: "t_2"}, // 99162322 % 4
		{v: []byte("hello"), want: "t_2"},
		{v: "Aa", want: "t_0"}, // 2112 % 4
		{v: "BB", want: "t_0"},
		{v: "polygenelubricants", want: "t_0"}, // 2147483648 % 4
		{v: int64(5), want: "t_1"},             // "5": 53 % 4
		{v: int64(-5), want: "t_" + strconv.Itoa(int(javaAbs(javaStringHash("-5"))%4))},
		{v: 2.5, err: true, want: "rwshard: shard: JAVA_HASH_MOD: value 2.5 (float64) is not a string or an integer (value-type=string)"},
	})
	got, err := strs.ShardRange(targets[:4], Range{Lo: "a", Hi: "b"})
	require.NoError(t, err)
	assert.Equal(t, targets[:4], got)
}

func TestBoundaryRange(t *testing.T) {
	a := mustAlgorithm(t, "BOUNDARY_RANGE", map[string]string{"sharding-ranges": "10,20,30"})
	unsorted := mustAlgorithm(t, "boundary_range", map[string]string{"sharding-ranges": "30, 10 ,20"})
	targets := numbered("t_", 4)
	cases := []shardCase{
		{v: int64(9), want: "t_0"},
		{v: int64(-100), want: "t_0"},
		{v: int64(math.MinInt64), want: "t_0"},
		{v: "-99999999999999999999", want: "t_0"},
		{v: int64(10), want: "t_1"},
		{v: int64(19), want: "t_1"},
		{v: int64(20), want: "t_2"},
		{v: "25", want: "t_2"},
		{v: int64(29), want: "t_2"},
		{v: int64(30), want: "t_3"},
		{v: int64(math.MaxInt64), want: "t_3"},
		{v: uint64(math.MaxUint64), want: "t_3"},
		{v: "99999999999999999999", want: "t_3"},
		{v: "x", err: true, want: `rwshard: shard: BOUNDARY_RANGE: value "x" (string) is not an integer`},
		{v: nil, err: true, want: "rwshard: shard: BOUNDARY_RANGE: value NULL is not an integer"},
	}
	checkShard(t, a, targets, cases)
	checkShard(t, unsorted, targets, cases)
	checkShard(t, a, targets[:2], []shardCase{
		{v: int64(25), err: true, want: "rwshard: shard: BOUNDARY_RANGE: value 25 (int64): no target ends with 2 among [t_0 t_1]"},
	})
	// Repeated boundaries make empty partitions, as in ShardingSphere.
	dup := mustAlgorithm(t, "BOUNDARY_RANGE", map[string]string{"sharding-ranges": "10,10,20"})
	checkShard(t, dup, targets, []shardCase{{v: int64(9), want: "t_0"}, {v: int64(10), want: "t_2"}, {v: int64(20), want: "t_3"}})

	checkRanges(t, a, targets, []rangeCase{
		{name: "[5,15]", r: Range{Lo: int64(5), Hi: int64(15)}, want: []string{"t_0", "t_1"}},
		{name: "[10,19]", r: Range{Lo: int64(10), Hi: int64(19)}, want: []string{"t_1"}},
		{name: "[10,20)", r: Range{Lo: int64(10), Hi: int64(20), HiExclusive: true}, want: []string{"t_1"}},
		{name: "[10,20]", r: Range{Lo: int64(10), Hi: int64(20)}, want: []string{"t_1", "t_2"}},
		{name: "(9,10]", r: Range{Lo: int64(9), Hi: int64(10), LoExclusive: true}, want: []string{"t_1"}},
		{name: "[35,inf)", r: Range{Lo: int64(35)}, want: []string{"t_3"}},
		{name: "(-inf,10)", r: Range{Hi: int64(10), HiExclusive: true}, want: []string{"t_0"}},
		{name: "(-inf,10]", r: Range{Hi: "10"}, want: []string{"t_0", "t_1"}},
		{name: "all", r: Range{}, want: targets},
		{name: "[25,5]", r: Range{Lo: int64(25), Hi: int64(5)}, want: []string{}},
		{name: "(5,6)", r: Range{Lo: int64(5), Hi: int64(6), LoExclusive: true, HiExclusive: true}, want: []string{}},
		{name: "huge", r: Range{Lo: uint64(1 << 63), Hi: uint64(math.MaxUint64)}, want: []string{"t_3"}},
		{name: "(MaxInt64, ...", r: Range{Lo: int64(math.MaxInt64), LoExclusive: true}, want: []string{"t_3"}},
		{name: "bad", r: Range{Lo: int64(1), Hi: "x"}, err: `rwshard: shard: BOUNDARY_RANGE: value "x" (string) is not an integer`},
		{name: "bad lo", r: Range{Lo: 1.5}, err: "rwshard: shard: BOUNDARY_RANGE: value 1.5 (float64) is not an integer"},
	})
	// Partitions without a target are skipped in ranges.
	got, err := a.ShardRange([]string{"t_0", "t_3"}, Range{Lo: int64(0), Hi: int64(100)})
	require.NoError(t, err)
	assert.Equal(t, []string{"t_0", "t_3"}, got)
}

func TestVolumeRange(t *testing.T) {
	// ShardingSphere's own example: 0 < 10, 1 [10,20), 2 [20,30), 3
	// [30,40), 4 [40,45), 5 >= 45.
	a := mustAlgorithm(t, "VOLUME_RANGE", map[string]string{"range-lower": "10", "range-upper": "45", "sharding-volume": "10"})
	targets := numbered("t_order_", 6)
	checkShard(t, a, targets, []shardCase{
		{v: int64(9), want: "t_order_0"},
		{v: int64(math.MinInt64), want: "t_order_0"},
		{v: int64(10), want: "t_order_1"},
		{v: int64(19), want: "t_order_1"},
		{v: "20", want: "t_order_2"},
		{v: int64(39), want: "t_order_3"},
		{v: int64(40), want: "t_order_4"},
		{v: int64(44), want: "t_order_4"},
		{v: int64(45), want: "t_order_5"},
		{v: uint64(math.MaxUint64), want: "t_order_5"},
		{v: 1.5, err: true, want: "rwshard: shard: VOLUME_RANGE: value 1.5 (float64) is not an integer"},
	})
	checkRanges(t, a, targets, []rangeCase{
		{name: "[15,35]", r: Range{Lo: int64(15), Hi: int64(35)}, want: []string{"t_order_1", "t_order_2", "t_order_3"}},
		{name: "[15,30)", r: Range{Lo: int64(15), Hi: int64(30), HiExclusive: true}, want: []string{"t_order_1", "t_order_2"}},
		{name: "[44,inf)", r: Range{Lo: int64(44)}, want: []string{"t_order_4", "t_order_5"}},
		{name: "(-inf,9]", r: Range{Hi: int64(9)}, want: []string{"t_order_0"}},
	})
	// Extreme bounds do not overflow.
	wide := mustAlgorithm(t, "VOLUME_RANGE", map[string]string{
		"range-lower": strconv.FormatInt(math.MinInt64, 10), "range-upper": strconv.FormatInt(math.MaxInt64, 10),
		"sharding-volume": strconv.FormatInt(1<<62, 10),
	})
	checkShard(t, wide, numbered("t_", 6), []shardCase{
		{v: int64(math.MinInt64), want: "t_1"},
		{v: int64(-1), want: "t_2"},
		{v: int64(0), want: "t_3"},
		{v: int64(math.MaxInt64 - 1), want: "t_4"},
		{v: int64(math.MaxInt64), want: "t_5"},
	})
}

func intervalProps(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestIntervalMonths(t *testing.T) {
	a := mustAlgorithm(t, "INTERVAL", intervalProps(
		"datetime-pattern", "yyyy-MM-dd HH:mm:ss",
		"datetime-lower", "2024-01-01 00:00:00",
		"datetime-upper", "2024-12-31 23:59:59",
		"sharding-suffix-pattern", "yyyyMM",
		"datetime-interval-unit", "MONTHS",
	))
	var targets []string
	for m := 1; m <= 12; m++ {
		targets = append(targets, fmt.Sprintf("t_order_2024%02d", m))
	}
	east5 := time.FixedZone("UTC-5", -5*3600)
	checkShard(t, a, targets, []shardCase{
		{v: time.Date(2024, 3, 15, 10, 0, 0, 0, time.UTC), want: "t_order_202403"},
		{v: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), want: "t_order_202401"},
		{v: time.Date(2024, 12, 31, 23, 59, 59, 999999999, time.UTC), want: "t_order_202412"},
		// The wall clock counts, not the instant (2024-04-01T04:30Z).
		{v: time.Date(2024, 3, 31, 23, 30, 0, 0, east5), want: "t_order_202403"},
		{v: "2024-03-15 10:00:00", want: "t_order_202403"},
		{v: []byte("2024-03-31 23:59:59"), want: "t_order_202403"},
		{v: "2024-03-15", want: "t_order_202403"},              // shorter: the rest is midnight
		{v: "2024-04-01 00:00:00.123", want: "t_order_202404"}, // longer: cut to the pattern
		{v: "2023-12-31 23:59:59", err: true, want: `rwshard: shard: INTERVAL: value "2023-12-31 23:59:59" (string) is before datetime-lower`},
		{v: "2025-01-01 00:00:00", err: true, want: `rwshard: shard: INTERVAL: value "2025-01-01 00:00:00" (string) is after the last interval (datetime-upper)`},
		{v: "2024/03/15", err: true, want: `rwshard: shard: INTERVAL: value "2024/03/15" (string) is not in datetime-pattern: text "2024/03/15" does not match pattern "yyyy-MM-dd HH:mm:ss" at offset 4`},
		{v: "2024-13-01 00:00:00", err: true, want: `rwshard: shard: INTERVAL: value "2024-13-01 00:00:00" (string) is not in datetime-pattern: text "2024-13-01 00:00:00" is not a valid date-time for pattern "yyyy-MM-dd HH:mm:ss"`},
		{v: "2024-03-15 10:00:00 extra", want: "t_order_202403"},
		{v: "2024-03-15 1", err: true, want: `rwshard: shard: INTERVAL: value "2024-03-15 1" (string) is not in datetime-pattern: text "2024-03-15 1" does not match pattern "yyyy-MM-dd HH:mm:ss" at offset 11`},
		{v: int64(5), err: true, want: `rwshard: shard: INTERVAL: value 5 (int64) is not a time.Time or a string in datetime-pattern "yyyy-MM-dd HH:mm:ss"`},
		{v: nil, err: true, want: `rwshard: shard: INTERVAL: value NULL is not a time.Time or a string in datetime-pattern "yyyy-MM-dd HH:mm:ss"`},
	})
	checkShard(t, a, []string{"t_order_202405", "t_order_202407"}, []shardCase{
		{v: "2024-06-10", err: true, want: `rwshard: shard: INTERVAL: value "2024-06-10" (string): no target ends with "202406" among [t_order_202405 t_order_202407]`},
	})
	_, err := a.Shard(targets, "2020-01-01")
	assert.ErrorIs(t, err, ErrNoTarget)

	checkRanges(t, a, targets, []rangeCase{
		{name: "Feb 10 - Apr 5", r: Range{Lo: "2024-02-10 00:00:00", Hi: time.Date(2024, 4, 5, 0, 0, 0, 0, time.UTC)}, want: targets[1:4]},
		{name: "< Feb 1", r: Range{Hi: "2024-02-01 00:00:00", HiExclusive: true}, want: targets[:1]},
		{name: "<= Feb 1", r: Range{Hi: "2024-02-01 00:00:00"}, want: targets[:2]},
		{name: "< Feb 1", r: Range{Hi: time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC), HiExclusive: true}, want: targets[:1]},
		// Values are placed at the pattern's precision: 00:00:00.2 is in February.
		{name: "< Feb 1 00:00:00.5", r: Range{Hi: time.Date(2024, 2, 1, 0, 0, 0, 5e8, time.UTC), HiExclusive: true}, want: targets[:2]},
		{name: "< Feb 1 00:00:00.5 (string)", r: Range{Hi: "2024-02-01 00:00:00.5", HiExclusive: true}, want: targets[:2]},
		{name: "< Feb 1 (other zone)", r: Range{Hi: time.Date(2024, 2, 1, 0, 0, 0, 0, east5), HiExclusive: true}, want: targets[:1]},
		{name: ">= Nov 15", r: Range{Lo: "2024-11-15"}, want: targets[10:]},
		{name: "> Nov 30 23:59:59", r: Range{Lo: "2024-11-30 23:59:59", LoExclusive: true}, want: targets[10:]},
		{name: "all", r: Range{}, want: targets},
		{name: "reversed", r: Range{Lo: "2024-05-01", Hi: "2024-04-01"}, want: []string{}},
		{name: "from before lower", r: Range{Lo: "2023-01-01", Hi: "2024-01-15"}, want: targets[:1]},
		{name: "all before lower", r: Range{Lo: "2022-01-01", Hi: "2023-01-01"}, want: []string{}},
		{name: "all after upper", r: Range{Lo: "2025-06-01"}, want: []string{}},
		{name: "bad bound", r: Range{Lo: "yesterday"}, err: `rwshard: shard: INTERVAL: value "yesterday" (string) is not in datetime-pattern: text "yesterday" does not match pattern "yyyy-MM-dd HH:mm:ss" at offset 0`},
		{name: "bad hi", r: Range{Hi: 12}, err: `rwshard: shard: INTERVAL: value 12 (int) is not a time.Time or a string in datetime-pattern "yyyy-MM-dd HH:mm:ss"`},
	})
	got, err := a.ShardRange([]string{"t_order_202403", "t_order_202401", "t_other"}, Range{Lo: "2024-01-01", Hi: "2024-06-01"})
	require.NoError(t, err)
	assert.Equal(t, []string{"t_order_202403", "t_order_202401"}, got, "only existing targets, in target order")
}

func TestIntervalDays(t *testing.T) {
	a := mustAlgorithm(t, "INTERVAL", intervalProps(
		"datetime-pattern", "yyyy-MM-dd",
		"datetime-lower", "2024-02-27",
		"datetime-upper", "2024-03-02",
		"sharding-suffix-pattern", "yyyyMMdd",
	)) // datetime-interval-unit defaults to DAYS
	targets := []string{"t_20240227", "t_20240228", "t_20240229", "t_20240301", "t_20240302"}
	checkShard(t, a, targets, []shardCase{
		{v: "2024-02-29", want: "t_20240229"},
		{v: time.Date(2024, 3, 2, 23, 59, 0, 0, time.UTC), want: "t_20240302"},
		{v: "2024-03-03", err: true, want: `rwshard: shard: INTERVAL: value "2024-03-03" (string) is after the last interval (datetime-upper)`},
	})
	checkRanges(t, a, targets, []rangeCase{
		{name: "Feb 28 - Mar 1", r: Range{Lo: "2024-02-28", Hi: "2024-03-01"}, want: targets[1:4]},
		{name: "Feb 28 - Mar 1 excl", r: Range{Lo: "2024-02-28", Hi: "2024-03-01", HiExclusive: true}, want: targets[1:3]},
	})
	// Weeks, and a day suffix on a week step: the step's start names it.
	w := mustAlgorithm(t, "INTERVAL", intervalProps(
		"datetime-pattern", "yyyy-MM-dd", "datetime-lower", "2024-01-01", "datetime-upper", "2024-01-31",
		"sharding-suffix-pattern", "MMdd", "datetime-interval-unit", "weeks",
	))
	checkShard(t, w, []string{"t_0101", "t_0108", "t_0115", "t_0122", "t_0129"}, []shardCase{
		{v: "2024-01-10", want: "t_0108"},
		{v: "2024-02-04", want: "t_0129"}, // after upper, within the last step
	})
}

func TestIntervalYearsAndHours(t *testing.T) {
	y := mustAlgorithm(t, "INTERVAL", intervalProps(
		"datetime-pattern", "yyyy-MM-dd HH:mm:ss",
		"datetime-lower", "2020-01-01 00:00:00",
		"datetime-upper", "2025-01-01 00:00:00",
		"sharding-suffix-pattern", "yyyy",
		"datetime-interval-unit", "YEARS",
	))
	years := numbered("t_", 2026)[2020:]
	checkShard(t, y, years, []shardCase{
		{v: "2023-06-01 12:00:00", want: "t_2023"},
		{v: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), want: "t_2025"}, // upper starts the last step
		{v: "2026-01-01 00:00:00", err: true, want: `rwshard: shard: INTERVAL: value "2026-01-01 00:00:00" (string) is after the last interval (datetime-upper)`},
	})
	// "2023" must not match t_12023.
	checkShard(t, y, []string{"t_12023", "t_2023"}, []shardCase{{v: "2023-02-02", want: "t_2023"}})

	h := mustAlgorithm(t, "INTERVAL", intervalProps(
		"datetime-pattern", "yyyy-MM-dd HH:mm:ss",
		"datetime-lower", "2024-01-01 00:00:00",
		"datetime-upper", "2024-01-01 23:00:00",
		"sharding-suffix-pattern", "yyyyMMddHH",
		"datetime-interval-unit", "Hours",
	))
	var hours []string
	for i := 0; i < 24; i++ {
		hours = append(hours, fmt.Sprintf("t_20240101%02d", i))
	}
	checkShard(t, h, hours, []shardCase{{v: time.Date(2024, 1, 1, 5, 30, 0, 0, time.UTC), want: "t_2024010105"}})
	checkRanges(t, h, hours, []rangeCase{
		{name: "05:30 - 07:00", r: Range{Lo: "2024-01-01 05:30:00", Hi: "2024-01-01 07:00:00", HiExclusive: true}, want: hours[5:7]},
	})
}

func TestIntervalSteps(t *testing.T) {
	// Two-month steps: a value goes to the step's start.
	two := mustAlgorithm(t, "INTERVAL", intervalProps(
		"datetime-pattern", "yyyy-MM-dd", "datetime-lower", "2024-01-01", "datetime-upper", "2024-12-31",
		"sharding-suffix-pattern", "yyyyMM", "datetime-interval-unit", "MONTHS", "datetime-interval-amount", "2",
	))
	checkShard(t, two, []string{"t_202401", "t_202403", "t_202405"}, []shardCase{
		{v: "2024-04-15", want: "t_202403"},
		{v: "2024-05-01", want: "t_202405"},
	})
	// Months are added the Java way: Jan 31, Feb 29, Mar 29, Apr 29, May 29.
	clamp := mustAlgorithm(t, "INTERVAL", intervalProps(
		"datetime-pattern", "yyyy-MM-dd", "datetime-lower", "2024-01-31", "datetime-upper", "2024-05-31",
		"sharding-suffix-pattern", "yyyyMMdd", "datetime-interval-unit", "MONTHS",
	))
	steps := []string{"t_20240131", "t_20240229", "t_20240329", "t_20240429", "t_20240529"}
	checkShard(t, clamp, steps, []shardCase{
		{v: "2024-01-31", want: "t_20240131"},
		{v: "2024-03-28", want: "t_20240229"},
		{v: "2024-03-29", want: "t_20240329"},
		{v: "2024-06-15", want: "t_20240529"},
		{v: "2024-06-29", err: true, want: `rwshard: shard: INTERVAL: value "2024-06-29" (string) is after the last interval (datetime-upper)`},
	})
	// A month suffix reused every year: ranges collect each table once.
	mm := mustAlgorithm(t, "INTERVAL", intervalProps(
		"datetime-pattern", "yyyy-MM-dd", "datetime-lower", "2023-01-01", "datetime-upper", "2024-12-01",
		"sharding-suffix-pattern", "MM", "datetime-interval-unit", "MONTHS",
	))
	var months []string
	for m := 1; m <= 12; m++ {
		months = append(months, fmt.Sprintf("t_%02d", m))
	}
	checkShard(t, mm, months, []shardCase{{v: "2024-02-15", want: "t_02"}, {v: "2023-02-15", want: "t_02"}})
	checkRanges(t, mm, months, []rangeCase{
		{name: "Nov - Feb", r: Range{Lo: "2023-11-01", Hi: "2024-02-01"}, want: []string{"t_01", "t_02", "t_11", "t_12"}},
	})
	// Quoted literals in both patterns.
	q := mustAlgorithm(t, "INTERVAL", intervalProps(
		"datetime-pattern", "yyyy-MM-dd'T'HH:mm:ss", "datetime-lower", "2024-01-01T00:00:00", "datetime-upper", "2024-03-01T00:00:00",
		"sharding-suffix-pattern", "yyyy'_'MM", "datetime-interval-unit", "MONTHS",
	))
	checkShard(t, q, []string{"t_2024_01", "t_2024_02", "t_2024_03"}, []shardCase{{v: "2024-02-10T08:00:00", want: "t_2024_02"}})
	// Steps of a decade, a century and a millennium are months too.
	for _, unit := range []string{"DECADES", "CENTURIES", "MILLENNIA"} {
		a := mustAlgorithm(t, "INTERVAL", intervalProps(
			"datetime-pattern", "yyyy", "datetime-lower", "2000", "datetime-upper", "2000",
			"sharding-suffix-pattern", "yyyy", "datetime-interval-unit", unit,
		))
		checkShard(t, a, []string{"t_2000"}, []shardCase{{v: "2009", want: "t_2000"}})
	}
	// Fixed units: a step of one second each way.
	for unit, amount := range map[string]string{"NANOS": "1000000000", "MICROS": "1000000", "MILLIS": "1000", "SECONDS": "1"} {
		a := mustAlgorithm(t, "INTERVAL", intervalProps(
			"datetime-pattern", "yyyy-MM-dd HH:mm:ss", "datetime-lower", "2024-01-01 00:00:00", "datetime-upper", "2024-01-01 00:00:10",
			"sharding-suffix-pattern", "ss", "datetime-interval-unit", unit, "datetime-interval-amount", amount,
		))
		checkShard(t, a, numbered("t_0", 10), []shardCase{{v: "2024-01-01 00:00:07", want: "t_07"}})
	}
	// Twelve-hour steps each way.
	for unit, amount := range map[string]string{"MINUTES": "720", "HOURS": "12", "HALF_DAYS": "1"} {
		a := mustAlgorithm(t, "INTERVAL", intervalProps(
			"datetime-pattern", "yyyy-MM-dd HH:mm", "datetime-lower", "2024-01-01 00:00", "datetime-upper", "2024-01-02 00:00",
			"sharding-suffix-pattern", "HH", "datetime-interval-unit", unit, "datetime-interval-amount", amount,
		))
		checkShard(t, a, []string{"t_00", "t_12"}, []shardCase{{v: "2024-01-01 13:00", want: "t_12"}, {v: "2024-01-01 11:59", want: "t_00"}})
	}
}

func TestJavaPattern(t *testing.T) {
	when := time.Date(2024, 3, 5, 7, 8, 9, 123456789, time.UTC)
	cases := []struct {
		pattern, text string
		parsed        time.Time // of text
	}{
		{"yyyy-MM-dd HH:mm:ss", "2024-03-05 07:08:09", time.Date(2024, 3, 5, 7, 8, 9, 0, time.UTC)},
		{"yyyy-MM-dd HH:mm:ss.SSS", "2024-03-05 07:08:09.123", time.Date(2024, 3, 5, 7, 8, 9, 123000000, time.UTC)},
		{"yyyyMMdd", "20240305", time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)},
		{"yyMM", "2403", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"yyyy-M-d H:m:s", "2024-3-5 7:8:9", time.Date(2024, 3, 5, 7, 8, 9, 0, time.UTC)},
		{"uuuu/MM", "2024/03", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"''yyyy'' 'o''clock'", "'2024' o'clock", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		p, err := compileJavaPattern(c.pattern)
		require.NoError(t, err, c.pattern)
		assert.Equal(t, c.text, string(p.appendFormat(nil, when)), c.pattern)
		got, err := p.parse(c.text)
		if assert.NoError(t, err, c.pattern) {
			assert.Equal(t, c.parsed, got, c.pattern)
		}
	}
	p, err := compileJavaPattern("yyyy-MM")
	require.NoError(t, err)
	assert.Equal(t, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), p.truncate(when))
	_, err = compileJavaPattern("")
	assert.EqualError(t, err, "empty pattern")
	_, err = p.parse("")
	assert.EqualError(t, err, `text "" does not match pattern "yyyy-MM" at offset 0`)
	_, err = p.parse("2024-x")
	assert.EqualError(t, err, `text "2024-x" does not match pattern "yyyy-MM" at offset 5`)
	v, err := compileJavaPattern("yyyy-M")
	require.NoError(t, err)
	_, err = v.parse("2024-123")
	assert.EqualError(t, err, `text "2024-123" has extra characters for pattern "yyyy-M" at offset 7`)
	assert.Equal(t, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), javaPlusMonths(time.Date(2024, 1, 31, 0, 0, 0, 0, time.UTC), 1))
	assert.Equal(t, time.Date(2023, 2, 28, 0, 0, 0, 0, time.UTC), javaPlusMonths(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), -12))
	assert.Equal(t, time.Date(2023, 12, 15, 0, 0, 0, 0, time.UTC), javaPlusMonths(time.Date(2024, 1, 15, 0, 0, 0, 0, time.UTC), -1))
}

// Distribution: 10,000 consecutive keys over 8 shards; every shard gets
// within ±20% of the even share (1,250). MOD is exact; xxhash and Java's
// String.hashCode over "user-N" keys are far inside the bound.
func TestDistribution(t *testing.T) {
	const keys, shards = 10000, 8
	const even = keys / shards
	targets := numbered("t_", shards)
	cases := []struct {
		name  string
		typ   string
		props map[string]string
		value func(i int) Value
	}{
		{"MOD int64", "MOD", nil, func(i int) Value { return int64(i) }},
		{"HASH_MOD int64", "HASH_MOD", nil, func(i int) Value { return int64(i) }},
		{"HASH_MOD string", "HASH_MOD", nil, func(i int) Value { return "user-" + strconv.Itoa(i) }},
		{"HASH_MOD snowflake-like", "HASH_MOD", nil, func(i int) Value { return int64(i) << 22 }},
		{"SS_HASH_MOD string", "SS_HASH_MOD", map[string]string{"value-type": "string"}, func(i int) Value { return "user-" + strconv.Itoa(i) }},
	}
	for _, c := range cases {
		props := map[string]string{"sharding-count": strconv.Itoa(shards)}
		for k, v := range c.props {
			props[k] = v
		}
		a := mustAlgorithm(t, c.typ, props)
		counts := map[string]int{}
		for i := 0; i < keys; i++ {
			got, err := a.Shard(targets, c.value(i))
			require.NoError(t, err)
			counts[got]++
		}
		for _, tgt := range targets {
			assert.InDelta(t, even, counts[tgt], even*0.2, "%s: %s has %d of %d", c.name, tgt, counts[tgt], keys)
		}
	}
}

func TestShardAllocs(t *testing.T) {
	targets := numbered("t_order_", 8)
	for _, typ := range []string{"MOD", "HASH_MOD", "SS_HASH_MOD"} {
		a := mustAlgorithm(t, typ, map[string]string{"sharding-count": "8"})
		var v Value = int64(123456789)
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := a.Shard(targets, v); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, typ)
	}
	h := mustAlgorithm(t, "HASH_MOD", map[string]string{"sharding-count": "8"})
	for _, v := range []Value{"user-123", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), int32(5)} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := h.Shard(targets, v); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, "HASH_MOD %T", v)
	}
}

func BenchmarkShard(b *testing.B) {
	targets := numbered("t_order_", 16)
	values := make([]Value, 1024)
	strs := make([]Value, 1024)
	for i := range values {
		values[i] = int64(i)*7919 + 1<<40
		strs[i] = "user-" + strconv.Itoa(i*7919)
	}
	cases := []struct {
		name   string
		typ    string
		props  map[string]string
		values []Value
	}{
		{"MOD/int64", "MOD", map[string]string{"sharding-count": "16"}, values},
		{"HASH_MOD/int64", "HASH_MOD", map[string]string{"sharding-count": "16"}, values},
		{"HASH_MOD/string", "HASH_MOD", map[string]string{"sharding-count": "16"}, strs},
		{"SS_HASH_MOD/int64", "SS_HASH_MOD", map[string]string{"sharding-count": "16"}, values},
		{"SS_HASH_MOD/string", "SS_HASH_MOD", map[string]string{"sharding-count": "16", "value-type": "string"}, strs},
		{"BOUNDARY_RANGE/int64", "BOUNDARY_RANGE", map[string]string{"sharding-ranges": "1099511627776,1099512000000,1099513000000,1099514000000,1099515000000"}, values},
		{"INLINE/int64", "INLINE", map[string]string{"algorithm-expression": "t_order_${order_id % 16}"}, values},
	}
	for _, c := range cases {
		a := mustAlgorithm(b, c.typ, c.props)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := a.Shard(targets, c.values[i&1023]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("MOD/range", func(b *testing.B) {
		a := mustAlgorithm(b, "MOD", map[string]string{"sharding-count": "16"})
		r := Range{Lo: int64(3), Hi: int64(7)}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.ShardRange(targets, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzNewAlgorithm builds algorithms from arbitrary properties and
// shards arbitrary values with them: nothing may panic, and a result is
// always one of the targets.
func FuzzNewAlgorithm(f *testing.F) {
	types := []string{"MOD", "HASH_MOD", "SS_HASH_MOD", "BOUNDARY_RANGE", "VOLUME_RANGE", "INTERVAL", "INLINE", "x"}
	f.Add(uint8(0), "sharding-count", "4", "start-offset", "1", int64(7), "123")
	f.Add(uint8(1), "sharding-count", "3", "value-type", "string", int64(-7), "abc")
	f.Add(uint8(2), "sharding-count", "5", "value-type", "int", int64(1<<31), "-5")
	f.Add(uint8(3), "sharding-ranges", "1,5,10", "", "", int64(5), "7")
	f.Add(uint8(4), "range-lower", "10", "range-upper", "45", int64(44), "45")
	f.Add(uint8(5), "datetime-interval-unit", "DAYS", "datetime-interval-amount", "7", int64(0), "2024-03-15 10:00:00")
	f.Add(uint8(5), "sharding-suffix-pattern", "yyyy'_'M", "datetime-pattern", "yyyy-M-d", int64(0), "2024-3-5")
	f.Add(uint8(6), "algorithm-expression", "t_${id % 4}", "allow-range-query-with-inline-sharding", "true", int64(3), "5")
	f.Fuzz(func(t *testing.T, typ uint8, k1, v1, k2, v2 string, iv int64, sv string) {
		props := map[string]string{ // defaults that make the types valid, for depth
			"sharding-count": "4", "sharding-ranges": "10,20", "range-lower": "0", "range-upper": "40",
			"sharding-volume": "10", "datetime-pattern": "yyyy-MM-dd HH:mm:ss", "datetime-lower": "2024-01-01 00:00:00",
			"datetime-upper": "2024-06-01 00:00:00", "sharding-suffix-pattern": "yyyyMM", "datetime-interval-unit": "MONTHS",
			"algorithm-expression": "t_${id % 4}",
		}
		props[k1], props[k2] = v1, v2
		a, err := NewAlgorithm(types[int(typ)%len(types)], props)
		if err != nil {
			return
		}
		targets := []string{"t_0", "t_1", "t_2", "t_3", "t_202401", "t_202403", "t_" + sv}
		for _, v := range []Value{iv, sv, []byte(sv), uint64(iv), int32(iv), nil, 1.5, time.UnixMilli(iv)} {
			if got, err := a.Shard(targets, v); err == nil {
				require.Contains(t, targets, got)
			}
			for _, r := range []Range{{Lo: v, Hi: iv}, {Lo: sv, Hi: v, LoExclusive: true, HiExclusive: true}, {Hi: v}, {Lo: v}} {
				if got, err := a.ShardRange(targets, r); err == nil {
					for _, g := range got {
						require.Contains(t, targets, g)
					}
				}
			}
		}
	})
}

func ExampleNewAlgorithm() {
	mod, err := NewAlgorithm("MOD", map[string]string{"sharding-count": "4"})
	if err != nil {
		panic(err)
	}
	tables := []string{"t_order_0", "t_order_1", "t_order_2", "t_order_3"}
	for _, id := range []int64{8, 13, 42} {
		table, _ := mod.Shard(tables, id)
		fmt.Println(id, "->", table)
	}
	// A BETWEEN narrows to the tables of its remainders.
	between, _ := mod.ShardRange(tables, Range{Lo: int64(5), Hi: int64(6)})
	fmt.Println("5..6 ->", between)
	// Output:
	// 8 -> t_order_0
	// 13 -> t_order_1
	// 42 -> t_order_2
	// 5..6 -> [t_order_1 t_order_2]
}
