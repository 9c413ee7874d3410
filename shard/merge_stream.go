package shard

// Row streams of the merge: the sources one after the other, the k-way
// merge of sorted sources, and DISTINCT.

import (
	"database/sql/driver"
	"io"
)

var (
	_ rowStream = (*concatStream)(nil)
	_ rowStream = (*heapStream)(nil)
	_ rowStream = (*distinctStream)(nil)
)

// concatStream reads the sources one after the other: the merge of
// unordered results.
type concatStream struct {
	set *sourceSet
	cur int
	row []driver.Value
}

func newConcat(set *sourceSet, ncols int) *concatStream {
	return &concatStream{set: set, row: make([]driver.Value, ncols)}
}

func (c *concatStream) next() ([]driver.Value, int, error) {
	for c.cur < len(c.set.srcs) {
		err := c.set.next(c.cur, c.row)
		if err == nil {
			return c.row, c.cur, nil
		}
		if err != io.EOF {
			return nil, c.cur, err
		}
		c.cur++
	}
	return nil, -1, io.EOF
}

// heapStream is the k-way merge of sources sorted by the same keys: a
// binary min-heap of source indexes ordered by each source's current row.
// It holds one row per source. The source whose row was returned last is
// advanced only at the following call, so that the row stays valid until
// then (it may point into that source's buffers). Ties go to the lower
// source index, which makes the merge deterministic and stable.
type heapStream struct {
	set     *sourceSet
	keys    []orderKey
	cls     []colClass
	rows    [][]driver.Value // current row of each source
	heap    []int
	started bool
	advance int // source to advance before the next row; -1: none
}

func newHeap(set *sourceSet, ncols int, keys []orderKey, cls []colClass) *heapStream {
	h := &heapStream{set: set, keys: keys, cls: cls, advance: -1}
	h.rows = make([][]driver.Value, len(set.srcs))
	backing := make([]driver.Value, ncols*len(set.srcs))
	for i := range h.rows {
		h.rows[i] = backing[i*ncols : (i+1)*ncols : (i+1)*ncols]
	}
	h.heap = make([]int, 0, len(set.srcs))
	return h
}

func (h *heapStream) next() ([]driver.Value, int, error) {
	if !h.started {
		h.started = true
		for i := range h.set.srcs {
			err := h.set.next(i, h.rows[i])
			if err == io.EOF {
				continue
			}
			if err != nil {
				return nil, i, err
			}
			h.heap = append(h.heap, i)
			h.up(len(h.heap) - 1)
		}
	} else if i := h.advance; i >= 0 {
		h.advance = -1
		err := h.set.next(i, h.rows[i])
		switch {
		case err == io.EOF:
			last := len(h.heap) - 1
			h.heap[0] = h.heap[last]
			h.heap = h.heap[:last]
			if last > 0 {
				h.down(0)
			}
		case err != nil:
			return nil, i, err
		default:
			h.down(0)
		}
	}
	if len(h.heap) == 0 {
		return nil, -1, io.EOF
	}
	i := h.heap[0]
	h.advance = i
	return h.rows[i], i, nil
}

func (h *heapStream) less(a, b int) bool {
	c := compareRows(h.rows[a], h.rows[b], h.keys, h.cls)
	if c != 0 {
		return c < 0
	}
	return a < b
}

func (h *heapStream) up(j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !h.less(h.heap[j], h.heap[p]) {
			return
		}
		h.heap[j], h.heap[p] = h.heap[p], h.heap[j]
		j = p
	}
}

func (h *heapStream) down(j int) {
	n := len(h.heap)
	for {
		l := 2*j + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h.less(h.heap[r], h.heap[l]) {
			m = r
		}
		if !h.less(h.heap[m], h.heap[j]) {
			return
		}
		h.heap[j], h.heap[m] = h.heap[m], h.heap[j]
		j = m
	}
}

// distinctStream drops rows equal on the columns eq (the visible columns,
// or their weight strings) to a row already returned. Rows equal on eq
// have equal ORDER BY keys when those keys are among eq, so they come in
// one run of ties: the set of rows seen is then reset at each new run, and
// when the keys cover every column of eq a run is one distinct row and no
// set is needed. Otherwise (no ORDER BY, or ORDER BY keys outside eq) it
// keeps every distinct row.
type distinctStream struct {
	in  rowStream
	eq  []int
	cls []colClass

	runKeys  []orderKey // nil: one run
	coverAll bool
	prev     rowCopy // the run keys of the previous row
	havePrev bool

	seen   map[string]struct{}
	keyBuf []byte
}

func newDistinct(in rowStream, eq []int, order []orderKey, cls []colClass) *distinctStream {
	d := &distinctStream{in: in, eq: eq, cls: cls, seen: make(map[string]struct{})}
	if len(order) == 0 {
		return d
	}
	covered := make(map[int]bool, len(eq))
	for _, i := range eq {
		covered[i] = false
	}
	for _, k := range order {
		if _, ok := covered[k.Index]; !ok {
			return d
		}
		covered[k.Index] = true
	}
	d.runKeys = order
	d.coverAll = true
	for _, c := range covered {
		d.coverAll = d.coverAll && c
	}
	d.prev = newRowCopy(len(cls))
	return d
}

func (d *distinctStream) next() ([]driver.Value, int, error) {
	for {
		row, src, err := d.in.next()
		if err != nil {
			return nil, src, err
		}
		if d.runKeys != nil {
			if !d.havePrev || compareRows(d.prev.vals, row, d.runKeys, d.cls) != 0 {
				d.havePrev = true
				for _, k := range d.runKeys {
					d.prev.set(k.Index, row[k.Index])
				}
				if d.coverAll {
					return row, src, nil
				}
				if len(d.seen) > 0 {
					if len(d.seen) > 256 {
						d.seen = make(map[string]struct{}) // clear costs the old capacity
					} else {
						clear(d.seen)
					}
				}
			} else if d.coverAll {
				continue
			}
		}
		d.keyBuf = appendRowKey(d.keyBuf[:0], row, d.eq, d.cls)
		if _, dup := d.seen[string(d.keyBuf)]; dup {
			continue
		}
		d.seen[string(d.keyBuf)] = struct{}{}
		return row, src, nil
	}
}

// rowCopy holds copies of row values beyond the life of the source's
// buffers, reusing its byte buffers.
type rowCopy struct {
	vals []driver.Value
	bufs [][]byte
}

func newRowCopy(ncols int) rowCopy {
	return rowCopy{vals: make([]driver.Value, ncols), bufs: make([][]byte, ncols)}
}

// set stores a copy of v at column i.
func (r *rowCopy) set(i int, v driver.Value) {
	if b, ok := v.([]byte); ok {
		r.bufs[i] = append(r.bufs[i][:0], b...)
		r.vals[i] = r.bufs[i]
		return
	}
	r.vals[i] = v
}
