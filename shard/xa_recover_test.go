package shard

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An XA id carries the start time and the decision data source, fits the
// servers' 64-byte limits whatever the data source's name, and needs no
// quoting; recovery maps it back to the names of the rules.
func TestXAIDRoundTrip(t *testing.T) {
	start := time.UnixMilli(1_760_000_000_123)
	long := strings.Repeat("d", 40)
	for _, tc := range []struct{ decision, ds string }{
		{"ds_0", "ds_1"},
		{"ds_1", "ds_1"},
		{strings.Repeat("a", xaDecisionMax), strings.Repeat("b", xaGTRIDMax)},
		{long, long + "x"},                    // too long: hashed
		{"orders'; DROP TABLE t; --", "ds 2"}, // bytes an id cannot carry: hashed
		{"café", "ds_0"},
	} {
		xid := newXIDAt(start)
		id := xaID(xid, tc.decision, tc.ds)
		gt, bq, ok := strings.Cut(strings.Trim(id, "'"), "','")
		require.True(t, ok, id)
		assert.LessOrEqual(t, len(gt), xaGTRIDMax, id)
		assert.LessOrEqual(t, len(bq), xaGTRIDMax, id)
		assert.False(t, strings.ContainsAny(gt+bq, "'\\ \"`"), id)

		g, ok := parseGTRID(gt)
		require.True(t, ok, gt)
		assert.Equal(t, start, g.started, gt)
		nm := newXANames([]string{tc.decision, tc.ds, "other"})
		assert.Equal(t, tc.decision, nm.decision[g.decision], gt)
		assert.Equal(t, tc.ds, nm.branch[bq], bq)
	}
	// Two transactions never share a gtrid.
	assert.NotEqual(t, newXID(), newXID())
}

// Branches that are not rwshard's are never taken for its own.
func TestParseGTRIDRefusesOthers(t *testing.T) {
	for _, s := range []string{
		"",
		"g1",
		"rwshard-0123456789abcdef",                   // the format before decision records
		"rwshard:0199b4e3a2f:0123456789ab",           // no decision data source
		"rwshard:0199b4e3a2f:0123456789ab:",          // empty decision data source
		"rwshard:0199b4e3a2:0123456789ab:ds_0",       // short time
		"rwshard:0199b4e3a2fz:0123456789ab:ds_0",     // not hex
		"rwshard:0199b4e3a2f:0123456789xy:ds_0",      // not hex
		"rwshard:0199b4e3a2f:0123456789ab:ds'0",      // a byte that needs quoting
		"atomikos:0199b4e3a2f:0123456789ab:ds_0",     // another coordinator's
		"RWSHARD:0199b4e3a2f:0123456789ab:ds_0",      // case matters
		"rwshard:0199b4e3a2f:0123456789ab:ds_0:more", // a ':' no name carries
	} {
		_, ok := parseGTRID(s)
		assert.False(t, ok, "%q", s)
	}
	_, ok := parseGTRID("rwshard:0199b4e3a2f:0123456789ab:~00ff00ff00ff00ff")
	assert.True(t, ok, "a hashed name")
}

// Recovery touches a transaction only once it is older than the bound and
// was prepared on the previous pass too.
func TestXARipe(t *testing.T) {
	const bound = 10 * time.Second
	for _, tc := range []struct {
		age  time.Duration
		seen bool
		want bool
	}{
		{0, false, false},
		{0, true, false},               // in flight: a young branch is left alone
		{9 * time.Second, true, false}, // still young
		{10 * time.Second, true, true}, // old and prepared a pass ago
		{time.Hour, false, false},      // old, first seen: a clock ahead of ours, or our restart
		{time.Hour, true, true},        // old and prepared a pass ago
		{-time.Minute, true, false},    // a coordinator's clock ahead of ours
		{bound + time.Nanosecond, true, true},
	} {
		assert.Equal(t, tc.want, xaRipe(tc.age, tc.seen, bound), "age %v seen %v", tc.age, tc.seen)
	}
}

func TestDeleteDecisions(t *testing.T) {
	assert.Equal(t, "DELETE FROM rwshard_xa_decision WHERE gtrid IN (X'61',X'6263')", deleteDecisions([]string{"a", "bc"}))
}

// The finished decisions of a data source wait until xaFlushAt of them
// are there (the commit that makes them so deletes them); take and
// putBack hand them to recovery and back.
func TestXADecisionsQueue(t *testing.T) {
	var x xaDecisions
	x.putBack("ds_0", []string{"a"})
	x.putBack("ds_1", []string{"b", "c"})
	got := x.take()
	assert.Equal(t, map[string][]string{"ds_0": {"a"}, "ds_1": {"b", "c"}}, got)
	assert.Empty(t, x.take())
}

func TestXAErrors(t *testing.T) {
	nota := &mysql.MySQLError{Number: 1397, Message: "XAER_NOTA: Unknown XID"}
	assert.True(t, xaNotFound(nota))
	assert.True(t, xaNotFound(errorsJoin(nota)))
	assert.False(t, xaNotFound(&mysql.MySQLError{Number: 1399}))
	assert.True(t, noSuchTable(&mysql.MySQLError{Number: 1146}))
	assert.False(t, noSuchTable(nil))

	e := &CommitError{Committed: []string{"ds_0"}, Failed: "ds_1", Prepared: []string{"ds_1"}, Decided: true, Err: errors.New("EOF")}
	assert.Equal(t, "rwshard: shard: commit failed on shard ds_1; committed: [ds_0]; rolled back: []; "+
		"left prepared (XA RECOVER): [ds_1]; the commit is recorded: recovery commits the prepared branches: EOF", e.Error())
}

func errorsJoin(err error) error { return errors.Join(errors.New("context"), err) }
