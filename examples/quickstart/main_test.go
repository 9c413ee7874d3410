package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// The quickstart runs in CI: its story must stay true.
func TestQuickstart(t *testing.T) {
	_, s := labtest.RunFresh(t, lab.RW(), 2*time.Minute, run)
	t.Log(s)
	for _, want := range []string{
		`INSERT INTO orders … VALUES \(…, @@server_id\) ×3\s+primary\s+write`,
		`SELECT COUNT\(\*\), @@server_id FROM orders\s+replica\d\s+replica`,
		`FOR UPDATE primary\s+locking-read`,
		`LAST_INSERT_ID\(\), @@server_id\s+primary\s+session-read`,
		`\(in the transaction\)\s+primary\s+in-transaction`,
		`one \*sql.Conn\s+primary\s+session-pinned \(@greeting=hello\)`,
		`replica1 fenced: measured lag`,
		`6 reads while fenced went to: replica2 ×6\n`,
		`\(same session, at once\)\s+(primary\s+read-your-writes|replica[12]\s+replica), saw shipped`,
		`40 reads: 0 failed; served by replica1 ×40; replica2 up: false`,
		`restarted: replica2 up again: true`,
	} {
		assert.Regexp(t, regexp.MustCompile(want), s)
	}
}
