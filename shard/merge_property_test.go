package shard

// Randomized property test of merge against a reference: random tables
// split into 1–5 shards, random queries. Each shard "runs" the rewritten
// query on its rows the way MySQL would (its own GROUP BY, aggregates,
// DISTINCT, ORDER BY with ties in random order, LIMIT pushed down where the
// rewriter may push it); merge combines the shard results; the reference
// runs the original query on the unsharded rows with math/big arithmetic
// and sort.SliceStable. Both must agree exactly: same values, same Go
// types, the ORDER BY keys in the same sequence, and within each run of
// ORDER BY ties the same multiset of rows (a subset of the run's rows where
// OFFSET/LIMIT cut the run; the whole result is one run without ORDER BY).
//
// In a case-insensitive case (ci) the VARCHAR column follows a collation
// that folds case: the shards sort, group and de-duplicate it that way and
// send its weight string (the upper-cased text) where the rewriter would
// add WEIGHT_STRING; the merge must agree with the reference under that
// collation. A group's or DISTINCT row's spelling is then any of its rows',
// so rows compare with that column folded.

import (
	"bytes"
	"database/sql/driver"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"
)

var (
	mergeSeed  = flag.Uint64("merge.seed", 1, "seed of TestMergeProperty")
	mergeCases = flag.Int("merge.cases", 5000, "number of cases of TestMergeProperty")
	mergeCase  = flag.Int("merge.case", -1, "run only this case of TestMergeProperty")
)

// mergeRand is what the generator needs: math/rand/v2 or fuzz bytes.
type mergeRand interface{ IntN(n int) int }

// mergeByteRand draws from fuzz input; 0 once it runs out.
type mergeByteRand struct {
	b []byte
	i int
}

func (r *mergeByteRand) IntN(n int) int {
	if n <= 1 || r.i >= len(r.b) {
		return 0
	}
	v := int(r.b[r.i])
	r.i++
	return v % n
}

// Columns of the reference table.
const (
	pcI = iota // BIGINT holding mixed int64, uint64 > MaxInt64 and non-integral floats
	pcN        // INT, small
	pcD        // DECIMAL(30,2) as text
	pcF        // DOUBLE, dyadic values so that sums are exact in any order
	pcS        // VARCHAR
	pcT        // DATETIME as time.Time, in varying zones
	pcCount
)

var pcNames = [pcCount]string{"i", "n", "d", "f", "s", "t"}
var pcTypes = [pcCount]string{"BIGINT", "INT", "DECIMAL", "DOUBLE", "VARCHAR", "DATETIME"}

var mergeT0 = time.Date(2024, 2, 29, 23, 59, 59, 500, time.UTC)

func genValue(r mergeRand, col int, auto, ci bool) driver.Value {
	if r.IntN(5) == 0 {
		return nil
	}
	switch col {
	case pcI:
		vals := []driver.Value{int64(-2), int64(-1), int64(0), int64(1), int64(2), int64(math.MinInt64),
			int64(math.MaxInt64), uint64(1 << 63), uint64(math.MaxUint64), -1.5, 0.5, 2.5, 1e19}
		return vals[r.IntN(len(vals))]
	case pcN:
		return int64(r.IntN(9) - 3)
	case pcD:
		vals := []string{"-1.50", "0.00", "0.10", "0.20", "2.25", "10.00", "123456789012345678901234.56"}
		return []byte(vals[r.IntN(len(vals))])
	case pcF:
		vals := []float64{-1.5, 0, 0.25, 2, 3.75}
		return vals[r.IntN(len(vals))]
	case pcS:
		vals := []string{"", "a", "B", "b", "ä", "10", "9"}
		if auto { // without type names numeric text compares as numbers
			vals = vals[:5]
		}
		if ci {
			vals = append(vals, "A", "Ä")
		}
		return []byte(vals[r.IntN(len(vals))])
	default:
		zones := []*time.Location{time.UTC, time.FixedZone("A", 3600), time.FixedZone("B", -7200)}
		return mergeT0.Add(time.Duration(r.IntN(3)) * time.Hour).In(zones[r.IntN(len(zones))])
	}
}

// pExpr is one item of the select list: a column, or an aggregate of one
// (col -1: COUNT(*)), or (agg aggWeight) the weight string of a column.
type pExpr struct {
	agg aggKind
	col int
}

// aggWeight marks a weight-string column in the shard row layout.
const aggWeight aggKind = 100

func (e pExpr) String() string {
	name := "*"
	if e.col >= 0 {
		name = pcNames[e.col]
	}
	switch e.agg {
	case 0:
		return name
	case aggWeight:
		return "WEIGHT_STRING(" + name + ")"
	}
	return e.agg.String() + "(" + name + ")"
}

// pCase is one generated case: table, shards, query and its plan.
type pCase struct {
	rows   [][]driver.Value // the unsharded table
	shards [][]int          // row indexes of each shard
	kind   int              // 0 plain, 1 aggregates without GROUP BY, 2 GROUP BY
	sel    []pExpr          // visible select list
	group  []int            // GROUP BY base columns
	// Shard row layout: sel, then hidden group columns, then each AVG's
	// SUM and COUNT.
	layout    []pExpr
	types     []string
	groupPos  []int
	avgPos    map[int][2]int
	specOrder []orderKey // the query's ORDER BY (visible positions); nil: none
	planOrder []orderKey // what the shards sort by
	stream    bool       // GROUP BY merged streaming
	distinct  bool
	offset    int64
	limit     int64
	pushdown  bool
	typesVia  int // 0 plan.ColumnTypes, 1 source interface, 2 none (auto)
	reuse     bool
	ci        bool     // the VARCHAR column folds case (see the file comment)
	weights   []weight // layout positions of the VARCHAR column and its weight
	refTypes  []string // types for the reference: VARCHAR_CI when ci
}

func genCase(r mergeRand) *pCase {
	c := &pCase{typesVia: r.IntN(3), reuse: r.IntN(2) == 0, avgPos: map[int][2]int{}}
	auto := c.typesVia == 2
	c.ci = !auto && r.IntN(2) == 0 // the merge needs the type names for weights
	n := r.IntN(41)
	for range n {
		row := make([]driver.Value, pcCount)
		for col := range row {
			row[col] = genValue(r, col, auto, c.ci)
		}
		c.rows = append(c.rows, row)
	}
	c.shards = make([][]int, 1+r.IntN(5))
	for i := range c.rows {
		s := r.IntN(len(c.shards))
		c.shards[s] = append(c.shards[s], i)
	}
	c.kind = r.IntN(3)
	c.distinct = r.IntN(3) == 0
	c.offset = int64(r.IntN(4))
	if r.IntN(3) == 0 {
		c.offset = 0
	}
	c.limit = noLimit
	if r.IntN(2) == 0 {
		c.limit = int64(r.IntN(7))
	}
	randAgg := func() pExpr {
		switch r.IntN(6) {
		case 0:
			return pExpr{aggCount, -1}
		case 1:
			return pExpr{aggCount, r.IntN(pcCount)}
		case 2:
			return pExpr{aggSum, []int{pcN, pcD, pcF}[r.IntN(3)]}
		case 3:
			return pExpr{aggAvg, []int{pcN, pcD, pcF}[r.IntN(3)]}
		case 4, 5:
			kind := []aggKind{aggMin, aggMax}[r.IntN(2)]
			col := r.IntN(pcCount)
			if c.ci && col == pcS { // MIN/MAX of text compare bytewise in the merge
				col = pcT
			}
			return pExpr{kind, col}
		}
		panic("unreachable")
	}
	randKeys := func(positions []int, max int) []orderKey {
		var keys []orderKey
		perm := append([]int(nil), positions...)
		for i := len(perm) - 1; i > 0; i-- {
			j := r.IntN(i + 1)
			perm[i], perm[j] = perm[j], perm[i]
		}
		for _, p := range perm[:min(max, len(perm))] {
			keys = append(keys, orderKey{Index: p, Desc: r.IntN(2) == 0})
		}
		return keys
	}
	switch c.kind {
	case 0:
		for range 1 + r.IntN(4) {
			c.sel = append(c.sel, pExpr{0, r.IntN(pcCount)})
		}
		positions := make([]int, len(c.sel))
		for i := range positions {
			positions[i] = i
		}
		c.specOrder = randKeys(positions, r.IntN(3))
		c.planOrder = c.specOrder
		c.pushdown = c.limit >= 0
	case 1:
		for range 1 + r.IntN(4) {
			c.sel = append(c.sel, randAgg())
		}
	case 2:
		cands := []int{pcI, pcN, pcD, pcF, pcS, pcT}
		for range 1 + r.IntN(2) {
			g := cands[r.IntN(len(cands))]
			if !containsInt(c.group, g) {
				c.group = append(c.group, g)
			}
		}
		for _, g := range c.group {
			if r.IntN(3) > 0 {
				c.sel = append(c.sel, pExpr{0, g})
			}
		}
		for range r.IntN(4) {
			c.sel = append(c.sel, randAgg())
		}
		if len(c.sel) == 0 {
			c.sel = append(c.sel, pExpr{aggCount, -1})
		}
		for i := len(c.sel) - 1; i > 0; i-- {
			j := r.IntN(i + 1)
			c.sel[i], c.sel[j] = c.sel[j], c.sel[i]
		}
	}
	// Layout: hidden group columns, then AVG's SUM and COUNT.
	c.layout = append([]pExpr(nil), c.sel...)
	for _, g := range c.group {
		pos := -1
		for i, e := range c.sel {
			if e.agg == 0 && e.col == g {
				pos = i
				break
			}
		}
		if pos < 0 {
			pos = len(c.layout)
			c.layout = append(c.layout, pExpr{0, g})
		}
		c.groupPos = append(c.groupPos, pos)
	}
	for i, e := range c.sel {
		if e.agg == aggAvg {
			c.avgPos[i] = [2]int{len(c.layout), len(c.layout) + 1}
			c.layout = append(c.layout, pExpr{aggSum, e.col}, pExpr{aggCount, e.col})
		}
	}
	for _, e := range c.layout {
		c.types = append(c.types, exprType(e))
	}
	if c.kind == 2 {
		allVisible := true
		for _, p := range c.groupPos {
			allVisible = allVisible && p < len(c.sel)
		}
		var aggPos []int
		for i, e := range c.sel {
			if e.agg != 0 {
				aggPos = append(aggPos, i)
			}
		}
		mode := r.IntN(4)
		switch {
		case mode == 0 && allVisible: // ORDER BY the group columns: streaming
			c.specOrder = randKeys(c.groupPos, len(c.groupPos))
			c.planOrder = c.specOrder
			c.stream = true
		case mode <= 1: // no ORDER BY; the rewriter orders by the group columns
			for _, p := range c.groupPos {
				c.planOrder = append(c.planOrder, orderKey{Index: p})
			}
			c.stream = true
		case mode == 2 && len(aggPos) > 0: // ORDER BY an aggregate: in memory
			c.specOrder = randKeys(aggPos, 1)
			var visGroup []int
			for _, p := range c.groupPos {
				if p < len(c.sel) {
					visGroup = append(visGroup, p)
				}
			}
			c.specOrder = append(c.specOrder, randKeys(visGroup, r.IntN(2))...)
			c.planOrder = c.specOrder
		default: // no ORDER BY at all: in memory
		}
		c.pushdown = c.stream && !c.distinct && c.limit >= 0
	}
	if c.ci {
		// Weight strings where the rewriter adds them: ORDER BY keys, group
		// columns, the columns of a DISTINCT select list.
		need := map[int]bool{}
		for _, k := range c.planOrder {
			need[k.Index] = true
		}
		for _, p := range c.groupPos {
			need[p] = true
		}
		if c.distinct {
			for i := range c.sel {
				need[i] = true
			}
		}
		width := len(c.layout)
		for p := range width {
			if e := c.layout[p]; need[p] && e.agg == 0 && e.col == pcS {
				c.weights = append(c.weights, weight{Column: p, Weight: len(c.layout)})
				c.layout = append(c.layout, pExpr{aggWeight, pcS})
				c.types = append(c.types, "VARBINARY")
			}
		}
	}
	c.refTypes = append([]string(nil), c.types...)
	for i, e := range c.layout {
		if c.ci && c.refTypes[i] == "VARCHAR" && e.agg == 0 {
			c.refTypes[i] = "VARCHAR_CI"
		}
	}
	return c
}

// baseType is the reference type of a column of the table.
func (c *pCase) baseType(col int) string {
	if c.ci && col == pcS {
		return "VARCHAR_CI"
	}
	return pcTypes[col]
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func exprType(e pExpr) string {
	switch e.agg {
	case aggWeight:
		return "VARBINARY"
	case 0, aggMin, aggMax:
		if e.col < 0 {
			return "BIGINT"
		}
		return pcTypes[e.col]
	case aggCount:
		return "BIGINT"
	}
	if e.col == pcF {
		return "DOUBLE"
	}
	return "DECIMAL"
}

func (c *pCase) plan() mergePlan {
	p := mergePlan{
		OrderBy:  c.planOrder,
		Distinct: c.distinct,
		Offset:   c.offset,
		Limit:    c.limit,
		Visible:  len(c.sel),
	}
	if c.kind == 2 {
		p.GroupBy = c.groupPos
	}
	for i, e := range c.sel {
		switch e.agg {
		case 0:
		case aggAvg:
			p.Aggregates = append(p.Aggregates, aggregate{Kind: aggAvg, Index: i, SumIndex: c.avgPos[i][0], CountIndex: c.avgPos[i][1]})
		default:
			p.Aggregates = append(p.Aggregates, aggregate{Kind: e.agg, Index: i})
		}
	}
	if c.typesVia == 0 {
		p.ColumnTypes = c.types
	}
	p.Weights = c.weights
	return p
}

// eval runs the query (without ORDER BY, DISTINCT, LIMIT) over rows as
// MySQL would and returns rows in the shard layout.
func (c *pCase) eval(rows [][]driver.Value) [][]driver.Value {
	switch c.kind {
	case 0:
		out := make([][]driver.Value, len(rows))
		for i, row := range rows {
			out[i] = make([]driver.Value, len(c.layout))
			for j, e := range c.layout {
				out[i][j] = row[e.col]
				if e.agg == aggWeight {
					out[i][j] = refWeight(row[e.col])
				}
			}
		}
		return out
	case 1:
		return [][]driver.Value{c.aggRow(rows)}
	}
	var keys []string
	groups := map[string][][]driver.Value{}
	for _, row := range rows {
		var k strings.Builder
		for _, g := range c.group {
			k.WriteString(refKey(row[g], c.baseType(g)))
		}
		if _, ok := groups[k.String()]; !ok {
			keys = append(keys, k.String())
		}
		groups[k.String()] = append(groups[k.String()], row)
	}
	var out [][]driver.Value
	for _, k := range keys {
		out = append(out, c.aggRow(groups[k]))
	}
	return out
}

func (c *pCase) aggRow(rows [][]driver.Value) []driver.Value {
	out := make([]driver.Value, len(c.layout))
	for j, e := range c.layout {
		out[j] = refAggregate(e, rows)
	}
	return out
}

// refAggregate is one aggregate (or a column's first non-NULL value) over
// rows, computed with big.Rat.
func refAggregate(e pExpr, rows [][]driver.Value) driver.Value {
	var vals []driver.Value
	for _, row := range rows {
		if e.col < 0 {
			vals = append(vals, int64(1))
		} else if row[e.col] != nil {
			vals = append(vals, row[e.col])
		}
	}
	switch e.agg {
	case 0:
		if len(vals) == 0 {
			return nil
		}
		return vals[0]
	case aggWeight: // the weight of the value case 0 returns
		if len(vals) == 0 {
			return nil
		}
		return refWeight(vals[0])
	case aggCount:
		return int64(len(vals))
	case aggMin, aggMax:
		var best driver.Value
		for _, v := range vals {
			c := 0
			if best != nil {
				c = refCompare(v, best, pcTypes[e.col])
			}
			if best == nil || (e.agg == aggMin && c < 0) || (e.agg == aggMax && c > 0) {
				best = v
			}
		}
		return best
	}
	if len(vals) == 0 {
		return nil
	}
	if e.col == pcF {
		var s float64
		for _, v := range vals {
			s += v.(float64)
		}
		if e.agg == aggAvg {
			return s / float64(len(vals))
		}
		return s
	}
	sum := new(big.Rat)
	for _, v := range vals {
		sum.Add(sum, refRat(v))
	}
	scale := 0
	if e.col == pcD {
		scale = 2
	}
	if e.agg == aggAvg {
		return refDecimalText(sum.Quo(sum, new(big.Rat).SetInt64(int64(len(vals)))), scale+4)
	}
	return refDecimalText(sum, scale)
}

// refDecimalText is x rounded half away from zero (big.Rat.FloatString)
// to scale digits, without a negative zero.
func refDecimalText(x *big.Rat, scale int) []byte {
	s := x.FloatString(scale)
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return []byte(s)
}

func refRat(v driver.Value) *big.Rat {
	switch x := v.(type) {
	case int64:
		return new(big.Rat).SetInt64(x)
	case uint64:
		return new(big.Rat).SetInt(new(big.Int).SetUint64(x))
	case float64:
		return new(big.Rat).SetFloat64(x)
	case []byte:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			panic(fmt.Sprintf("not a number: %q", x))
		}
		return r
	}
	panic(fmt.Sprintf("not a number: %T", v))
}

// refWeight is the weight string of a VARCHAR value in the ci collation.
func refWeight(v driver.Value) driver.Value {
	if v == nil {
		return nil
	}
	return bytes.ToUpper(v.([]byte))
}

// refCompare is MySQL's order for the column types of the test: NULL
// first, numbers exactly, VARCHAR in binary collation (VARCHAR_CI folding
// case, VARBINARY bytewise), DATETIME by time.
func refCompare(a, b driver.Value, typ string) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	switch typ {
	case "VARCHAR", "VARBINARY":
		return bytes.Compare(a.([]byte), b.([]byte))
	case "VARCHAR_CI":
		return bytes.Compare(bytes.ToUpper(a.([]byte)), bytes.ToUpper(b.([]byte)))
	case "DATETIME":
		return a.(time.Time).Compare(b.(time.Time))
	}
	return refRat(a).Cmp(refRat(b))
}

func refCompareRows(a, b []driver.Value, keys []orderKey, types []string) int {
	for _, k := range keys {
		if c := refCompare(a[k.Index], b[k.Index], types[k.Index]); c != 0 {
			if k.Desc {
				return -c
			}
			return c
		}
	}
	return 0
}

// refKey identifies a value up to refCompare equality.
func refKey(v driver.Value, typ string) string {
	switch {
	case v == nil:
		return "null|"
	case typ == "VARCHAR" || typ == "VARBINARY":
		return fmt.Sprintf("s%q|", v)
	case typ == "VARCHAR_CI":
		return fmt.Sprintf("s%q|", bytes.ToUpper(v.([]byte)))
	case typ == "DATETIME":
		return "t" + v.(time.Time).UTC().Format(time.RFC3339Nano) + "|"
	}
	return "n" + refRat(v).RatString() + "|"
}

// refRowID identifies a row exactly, Go types included, for multisets.
func refRowID(row []driver.Value) string {
	var b strings.Builder
	for _, v := range row {
		switch x := v.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%q) ", x)
		case time.Time:
			fmt.Fprintf(&b, "time(%s) ", x.UTC().Format(time.RFC3339Nano))
		default:
			fmt.Fprintf(&b, "%T(%v) ", v, v)
		}
	}
	return b.String()
}

func refDistinct(rows [][]driver.Value, width int, types []string) [][]driver.Value {
	seen := map[string]bool{}
	var out [][]driver.Value
	for _, row := range rows {
		var k strings.Builder
		for i := range width {
			k.WriteString(refKey(row[i], types[i]))
		}
		if !seen[k.String()] {
			seen[k.String()] = true
			out = append(out, row)
		}
	}
	return out
}

// shardRows is what shard s returns for the rewritten query.
func (c *pCase) shardRows(s int, r mergeRand) [][]driver.Value {
	var rows [][]driver.Value
	for _, i := range c.shards[s] {
		rows = append(rows, c.rows[i])
	}
	out := c.eval(rows)
	if c.distinct {
		out = refDistinct(out, len(c.layout), c.refTypes)
	}
	for i := len(out) - 1; i > 0; i-- { // ties in any order
		j := r.IntN(i + 1)
		out[i], out[j] = out[j], out[i]
	}
	sort.SliceStable(out, func(i, j int) bool {
		return refCompareRows(out[i], out[j], c.planOrder, c.refTypes) < 0
	})
	if c.pushdown && int64(len(out)) > c.offset+c.limit {
		out = out[:c.offset+c.limit]
	}
	return out
}

// expected is the query over the unsharded table, without OFFSET/LIMIT,
// visible columns only.
func (c *pCase) expected() [][]driver.Value {
	out := c.eval(c.rows)
	vis := len(c.sel)
	for i := range out {
		out[i] = out[i][:vis]
	}
	if c.distinct {
		out = refDistinct(out, vis, c.refTypes)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return refCompareRows(out[i], out[j], c.specOrder, c.refTypes) < 0
	})
	return out
}

func (c *pCase) String() string {
	var b strings.Builder
	b.WriteString("SELECT ")
	if c.distinct {
		b.WriteString("DISTINCT ")
	}
	for i, e := range c.layout {
		if i == len(c.sel) {
			b.WriteString(" /* hidden: */")
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.String())
	}
	if len(c.group) > 0 {
		b.WriteString(" GROUP BY ")
		for i, g := range c.group {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pcNames[g])
		}
	}
	fmt.Fprintf(&b, " ORDER BY %v (shards: %v, stream %v) LIMIT %d, %d (pushdown %v) types via %d, reuse %v, ci %v, %d rows in %d shards",
		c.specOrder, c.planOrder, c.stream, c.offset, c.limit, c.pushdown, c.typesVia, c.reuse, c.ci, len(c.rows), len(c.shards))
	return b.String()
}

// runCase merges the shard results of c and compares with the reference.
func runCase(t testing.TB, c *pCase, r mergeRand) {
	t.Helper()
	srcs := make([]rowSource, len(c.shards))
	shardOut := make([][][]driver.Value, len(c.shards))
	names := make([]string, len(c.layout))
	for i, e := range c.layout {
		names[i] = e.String()
	}
	for s := range c.shards {
		shardOut[s] = c.shardRows(s, r)
		ms := newMergeSrc(names, shardOut[s]...)
		ms.reuse = c.reuse
		srcs[s] = ms
		if c.typesVia == 1 {
			srcs[s] = typedMergeSrc{ms, c.types}
		}
	}
	m, err := merge(c.plan(), srcs)
	if err != nil {
		t.Fatalf("%v\nMerge: %v", c, err)
	}
	got, err := mergeDrain(t, m)
	if err != nil {
		t.Fatalf("%v\nmerge: %v", c, err)
	}
	if msg := checkMerged(got, c.expected(), c.specOrder, c.refTypes, c.offset, c.limit); msg != "" {
		var b strings.Builder
		fmt.Fprintf(&b, "%v\n%s\n", c, msg)
		for s, rows := range shardOut {
			fmt.Fprintf(&b, "shard %d:\n", s)
			for _, row := range rows {
				fmt.Fprintf(&b, "  %s\n", refRowID(row))
			}
		}
		b.WriteString("merged:\n")
		for _, row := range got {
			fmt.Fprintf(&b, "  %s\n", refRowID(row))
		}
		b.WriteString("reference (before OFFSET/LIMIT):\n")
		for _, row := range c.expected() {
			fmt.Fprintf(&b, "  %s\n", refRowID(row))
		}
		t.Fatal(b.String())
	}
}

// checkMerged compares got with the window [offset, offset+limit) of the
// complete sorted reference full; it returns "" when they agree.
func checkMerged(got, full [][]driver.Value, order []orderKey, types []string, offset, limit int64) string {
	lo := min(offset, int64(len(full)))
	hi := int64(len(full))
	if limit >= 0 {
		hi = min(hi, offset+limit)
	}
	hi = max(hi, lo)
	window := full[lo:hi]
	if len(got) != len(window) {
		return fmt.Sprintf("got %d rows, want %d", len(got), len(window))
	}
	same := func(a, b []driver.Value) bool { return refCompareRows(a, b, order, types) == 0 }
	id := func(row []driver.Value) string { return refRowIDFolded(row, types) }
	for i := range got {
		if !same(got[i], window[i]) {
			return fmt.Sprintf("row %d: ORDER BY keys of %s differ from %s", i, refRowID(got[i]), refRowID(window[i]))
		}
	}
	for i := 0; i < len(window); {
		j := i
		for j < len(window) && same(window[j], window[i]) {
			j++
		}
		// The whole run of ties in full.
		fs, fe := int(lo)+i, int(lo)+j
		for fs > 0 && same(full[fs-1], window[i]) {
			fs--
		}
		for fe < len(full) && same(full[fe], window[i]) {
			fe++
		}
		if fs == int(lo)+i && fe == int(lo)+j {
			if msg := multisetDiff(got[i:j], window[i:j], true, id); msg != "" {
				return fmt.Sprintf("rows %d..%d: %s", i, j-1, msg)
			}
		} else if msg := multisetDiff(got[i:j], full[fs:fe], false, id); msg != "" {
			return fmt.Sprintf("rows %d..%d (a run cut by OFFSET/LIMIT): %s", i, j-1, msg)
		}
		i = j
	}
	return ""
}

// refRowIDFolded is refRowID with the VARCHAR_CI columns upper-cased: a
// group's spelling is any of its rows'.
func refRowIDFolded(row []driver.Value, types []string) string {
	folded := row
	for i, v := range row {
		if b, ok := v.([]byte); ok && i < len(types) && types[i] == "VARCHAR_CI" {
			if &folded[0] == &row[0] {
				folded = append([]driver.Value(nil), row...)
			}
			folded[i] = bytes.ToUpper(b)
		}
	}
	return refRowID(folded)
}

// multisetDiff checks that got is the multiset want (equal) or within it,
// rows identified by rowID.
func multisetDiff(got, want [][]driver.Value, equal bool, rowID func([]driver.Value) string) string {
	count := map[string]int{}
	for _, row := range want {
		count[rowID(row)]++
	}
	for _, row := range got {
		id := rowID(row)
		if count[id] == 0 {
			return "unexpected row " + id
		}
		count[id]--
	}
	if equal {
		for id, n := range count {
			if n > 0 {
				return "missing row " + id
			}
		}
	}
	return ""
}

func TestMergeProperty(t *testing.T) {
	cases := *mergeCases
	if testing.Short() {
		cases = min(cases, 500)
	}
	first, last := 0, cases
	if *mergeCase >= 0 {
		first, last = *mergeCase, *mergeCase+1
	}
	kinds := map[string]int{}
	for i := first; i < last; i++ {
		r := rand.New(rand.NewPCG(*mergeSeed, uint64(i)))
		c := genCase(r)
		kinds[caseKind(c)]++
		ok := t.Run(fmt.Sprint(i), func(t *testing.T) { runCase(t, c, r) })
		if !ok {
			t.Fatalf("case %d failed; rerun it with -run TestMergeProperty -merge.seed %d -merge.case %d", i, *mergeSeed, i)
		}
	}
	t.Logf("%d cases (seed %d): %v", last-first, *mergeSeed, kinds)
}

func caseKind(c *pCase) string {
	k := [...]string{"plain", "aggregate", "group"}[c.kind]
	switch {
	case c.kind == 2 && c.stream:
		k += "-stream"
	case c.kind == 2:
		k += "-memory"
	case c.kind == 0 && len(c.planOrder) > 0:
		k += "-ordered"
	}
	if c.distinct {
		k += "-distinct"
	}
	if len(c.weights) > 0 {
		k += "-ci"
	}
	return k
}
