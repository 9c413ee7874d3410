package shard

// Merge of multi-shard results.
//
// A read that the router sends to several shards runs the rewritten SQL on
// each of them; merge turns the per-shard result streams into the one result
// the caller would have got from a single table. It is pure: no I/O of its
// own beyond calling the sources, no goroutines, no package-level state.
//
// Logical order of the work, as in MySQL: GROUP BY and aggregates, then
// DISTINCT, then ORDER BY, then OFFSET/LIMIT. What can stream does:
//
//	plan                                   input          memory held by the merge
//	ORDER BY                               k-way heap     one row per source
//	no ORDER BY                            concatenation  one row
//	aggregates, no GROUP BY                concatenation  one group
//	GROUP BY, ORDER BY = the group columns k-way heap     one row per source + 2 groups
//	GROUP BY, any other ORDER BY (or none) concatenation  every group (then sorted)
//	DISTINCT, ORDER BY on all its columns  (as above)     one row
//	DISTINCT, ORDER BY on some of them     (as above)     the largest run of ORDER BY ties
//	DISTINCT, no ORDER BY                  (as above)     every distinct row
//
// OFFSET and LIMIT are applied last: the merge skips Offset rows, returns
// Limit rows and then stops reading and closes every source, so an
// "ORDER BY … LIMIT o, n" reads about o+n rows from each shard whatever the
// size of the tables (DESIGN §10).
//
// What the rewriter must do for a correct merge is written on mergePlan.

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// rowSource is one shard's result stream. It has the method set of
// driver.Rows: any driver.Rows is a rowSource, and the rowSource that merge
// returns is a driver.Rows (with ColumnTypeDatabaseTypeName too).
//
// As with driver.Rows, the values Next stores in dest may point into the
// source's buffers and need stay valid only until the source's next call of
// Next or Close; the merge copies what it keeps longer. Different sources
// must not share buffers.
type rowSource interface {
	Columns() []string
	// Next fills dest (len(Columns()) values) with the next row; it
	// returns io.EOF at the end.
	Next(dest []driver.Value) error
	Close() error
}

var (
	_ driver.Rows                           = rowSource(nil)
	_ rowSource                             = driver.Rows(nil)
	_ driver.Rows                           = (*mergedRows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*mergedRows)(nil)
)

// orderKey is one ORDER BY key: a column of the shard rows and its
// direction. NULL sorts before every value ascending and after every value
// descending, as in MySQL.
type orderKey struct {
	Index int
	Desc  bool
}

// weight names the column (Weight) that holds the WEIGHT_STRING of
// another (Column).
type weight struct {
	Column, Weight int
}

// aggKind is the function of an aggregate column.
type aggKind uint8

// Aggregate functions that merge across shards. COUNT, SUM and AVG of
// DISTINCT values merge with aggregate.Distinct: shard results of their own
// cannot be added.
const (
	aggCount aggKind = iota + 1
	aggSum
	aggMin
	aggMax
	aggAvg
)

var aggNames = [...]string{"", "COUNT", "SUM", "MIN", "MAX", "AVG"}

func (k aggKind) String() string {
	if int(k) < len(aggNames) && k != 0 {
		return aggNames[k]
	}
	return "AggKind(" + strconv.Itoa(int(k)) + ")"
}

// aggregate describes one aggregate column of the shard rows.
//
// Results (their Go types follow what the shards returned, so database/sql
// converts them as it would a single server's):
//
//   - COUNT: the sum of the shard counts, never NULL; int64 (while it fits).
//   - SUM: the exact sum of the non-NULL shard sums; NULL when every shard
//     returned NULL. Decimal text ([]byte, as MySQL sends DECIMAL) is added
//     exactly and keeps the largest scale of its inputs; integers stay
//     int64 (then uint64, then decimal text when they overflow); float64 or
//     float32 inputs make the sum a float64.
//   - MIN, MAX: the least / greatest non-NULL value under the ORDER BY
//     comparison (for a character column with a weight, the value of
//     a row whose weight is least / greatest); NULL when there is none.
//   - AVG: computed from the derived SUM (SumIndex) and COUNT (CountIndex)
//     columns, never from the shards' own averages: total SUM / total COUNT,
//     NULL when the count is 0. With exact inputs (integers, decimal text)
//     the result is decimal text ([]byte) with the SUM's scale + 4 digits
//     (at most 30, unless the SUM has more), rounded half away from zero —
//     what MySQL and MariaDB return with the default
//     div_precision_increment=4, e.g. AVG of an INT column "2.5000", of a
//     DECIMAL(10,2) column "12.345000". With float inputs (AVG of a DOUBLE
//     column) it is float64 SUM/COUNT.
//
// DISTINCT (COUNT, SUM, AVG): the shards cannot count distinct values for
// the merge, so the rewriter groups their rows by the argument too (GROUP
// BY …, x) and returns x in column ArgIndex (or its WEIGHT_STRING, named in
// Weights like any other column). The merge then adds a row's aggregate
// (COUNT(DISTINCT x) of one value: 1; SUM: x; AVG: its SUM and COUNT
// columns) only the first time its group sees that non-NULL x, so values
// found on several shards count once. Memory: the distinct values of each
// group. LIMIT must not be pushed down to the shards.
//
// Every aggregate column, visible or hidden (e.g. a SUM the rewriter added
// for ORDER BY SUM(x)), needs an entry; a column without one is not an
// aggregate and takes the value of a row of its group (the first non-NULL
// value seen, as MySQL's ANY_VALUE).
type aggregate struct {
	Kind  aggKind
	Index int // the aggregate's column; for AVG where the result goes
	// SumIndex and CountIndex (AVG only) are the derived SUM(x) and
	// COUNT(x) columns the rewriter added for AVG(x).
	SumIndex, CountIndex int
	// Distinct: COUNT, SUM or AVG of DISTINCT values; ArgIndex is the
	// column of the argument's value.
	Distinct bool
	ArgIndex int
}

// noLimit as mergePlan.Limit: the query has no LIMIT.
const noLimit = -1

// mergePlan says how to merge; the SQL rewriter fills it in. Column indexes
// are positions in the shard rows: the caller's select list first
// (Visible columns), then the columns the rewriter appended (AVG's SUM and
// COUNT, ORDER BY and GROUP BY expressions that were not selected).
//
// The rewriter's side of the contract:
//
//   - With OrderBy the shards must return their rows sorted by those keys
//     (the rewritten SQL keeps the ORDER BY); the merge trusts it.
//   - GROUP BY streams only when OrderBy is the group columns (any order,
//     any directions): the rewriter adds ORDER BY on the group columns
//     when the query has none. Otherwise the merge groups in memory (one
//     entry per group) and sorts the groups by OrderBy, or, without
//     OrderBy, by the group columns ascending (as MariaDB does).
//   - LIMIT o, n may be pushed down to the shards as LIMIT 0, o+n for a
//     plain or DISTINCT select, and for GROUP BY only when it streams and
//     there is no DISTINCT (DISTINCT over groups may need groups beyond the
//     first o+n of a shard). Never with aggregates merged in memory.
//   - HAVING cannot be evaluated per shard: the rewriter sends the shards
//     no HAVING (or only its conditions without aggregates), selects what
//     it needs, and the merge filters the merged groups (Having). LIMIT
//     must not be pushed down then.
//   - Values are compared as described at compareValues (merge_compare.go):
//     numbers numerically across int64, uint64, float64 and decimal text;
//     text and binary strings bytewise, i.e. in binary collation. A shard
//     that sorted in a case- or accent-insensitive collation (the default
//     utf8mb4 collations are) orders differently, and calls "a" and "A"
//     equal: for each ORDER BY and GROUP BY item, column of a DISTINCT
//     select list, DISTINCT aggregate argument and MIN or MAX that may be
//     text the rewriter appends a weight column and names the pair in
//     Weights (Vitess does the same); the merge then orders, groups,
//     de-duplicates and picks the least or greatest character value (CHAR,
//     VARCHAR, TEXT…) through its weight, returning the value as a shard
//     sent it. With Collated the weight columns carry how the collation
//     pads with spaces (merge_collation.go) and a character value the
//     merge would have to compare without a weight is refused. ENUM and
//     SET sort by their ordinal in MySQL, not by their text: a Collated
//     plan refuses them as ORDER BY keys; order by CAST(col AS CHAR) or
//     col+0 instead.
type mergePlan struct {
	// OrderBy keys; empty: no order (rows come shard after shard).
	OrderBy []orderKey
	// GroupBy columns. Empty with Aggregates set: one global group, one
	// output row even when every shard is empty (COUNT 0, others NULL).
	GroupBy []int
	// Aggregates, one per aggregate column of the shard rows.
	Aggregates []aggregate
	// Having filters the merged groups (after GROUP BY and aggregates,
	// before DISTINCT, ORDER BY and LIMIT); nil: every group.
	Having *havingExpr
	// Distinct removes duplicate rows, comparing the Visible columns.
	// Streaming when OrderBy covers all of them, else it remembers the rows
	// of the current run of ORDER BY ties (OrderBy on visible columns
	// only) or every distinct row (no OrderBy, or hidden OrderBy columns).
	Distinct bool
	// Offset rows are skipped, then at most Limit rows are returned;
	// Limit < 0 (noLimit): no limit. Limit 0 returns nothing: set noLimit
	// for a query without LIMIT.
	Offset, Limit int64
	// Visible: the first Visible columns are returned; the rest were
	// derived by the rewriter and are dropped. 0 means all columns.
	Visible int
	// Weights pair columns with the WEIGHT_STRING of their value in the
	// shards' collation. Where the column turns out to be of a character
	// type (by ColumnTypes, or the first source's type names), its OrderBy
	// keys, GroupBy entries, DISTINCT comparison, DISTINCT aggregate
	// argument and, for a MIN or MAX column, the choice of its value use
	// the weight column instead; other columns (numbers, whose weight
	// string is NULL, temporal and binary types, and, without Collated,
	// columns of unknown type) keep their own values.
	Weights []weight
	// Collated: the weight columns hold the rewriter's weight encoding
	// (merge_collation.go), which says how the collation pads and is
	// compared accordingly ('a' and 'a ' equal under PAD SPACE, 'a\t'
	// before 'a'), and every value that may be text has one: a character
	// column compared without a weight, one whose type is unknown, or a
	// collation whose weights rwshard cannot compare (several levels)
	// makes the merge fail with ErrUnsupported instead of comparing bytes.
	// Without Collated the weights are plain WEIGHT_STRING values compared
	// bytewise, right for NO PAD collations only.
	Collated bool
	// ColumnTypes are the database type names of the shard row columns as
	// driver.RowsColumnTypeDatabaseTypeName reports them ("DECIMAL",
	// "VARCHAR", "UNSIGNED BIGINT", …). They decide how []byte values
	// compare: numerically (numeric types), bytewise (string, binary,
	// temporal types) or as a signed duration (TIME). Nil: asked from the
	// first source if it implements driver.RowsColumnTypeDatabaseTypeName
	// (go-sql-driver/mysql's rows do); when unknown, text that parses as a
	// decimal number compares numerically and before any other text.
	ColumnTypes []string
}

// Errors of the merge of a multi-shard read's results. Match them with
// errors.Is; a failure of one shard's result comes as a *SourceError that
// names it.
var (
	// ErrMergePlan: the plan is inconsistent with itself or with the
	// sources (an index out of range, AVG without its SUM/COUNT columns…).
	ErrMergePlan = errors.New("invalid merge plan")
	// ErrMergeColumns: the sources do not return the same number of
	// columns.
	ErrMergeColumns = errors.New("shard results differ in their number of columns")
	// ErrMergeValue: a source returned a value an aggregate cannot take,
	// e.g. text that is not a number in a SUM column.
	ErrMergeValue = errors.New("value cannot be aggregated")
)

// SourceError reports the failure of one shard's result in the merge of a
// multi-shard read: an error of its Next or Close, or a value of it that
// the merge cannot use. Source is the index of that result among those
// merged, which is its unit's index in Route.Units.
type SourceError struct {
	Source int
	Err    error
}

func (e *SourceError) Error() string {
	return "rwshard: merge: source " + strconv.Itoa(e.Source) + ": " + e.Err.Error()
}

func (e *SourceError) Unwrap() error { return e.Err }

func planError(format string, args ...any) error {
	return fmt.Errorf("rwshard: merge: %w: "+format, append([]any{ErrMergePlan}, args...)...)
}

// merge returns the merged result of sources under plan, as a streaming
// rowSource: rows are read from the sources only as the caller asks for them
// (except for the in-memory cases listed in the file comment).
//
// merge takes ownership of the sources: it closes them all when it fails,
// and the returned rowSource's Close closes them (each exactly once). The
// merge itself closes each source as soon as it is exhausted, and all of
// them once Limit rows have been returned, so their connections go back to
// the pool early. merge calls only Columns (and
// ColumnTypeDatabaseTypeName) of the sources; reading starts at the first
// Next. The returned rowSource is not safe for concurrent use, as driver.Rows.
func merge(plan mergePlan, sources []rowSource) (rowSource, error) {
	set := &sourceSet{srcs: sources, closed: make([]bool, len(sources))}
	m, err := newMerged(plan, set)
	if err != nil {
		_ = set.closeAll()
		return nil, err
	}
	return m, nil
}

func newMerged(plan mergePlan, set *sourceSet) (*mergedRows, error) {
	if len(set.srcs) == 0 {
		return nil, planError("no sources")
	}
	for i, s := range set.srcs {
		if s == nil {
			return nil, planError("source %d is nil", i)
		}
	}
	cols := set.srcs[0].Columns()
	ncols := len(cols)
	for i, s := range set.srcs[1:] {
		if n := len(s.Columns()); n != ncols {
			return nil, &SourceError{Source: i + 1, Err: fmt.Errorf("%w: %d columns, source 0 has %d", ErrMergeColumns, n, ncols)}
		}
	}
	if err := plan.validate(ncols); err != nil {
		return nil, err
	}
	types := plan.ColumnTypes
	if types == nil {
		if tn, ok := set.srcs[0].(driver.RowsColumnTypeDatabaseTypeName); ok {
			types = make([]string, ncols)
			for i := range types {
				types[i] = tn.ColumnTypeDatabaseTypeName(i)
			}
		}
	}
	cls := make([]colClass, ncols)
	for i := range cls {
		if types != nil {
			cls[i] = classOf(types[i])
		}
	}
	visible := plan.Visible
	if visible == 0 {
		visible = ncols
	}
	cmpCols, err := plan.collation(cols, types, cls, visible)
	if err != nil {
		return nil, err
	}
	weigh := cmpCols.weigh
	set.checks = cmpCols.checks

	isAgg := make([]bool, ncols)
	for _, a := range plan.Aggregates {
		isAgg[a.Index] = true
	}
	var having *havingCond
	if plan.Having != nil {
		env := &havingEnv{ncols: ncols, cols: cols, types: types, collated: plan.Collated, picks: cmpCols.picks}
		if having, err = compileHaving(plan.Having, env); err != nil {
			return nil, err
		}
		set.checks = append(set.checks, env.checks...)
	}
	for _, p := range cmpCols.picks {
		for _, c := range p.keep[1:] {
			isAgg[c] = true // taken from the row MIN or MAX picks
		}
	}
	if len(weigh) > 0 {
		order := make([]orderKey, len(plan.OrderBy))
		for i, k := range plan.OrderBy {
			if w, ok := weigh[k.Index]; ok {
				k.Index = w
			}
			order[i] = k
		}
		group := make([]int, len(plan.GroupBy))
		for i, g := range plan.GroupBy {
			if w, ok := weigh[g]; ok {
				g = w
			}
			group[i] = g
		}
		plan.OrderBy, plan.GroupBy = order, group
		aggs := slices.Clone(plan.Aggregates)
		for i, a := range aggs {
			if w, ok := weigh[a.ArgIndex]; ok && a.Distinct {
				aggs[i].ArgIndex = w
			}
		}
		plan.Aggregates = aggs
	}
	var in rowStream
	switch {
	case len(plan.GroupBy) == 0 && len(plan.Aggregates) > 0:
		in = &globalStream{in: newConcat(set, ncols), spec: newGroupSpec(plan, cls, isAgg, cmpCols.picks)}
	case len(plan.GroupBy) > 0 && groupsStream(plan.GroupBy, plan.OrderBy):
		in = &groupStream{
			in:   newHeap(set, ncols, plan.OrderBy, cls),
			spec: newGroupSpec(plan, cls, isAgg, cmpCols.picks),
		}
	case len(plan.GroupBy) > 0:
		order := plan.OrderBy
		if len(order) == 0 {
			order = make([]orderKey, len(plan.GroupBy))
			for i, g := range plan.GroupBy {
				order[i] = orderKey{Index: g}
			}
		}
		in = &memGroupStream{in: newConcat(set, ncols), spec: newGroupSpec(plan, cls, isAgg, cmpCols.picks), order: order}
	case len(plan.OrderBy) > 0:
		in = newHeap(set, ncols, plan.OrderBy, cls)
	default:
		in = newConcat(set, ncols)
	}
	if having != nil {
		in = &havingStream{in: in, cond: having}
	}
	if plan.Distinct {
		eq := make([]int, visible)
		for i := range eq {
			eq[i] = i
			if w, ok := weigh[i]; ok {
				eq[i] = w
			}
		}
		in = newDistinct(in, eq, plan.OrderBy, cls)
	}

	m := &mergedRows{
		set:     set,
		in:      in,
		cols:    append([]string(nil), cols[:visible]...),
		visible: visible,
		offset:  plan.Offset,
		limit:   plan.Limit,
	}
	if types != nil {
		m.types = append([]string(nil), types[:visible]...)
	}
	return m, nil
}

// groupsStream reports whether rows sorted by order have the rows of each
// group together and the groups in order: order's columns are exactly the
// group columns.
func groupsStream(groupBy []int, order []orderKey) bool {
	if len(order) == 0 {
		return false
	}
	for _, g := range groupBy {
		if !slices.ContainsFunc(order, func(k orderKey) bool { return k.Index == g }) {
			return false
		}
	}
	for _, k := range order {
		if !slices.Contains(groupBy, k.Index) {
			return false
		}
	}
	return true
}

func (p *mergePlan) validate(ncols int) error {
	inRange := func(what string, i int) error {
		if i < 0 || i >= ncols {
			return planError("%s %d out of range (%d columns)", what, i, ncols)
		}
		return nil
	}
	if p.Visible < 0 || p.Visible > ncols {
		return planError("Visible %d out of range (%d columns)", p.Visible, ncols)
	}
	if p.Offset < 0 {
		return planError("negative Offset %d", p.Offset)
	}
	if p.ColumnTypes != nil && len(p.ColumnTypes) != ncols {
		return planError("%d ColumnTypes for %d columns", len(p.ColumnTypes), ncols)
	}
	for _, k := range p.OrderBy {
		if err := inRange("OrderBy index", k.Index); err != nil {
			return err
		}
	}
	for _, g := range p.GroupBy {
		if err := inRange("GroupBy index", g); err != nil {
			return err
		}
	}
	for _, w := range p.Weights {
		if err := inRange("Weights column", w.Column); err != nil {
			return err
		}
		if err := inRange("Weights weight", w.Weight); err != nil {
			return err
		}
		if w.Column == w.Weight {
			return planError("column %d is its own weight", w.Column)
		}
	}
	seen := make(map[int]bool, len(p.Aggregates))
	for _, a := range p.Aggregates {
		if a.Kind < aggCount || a.Kind > aggAvg {
			return planError("aggregate of column %d has unknown kind %d", a.Index, a.Kind)
		}
		if err := inRange(a.Kind.String()+" index", a.Index); err != nil {
			return err
		}
		if seen[a.Index] {
			return planError("column %d has two aggregates", a.Index)
		}
		seen[a.Index] = true
		if a.Distinct {
			if a.Kind == aggMin || a.Kind == aggMax {
				return planError("%s of column %d cannot be Distinct", a.Kind, a.Index)
			}
			if err := inRange(a.Kind.String()+" DISTINCT ArgIndex", a.ArgIndex); err != nil {
				return err
			}
			if a.ArgIndex == a.Index {
				return planError("%s(DISTINCT) of column %d needs its argument in another column", a.Kind, a.Index)
			}
		}
		if a.Kind == aggAvg {
			if err := inRange("AVG SumIndex", a.SumIndex); err != nil {
				return err
			}
			if err := inRange("AVG CountIndex", a.CountIndex); err != nil {
				return err
			}
			if a.SumIndex == a.CountIndex || a.SumIndex == a.Index || a.CountIndex == a.Index {
				return planError("AVG of column %d needs distinct SUM and COUNT columns (got %d and %d)", a.Index, a.SumIndex, a.CountIndex)
			}
		}
	}
	for _, g := range p.GroupBy {
		if seen[g] {
			return planError("GROUP BY column %d is an aggregate", g)
		}
	}
	return nil
}

// rowStream is a stage of the merge. next returns the next row and the
// index of the source it came from (-1 for a row the merge built); the row
// is valid until the following call. Errors of a source come as
// *SourceError; the end as io.EOF.
type rowStream interface {
	next() (row []driver.Value, src int, err error)
}

// sourceSet owns the sources and closes each exactly once.
type sourceSet struct {
	srcs      []rowSource
	closed    []bool
	closeErrs []error
	checks    []weightCheck // run on every row read
}

// next reads the next row of source i into dest; at its end it closes it.
func (s *sourceSet) next(i int, dest []driver.Value) error {
	if s.closed[i] {
		return io.EOF
	}
	err := s.srcs[i].Next(dest)
	if err == nil {
		for j := range s.checks {
			if err := s.checks[j].check(dest); err != nil {
				return &SourceError{Source: i, Err: err}
			}
		}
		return nil
	}
	if err == io.EOF {
		s.close(i)
		return io.EOF
	}
	return &SourceError{Source: i, Err: err}
}

func (s *sourceSet) close(i int) {
	if s.closed[i] {
		return
	}
	s.closed[i] = true
	if s.srcs[i] == nil {
		return
	}
	if err := s.srcs[i].Close(); err != nil {
		s.closeErrs = append(s.closeErrs, &SourceError{Source: i, Err: err})
	}
}

// closeAll closes every source not yet closed and returns the errors of
// every Close so far.
func (s *sourceSet) closeAll() error {
	for i := range s.srcs {
		s.close(i)
	}
	return errors.Join(s.closeErrs...)
}

// mergedRows is the rowSource merge returns: the stages, then OFFSET/LIMIT and
// the projection to the visible columns.
type mergedRows struct {
	set     *sourceSet
	in      rowStream
	cols    []string
	types   []string
	visible int

	offset, limit    int64
	skipped, emitted int64

	err    error // sticky: io.EOF once done, or the first error
	closed bool
}

func (m *mergedRows) Columns() []string { return m.cols }

// ColumnTypeDatabaseTypeName reports the type name of a visible column as
// the sources did ("" when unknown). Aggregates keep their shard type:
// COUNT is BIGINT, SUM and AVG of exact types DECIMAL, of floats DOUBLE.
func (m *mergedRows) ColumnTypeDatabaseTypeName(i int) string {
	if m.types == nil || i < 0 || i >= len(m.types) {
		return ""
	}
	return m.types[i]
}

func (m *mergedRows) Next(dest []driver.Value) error {
	if m.err != nil {
		return m.err
	}
	if m.closed {
		return io.EOF
	}
	if m.limit >= 0 && m.emitted >= m.limit {
		// Closed only now: the previous row's values may point into a
		// source's buffers until this call.
		return m.finish(io.EOF)
	}
	for m.skipped < m.offset {
		if _, _, err := m.in.next(); err != nil {
			return m.finish(err)
		}
		m.skipped++
	}
	row, _, err := m.in.next()
	if err != nil {
		return m.finish(err)
	}
	copy(dest, row[:m.visible])
	m.emitted++
	return nil
}

// finish ends the stream: sources are closed at the end or on an error, so
// that connections are released even if the caller forgets Close.
func (m *mergedRows) finish(err error) error {
	m.err = err
	_ = m.set.closeAll() // errors are kept for Close
	return err
}

// Close closes every source not yet closed; it returns the errors of all
// source Close calls (each as a *SourceError), also of those the merge
// closed early.
func (m *mergedRows) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	if m.err == nil {
		m.err = io.EOF
	}
	return m.set.closeAll()
}
