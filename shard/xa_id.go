package shard

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// The XA id of a cross-shard transaction tells any rwshard instance with
// the same rules everything recovery needs, so that no log outside the
// databases is kept:
//
//	gtrid  rwshard:<start, unix ms, 11 hex>:<12 random hex>:<decision data source>
//	bqual  <the branch's data source>
//
// The decision data source is the first one the transaction touched: its
// branch holds the row of rwshard_xa_decision that records the commit.
// It is known when the first branch starts, so every branch carries it.
// A data source name that is too long for an XA id, or holds a byte
// outside [A-Za-z0-9_.$-], is carried as "~" and a hash of the name;
// recovery finds it among the names of the rules.

const (
	xaPrefix     = "rwshard:"
	xaGTRIDMax   = 64 // bytes of a gtrid, and of a bqual (MySQL, MariaDB)
	xaTimeDigits = 11
	xaRandDigits = 12
	// xaDecisionMax is what the gtrid leaves for the decision data source.
	xaDecisionMax = xaGTRIDMax - len(xaPrefix) - xaTimeDigits - 1 - xaRandDigits - 1
)

// newXID returns the start of a new transaction's gtrid: everything but
// the decision data source, which the first branch adds (conn.xaID).
func newXID() string { return newXIDAt(time.Now()) }

func newXIDAt(now time.Time) string {
	var b [xaRandDigits / 2]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s%0*x:%s", xaPrefix, xaTimeDigits, now.UnixMilli(), hex.EncodeToString(b[:]))
}

// xaTag is how data source ds appears in an XA id where room bytes are
// left for it: its name, or "~" and a hash of it.
func xaTag(ds string, room int) string {
	if len(ds) > 0 && len(ds) <= room && !strings.ContainsFunc(ds, notTagRune) {
		return ds
	}
	h := fnv.New64a()
	h.Write([]byte(ds))
	return fmt.Sprintf("~%016x", h.Sum64())
}

// notTagRune reports a rune a data source's name cannot carry into an XA
// id as it is.
func notTagRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.$-", r))
}

// xaID is the XA id of data source ds's branch of transaction xid, whose
// decision is recorded on data source decision, as SQL: 'gtrid','bqual'.
// Every part is made of the bytes xaTag allows: no quoting is needed.
func xaID(xid, decision, ds string) string {
	return "'" + gtridOf(xid, decision) + "','" + xaTag(ds, xaGTRIDMax) + "'"
}

// gtridOf is the gtrid of transaction xid whose decision is recorded on
// data source decision.
func gtridOf(xid, decision string) string { return xid + ":" + xaTag(decision, xaDecisionMax) }

// gtrid is a parsed rwshard gtrid.
type gtrid struct {
	started  time.Time
	decision string // the decision data source's tag (xaTag)
}

// parseGTRID parses an rwshard gtrid; ok is false for any other.
func parseGTRID(s string) (g gtrid, ok bool) {
	rest, ok := strings.CutPrefix(s, xaPrefix)
	if !ok {
		return g, false
	}
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) != 3 || len(parts[0]) != xaTimeDigits || len(parts[1]) != xaRandDigits || parts[2] == "" ||
		strings.ContainsFunc(strings.TrimPrefix(parts[2], "~"), notTagRune) {
		return g, false
	}
	ms, err := strconv.ParseUint(parts[0], 16, 64)
	if err != nil {
		return g, false
	}
	if _, err := hex.DecodeString(parts[1]); err != nil {
		return g, false
	}
	return gtrid{started: time.UnixMilli(int64(ms)), decision: parts[2]}, true
}

// xaNames maps the tags of data source names, as a gtrid's decision and
// as a bqual, back to the names.
type xaNames struct {
	decision map[string]string
	branch   map[string]string
}

func newXANames(names []string) xaNames {
	n := xaNames{decision: map[string]string{}, branch: map[string]string{}}
	for _, ds := range names {
		n.decision[xaTag(ds, xaDecisionMax)] = ds
		n.branch[xaTag(ds, xaGTRIDMax)] = ds
	}
	return n
}
