package monitor

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// GTIDSet is a replication position: MariaDB's domain-server-seq list
// (@@gtid_binlog_pos, @@gtid_slave_pos, @@last_gtid) or MySQL's
// uuid:interval set (@@gtid_executed). The zero value is the empty set.
//
// For MariaDB only the highest sequence number per replication domain
// matters: within a domain, transactions apply in order (gtid_strict_mode),
// whatever server_id wrote them, so a switchover does not break the
// comparison.
type GTIDSet struct {
	maria map[uint32]uint64     // domain → highest seq
	srv   map[uint32]uint64     // domain → server_id of that GTID (for the text)
	mysql map[string][]interval // source uuid → sorted, merged intervals
	text  string                // as parsed, for messages
}

type interval struct{ lo, hi uint64 }

// ParseGTID parses either flavor. An empty string is the empty set.
func ParseGTID(s string) (GTIDSet, error) {
	s = strings.TrimSpace(s)
	g := GTIDSet{text: s}
	if s == "" {
		return g, nil
	}
	if strings.Contains(s, ":") {
		if err := g.parseMySQL(s); err != nil {
			return GTIDSet{}, err
		}
		return g, nil
	}
	g.maria, g.srv = map[uint32]uint64{}, map[uint32]uint64{}
	for part := range strings.SplitSeq(s, ",") {
		f := strings.Split(strings.TrimSpace(part), "-")
		if len(f) != 3 {
			return GTIDSet{}, fmt.Errorf("health: bad MariaDB GTID %q in %q", part, s)
		}
		d, err1 := strconv.ParseUint(f[0], 10, 32)
		srv, err2 := strconv.ParseUint(f[1], 10, 32)
		seq, err3 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return GTIDSet{}, fmt.Errorf("health: bad MariaDB GTID %q in %q", part, s)
		}
		if seq > g.maria[uint32(d)] {
			g.maria[uint32(d)], g.srv[uint32(d)] = seq, srv
		}
	}
	return g, nil
}

func (g *GTIDSet) parseMySQL(s string) error {
	g.mysql = map[string][]interval{}
	for part := range strings.SplitSeq(s, ",") {
		f := strings.Split(strings.TrimSpace(part), ":")
		if len(f) < 2 || f[0] == "" {
			return fmt.Errorf("health: bad MySQL GTID set %q", s)
		}
		// A tag (MySQL 8.3+: uuid:tag:1-5) names a source of its own;
		// the intervals after it are that source's.
		uuid := strings.ToLower(f[0])
		source, tagged := uuid, false
		for _, r := range f[1:] {
			if isTag(r) {
				if tagged {
					return fmt.Errorf("health: bad MySQL GTID tag %q in %q", r, s)
				}
				source, tagged = uuid+":"+strings.ToLower(r), true
				continue
			}
			tagged = false
			lo, hi, isRange := strings.Cut(r, "-")
			a, err := strconv.ParseUint(lo, 10, 64)
			if err != nil {
				return fmt.Errorf("health: bad MySQL GTID interval %q in %q", r, s)
			}
			b := a
			if isRange {
				if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
					return fmt.Errorf("health: bad MySQL GTID interval %q in %q", r, s)
				}
			}
			g.mysql[source] = addInterval(g.mysql[source], interval{a, b})
		}
		if tagged {
			return fmt.Errorf("health: bad MySQL GTID set %q: tag without intervals", s)
		}
	}
	return nil
}

// isTag reports a GTID tag: a letter or underscore, then up to 31 letters,
// digits or underscores.
func isTag(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && '0' <= c && c <= '9':
		default:
			return false
		}
	}
	return true
}

// addInterval inserts iv into a sorted, merged list.
func addInterval(list []interval, iv interval) []interval {
	out := make([]interval, 0, len(list)+1)
	placed := false
	for _, x := range list {
		switch {
		case iv.lo > 0 && x.hi < iv.lo-1: // x ends before iv, with a gap
			out = append(out, x)
		case x.lo > 0 && iv.hi < x.lo-1: // iv ends before x, with a gap
			if !placed {
				out = append(out, iv)
				placed = true
			}
			out = append(out, x)
		default: // overlapping or adjacent: merge into iv
			iv = interval{min(iv.lo, x.lo), max(iv.hi, x.hi)}
		}
	}
	if !placed {
		out = append(out, iv)
	}
	return out
}

// MySQL reports whether the set is in MySQL's uuid:interval form (and
// returns its text), as opposed to MariaDB's.
func (g GTIDSet) MySQL() (string, bool) { return g.text, len(g.mysql) > 0 }

// IsZero reports the empty set.
func (g GTIDSet) IsZero() bool { return len(g.maria) == 0 && len(g.mysql) == 0 }

// String returns the text it was parsed from.
func (g GTIDSet) String() string { return g.text }

// Contains reports whether a server at position g has applied everything
// in other. The empty set is contained in everything.
func (g GTIDSet) Contains(other GTIDSet) bool {
	for d, seq := range other.maria {
		if g.maria[d] < seq {
			return false
		}
	}
	for uuid, ivs := range other.mysql {
		have := g.mysql[uuid]
		for _, iv := range ivs {
			if !covered(have, iv) {
				return false
			}
		}
	}
	return true
}

// Union returns the position that contains both g and other: for
// MariaDB the highest sequence number per domain, for MySQL the union of
// the intervals. Its text is the canonical form of that position, fit for
// MASTER_GTID_WAIT or WAIT_FOR_EXECUTED_GTID_SET.
func (g GTIDSet) Union(other GTIDSet) GTIDSet {
	switch {
	case other.IsZero() || g.Contains(other) && g.text != "":
		return g
	case g.IsZero() || other.Contains(g) && other.text != "":
		return other
	}
	out := GTIDSet{}
	if len(g.maria)+len(other.maria) > 0 {
		out.maria, out.srv = map[uint32]uint64{}, map[uint32]uint64{}
		for _, in := range []GTIDSet{g, other} {
			for d, seq := range in.maria {
				if seq >= out.maria[d] {
					out.maria[d], out.srv[d] = seq, in.srv[d]
				}
			}
		}
	}
	if len(g.mysql)+len(other.mysql) > 0 {
		out.mysql = map[string][]interval{}
		for _, in := range []GTIDSet{g, other} {
			for src, ivs := range in.mysql {
				for _, iv := range ivs {
					out.mysql[src] = addInterval(out.mysql[src], iv)
				}
			}
		}
	}
	out.text = out.format()
	return out
}

// Domain returns the MariaDB GTID of domain d in g, and false when g has
// none there.
func (g GTIDSet) Domain(d uint32) (GTIDSet, bool) {
	seq, ok := g.maria[d]
	if !ok {
		return GTIDSet{}, false
	}
	out := GTIDSet{maria: map[uint32]uint64{d: seq}, srv: map[uint32]uint64{d: g.srv[d]}}
	out.text = out.format()
	return out, true
}

// format writes the set in the servers' syntax, sorted.
func (g GTIDSet) format() string {
	var parts []string
	for _, d := range slices.Sorted(maps.Keys(g.maria)) {
		parts = append(parts, strconv.FormatUint(uint64(d), 10)+"-"+strconv.FormatUint(g.srv[d], 10)+"-"+strconv.FormatUint(g.maria[d], 10))
	}
	for _, src := range slices.Sorted(maps.Keys(g.mysql)) {
		var b strings.Builder
		b.WriteString(src)
		for _, iv := range g.mysql[src] {
			b.WriteString(":" + strconv.FormatUint(iv.lo, 10))
			if iv.hi != iv.lo {
				b.WriteString("-" + strconv.FormatUint(iv.hi, 10))
			}
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, ",")
}

func covered(have []interval, iv interval) bool {
	for _, h := range have {
		if h.lo <= iv.lo && iv.hi <= h.hi {
			return true
		}
	}
	return false
}
