package shard

// GROUP BY and aggregates of the merge: groups of consecutive rows of a
// sorted stream, groups in memory, and the one group of aggregates without
// GROUP BY.

import (
	"database/sql/driver"
	"fmt"
	"io"
	"slices"
)

var (
	_ rowStream = (*groupStream)(nil)
	_ rowStream = (*memGroupStream)(nil)
	_ rowStream = (*globalStream)(nil)
)

// groupSpec is what every group of one merge shares.
type groupSpec struct {
	cls     []colClass
	groupBy []int
	aggs    []aggregate
	picks   map[int]*pick // MIN and MAX by column
	plain   []int         // columns that are not aggregates (nor taken along by MIN or MAX)
}

// newGroupSpec: isAgg marks the aggregate columns and those that MIN and
// MAX take from the row they pick.
func newGroupSpec(plan mergePlan, cls []colClass, isAgg []bool, picks map[int]*pick) *groupSpec {
	s := &groupSpec{cls: cls, groupBy: plan.GroupBy, aggs: plan.Aggregates, picks: picks}
	for c := range isAgg {
		if !isAgg[c] {
			s.plain = append(s.plain, c)
		}
	}
	return s
}

func (s *groupSpec) newState() *groupState {
	g := &groupState{row: newRowCopy(len(s.cls)), accs: make([]aggAcc, len(s.aggs))}
	for i, a := range s.aggs {
		g.accs[i].agg = a
		if p := s.picks[a.Index]; p != nil {
			g.accs[i].pick = p
			g.accs[i].cls = s.cls[p.by]
			g.accs[i].kept = newRowCopy(len(p.keep))
		}
		if a.Distinct {
			g.accs[i].argCls = s.cls[a.ArgIndex]
			g.accs[i].seen = make(map[string]struct{})
		}
	}
	g.reset()
	return g
}

// sameGroup reports whether row belongs to the group whose values are vals.
func (s *groupSpec) sameGroup(vals, row []driver.Value) bool {
	for _, c := range s.groupBy {
		if compareValues(vals[c], row[c], s.cls[c]) != 0 {
			return false
		}
	}
	return true
}

// groupState accumulates one group: the first non-NULL value of each plain
// column (the group columns among them) and one accumulator per aggregate.
type groupState struct {
	row  rowCopy
	accs []aggAcc
}

func (g *groupState) reset() {
	clear(g.row.vals)
	for i := range g.accs {
		g.accs[i].reset()
	}
}

func (g *groupState) add(s *groupSpec, row []driver.Value, src int) error {
	for _, c := range s.plain {
		if g.row.vals[c] == nil && row[c] != nil {
			g.row.set(c, row[c])
		}
	}
	for i := range g.accs {
		if err := g.accs[i].add(row); err != nil {
			return &SourceError{Source: src, Err: err}
		}
	}
	return nil
}

// result writes the aggregates into the group's row and returns it; it is
// valid until the state is reset.
func (g *groupState) result() []driver.Value {
	for i := range g.accs {
		a := &g.accs[i]
		if a.pick != nil {
			// Values of kept live in its buffers: valid until the state
			// is reset, like the rest of the group's row.
			for j, c := range a.pick.keep {
				g.row.vals[c] = a.kept.vals[j]
			}
			continue
		}
		g.row.vals[a.agg.Index] = a.result()
	}
	return g.row.vals
}

// aggAcc accumulates one aggregate over the rows of a group.
type aggAcc struct {
	agg      aggregate
	cls      colClass // MIN, MAX: of the column pick.by
	sum, cnt numAcc
	// MIN, MAX: the columns pick.keep of the row picked so far (all NULL
	// before the first non-NULL value). A character value is picked by its
	// weight and returned as the shard sent it, as the server returns one
	// of the values that weigh the least (or most).
	pick *pick
	kept rowCopy
	// DISTINCT: the keys of the argument values added so far.
	seen   map[string]struct{}
	argCls colClass
	key    []byte
}

func (a *aggAcc) reset() {
	a.sum.reset()
	a.cnt.reset()
	clear(a.kept.vals)
	clear(a.seen)
}

func (a *aggAcc) add(row []driver.Value) error {
	if a.agg.Distinct {
		v := row[a.agg.ArgIndex]
		if v == nil {
			return nil // NULL is not counted
		}
		a.key = appendKey(a.key[:0], v, a.argCls)
		if _, dup := a.seen[string(a.key)]; dup {
			return nil
		}
		a.seen[string(a.key)] = struct{}{}
	}
	switch a.agg.Kind {
	case aggCount, aggSum:
		if err := a.sum.add(row[a.agg.Index]); err != nil {
			return fmt.Errorf("column %d (%s): %w", a.agg.Index, a.agg.Kind, err)
		}
	case aggAvg:
		if err := a.sum.add(row[a.agg.SumIndex]); err != nil {
			return fmt.Errorf("column %d (SUM for AVG): %w", a.agg.SumIndex, err)
		}
		if err := a.cnt.add(row[a.agg.CountIndex]); err != nil {
			return fmt.Errorf("column %d (COUNT for AVG): %w", a.agg.CountIndex, err)
		}
	case aggMin, aggMax:
		by := 0
		if a.pick.by != a.agg.Index {
			by = 1 // the weight, kept after the value
		}
		v := row[a.pick.by]
		if v == nil || row[a.agg.Index] == nil {
			return nil
		}
		if best := a.kept.vals[by]; best != nil {
			c := compareValues(v, best, a.cls)
			if (a.agg.Kind == aggMin && c >= 0) || (a.agg.Kind == aggMax && c <= 0) {
				return nil
			}
		}
		for j, c := range a.pick.keep {
			a.kept.set(j, row[c])
		}
	}
	return nil
}

func (a *aggAcc) result() driver.Value {
	switch a.agg.Kind {
	case aggCount:
		if a.sum.kind == numNone {
			return int64(0)
		}
		return a.sum.value()
	case aggSum:
		return a.sum.value()
	case aggAvg:
		return avgValue(&a.sum, &a.cnt)
	}
	return a.kept.vals[0] // MIN, MAX
}

// groupStream merges groups of a stream sorted on the group columns: the
// rows of a group are consecutive. It holds two groups: the one it
// returned last (valid until the next call) and the one it accumulates.
type groupStream struct {
	in     rowStream
	spec   *groupSpec
	states [2]*groupState
	cur    int
	open   bool
	eof    bool
}

func (g *groupStream) next() ([]driver.Value, int, error) {
	if g.eof {
		return nil, -1, io.EOF
	}
	if g.states[0] == nil {
		g.states = [2]*groupState{g.spec.newState(), g.spec.newState()}
	}
	for {
		row, src, err := g.in.next()
		if err == io.EOF {
			g.eof = true
			if g.open {
				g.open = false
				return g.states[g.cur].result(), -1, nil
			}
			return nil, -1, io.EOF
		}
		if err != nil {
			return nil, src, err
		}
		st := g.states[g.cur]
		if g.open && g.spec.sameGroup(st.row.vals, row) {
			if err := st.add(g.spec, row, src); err != nil {
				return nil, src, err
			}
			continue
		}
		if !g.open {
			g.open = true
			if err := st.add(g.spec, row, src); err != nil {
				return nil, src, err
			}
			continue
		}
		// row starts the next group: return the current one.
		g.cur ^= 1
		nst := g.states[g.cur]
		nst.reset()
		if err := nst.add(g.spec, row, src); err != nil {
			return nil, src, err
		}
		return st.result(), -1, nil
	}
}

// memGroupStream groups an unordered stream in memory, one state per
// group, then returns the groups sorted by order. Memory: every group.
type memGroupStream struct {
	in    rowStream
	spec  *groupSpec
	order []orderKey
	built bool
	out   [][]driver.Value
	pos   int
}

func (m *memGroupStream) next() ([]driver.Value, int, error) {
	if !m.built {
		if src, err := m.build(); err != nil {
			return nil, src, err
		}
	}
	if m.pos >= len(m.out) {
		return nil, -1, io.EOF
	}
	r := m.out[m.pos]
	m.out[m.pos] = nil // let it go once returned
	m.pos++
	return r, -1, nil
}

func (m *memGroupStream) build() (int, error) {
	groups := make(map[string]*groupState)
	var list []*groupState
	var key []byte
	for {
		row, src, err := m.in.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return src, err
		}
		key = appendRowKey(key[:0], row, m.spec.groupBy, m.spec.cls)
		st, ok := groups[string(key)]
		if !ok {
			st = m.spec.newState()
			groups[string(key)] = st
			list = append(list, st)
		}
		if err := st.add(m.spec, row, src); err != nil {
			return src, err
		}
	}
	m.out = make([][]driver.Value, len(list))
	for i, st := range list {
		m.out[i] = st.result()
	}
	slices.SortStableFunc(m.out, func(a, b []driver.Value) int {
		return compareRows(a, b, m.order, m.spec.cls)
	})
	m.built = true
	return -1, nil
}

// globalStream is aggregates without GROUP BY: one row, also when no
// source returned any (COUNT 0, the other columns NULL).
type globalStream struct {
	in   rowStream
	spec *groupSpec
	done bool
}

func (g *globalStream) next() ([]driver.Value, int, error) {
	if g.done {
		return nil, -1, io.EOF
	}
	st := g.spec.newState()
	for {
		row, src, err := g.in.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, src, err
		}
		if err := st.add(g.spec, row, src); err != nil {
			return nil, src, err
		}
	}
	g.done = true
	return st.result(), -1, nil
}
