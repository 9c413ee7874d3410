package balance

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// Weighted spreads reads in proportion to per-node weights, by smooth
// weighted round robin (the algorithm of nginx's upstream module).
//
// Each node has a current value, initially 0. On each pick every usable
// candidate with a positive weight adds its weight to its current value;
// the candidate with the highest current value is picked (the first in
// cands order on a tie) and the sum of the participating weights is taken
// off its current value. Over any stretch of picks with the same usable
// set the shares are exact, and they are interleaved rather than bunched:
// weights {a:5, b:1, c:1} give a a b a c a a, not a a a a a b c.
//
// Weights are looked up by Candidate.Name. A weight of 0 means the node is
// never picked, even when it is the only usable candidate: Pick then
// returns -1 and the router's fallback rule decides (and counts) what
// happens. An unusable candidate does not take part, so the others share
// its load in proportion to their own weights; its current value is kept
// and it resumes where it left off when it is usable again. A candidate
// whose name has no weight is never picked; Bind turns that case into a
// configuration error.
//
// A Weighted is safe for concurrent use: the current values live under a
// mutex, held for one pass over cands. Pick does not allocate.
type Weighted struct {
	slot   map[string]int // name → index into weight and current; read-only after NewWeighted
	weight []float64      // read-only after NewWeighted
	names  []string       // weight keys, sorted, for error messages

	mu      sync.Mutex
	current []float64 // guarded by mu
	// bound[i] is the slot of boundNames[i], the i-th name passed to the
	// last successful Bind: a candidate at its bound position skips the map
	// lookup. Guarded by mu.
	bound      []int
	boundNames []string
}

// NewWeighted returns a smooth weighted round-robin policy over the given
// weights, keyed by node name. The map is copied.
//
// It returns a *WeightError if a weight is negative, NaN or infinite, or if
// no weight is positive (all zero, or none given).
func NewWeighted(weights map[string]float64) (*Weighted, error) {
	names := make([]string, 0, len(weights))
	for name := range weights {
		names = append(names, name)
	}
	slices.Sort(names)
	w := &Weighted{
		slot:    make(map[string]int, len(names)),
		weight:  make([]float64, len(names)),
		names:   names,
		current: make([]float64, len(names)),
	}
	positive := false
	for i, name := range names {
		v := weights[name]
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, &WeightError{Name: name, Weight: v, hasWeight: true,
				Reason: "weights must be finite numbers >= 0"}
		}
		positive = positive || v > 0
		w.slot[name] = i
		w.weight[i] = v
	}
	if !positive {
		if len(names) == 0 {
			return nil, &WeightError{Reason: "none given: at least one weight must be > 0"}
		}
		var b strings.Builder
		for i, name := range names {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q=0", name)
		}
		return nil, &WeightError{Reason: "every weight is 0 (" + b.String() + "): at least one must be > 0"}
	}
	return w, nil
}

// Bind implements Binder. It checks that the weights and the read
// candidates name the same nodes: a weight whose key names no candidate (a
// typo that would otherwise silently leave that node idle and, with the
// primary weighted, send every read to the primary) and a candidate with
// no weight are both *WeightError. Candidate names must be unique.
//
// Bind does not retain names. After a successful Bind, Pick finds the
// weight of a candidate that sits at its bound position without a map
// lookup; candidates in another order or with other names are still looked
// up by name.
func (w *Weighted) Bind(names []string) error {
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if seen[name] {
			return &WeightError{Name: name, Reason: "the read candidate names are not unique: " + quoteList(names)}
		}
		seen[name] = true
	}
	for _, key := range w.names {
		if !seen[key] {
			return &WeightError{Name: key, Weight: w.weight[w.slot[key]], hasWeight: true,
				Reason: "no read candidate has that name; known: " + quoteList(names)}
		}
	}
	bound := make([]int, len(names))
	for i, name := range names {
		s, ok := w.slot[name]
		if !ok {
			return &WeightError{Name: name,
				Reason: "missing: every read candidate needs a weight (0 to never pick it); weights given for: " + quoteList(w.names)}
		}
		bound[i] = s
	}
	w.mu.Lock()
	w.bound, w.boundNames = bound, slices.Clone(names)
	w.mu.Unlock()
	return nil
}

// Pick implements Policy.
func (w *Weighted) Pick(cands []Candidate) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	best, bestSlot := -1, 0
	var total float64
	for i := range cands {
		c := &cands[i]
		if !c.Usable {
			continue
		}
		s, ok := 0, false
		if i < len(w.bound) && w.boundNames[i] == c.Name {
			s, ok = w.bound[i], true
		} else {
			s, ok = w.slot[c.Name]
		}
		if !ok || w.weight[s] <= 0 {
			continue
		}
		w.current[s] += w.weight[s]
		total += w.weight[s]
		if best < 0 || w.current[s] > w.current[bestSlot] {
			best, bestSlot = i, s
		}
	}
	if best >= 0 {
		w.current[bestSlot] -= total
	}
	return best
}

// String returns "weighted", the name ByName recognizes (and refuses,
// since weights are needed: use NewWeighted).
func (*Weighted) String() string { return "weighted" }

// WeightError reports an invalid weight configuration.
type WeightError struct {
	// Name is the weight key or node name at fault; empty when the fault
	// is in the set of weights as a whole.
	Name string
	// Weight is the value at fault, when there is one (see Error).
	Weight float64
	// Reason says what is wrong and, where it helps, lists the valid names.
	Reason string

	hasWeight bool // Weight holds a configured value
}

// Error formats the error as
//
//	balance: weight for "NAME" is VALUE: REASON
//	balance: weight for "NAME": REASON   (no value, e.g. missing)
//	balance: weights: REASON             (the set as a whole)
func (e *WeightError) Error() string {
	switch {
	case e.hasWeight:
		return fmt.Sprintf("balance: weight for %q is %v: %s", e.Name, e.Weight, e.Reason)
	case e.Name != "":
		return fmt.Sprintf("balance: weight for %q: %s", e.Name, e.Reason)
	default:
		return "balance: weights: " + e.Reason
	}
}

func quoteList(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", n)
	}
	return b.String()
}
