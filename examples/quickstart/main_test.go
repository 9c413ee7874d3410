package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// The quickstart runs in CI on a lab of its own, given the lab's DSN as a
// user gives theirs: its story must stay true, and the node it names for
// each statement must be the lab's node of that @@server_id.
func TestQuickstart(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	var out strings.Builder
	if err := run(labtest.Ctx(t, 2*time.Minute), &out, labtest.DSN(l, "")); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	s := out.String()
	t.Log(s)
	assert.NotContains(t, s, lab.AppPassword, "the password is redacted")
	for _, n := range l.Nodes() {
		assert.Regexp(t, fmt.Sprintf(`(?m)^  %s +%s  server_id=%d$`, n.Name, regexp.QuoteMeta(n.Addr()), n.ServerID), s)
	}
	for _, want := range []string{
		`INSERT INTO orders … VALUES \(…, @@server_id\) ×3\s+primary\s+write`,
		`SELECT COUNT\(\*\), @@server_id FROM orders\s+replica[12]\s+replica\n.*SELECT COUNT\(\*\), @@server_id FROM orders\s+replica[12]\s+replica\n`,
		`FOR UPDATE primary\s+locking-read\n`,
		`LAST_INSERT_ID\(\), @@server_id\s+primary\s+session-read\n`,
		`/\* rwshard:primary \*/ SELECT total, @@server_id FROM orders\.\.\.\s+primary\s+hint-primary\n`,
		`SELECT COUNT\(\*\), @@server_id FROM orders WHERE id = 3\s+replica2\s+hint-node \(hint.Node\)\n`,
		`\(in the transaction\)\s+primary\s+in-transaction\n`,
		`one \*sql.Conn\s+replica\d\s+replica \(@greeting=hello, replayed there\)\n`,
		`\(same session, at once\)\s+(primary\s+read-your-writes|replica[12]\s+replica), saw shipped\n`,
		`\(another session\)\s+replica[12]\s+replica\n`,
		`(?m)^  route hint-node +4$`,
		`(?m)^  reads \d+, served by the primary \d+ \(\d+%\), fallbacks 0, read retries 0$`,
	} {
		assert.Regexp(t, regexp.MustCompile(want), s)
	}
	for _, n := range l.Nodes() {
		assert.Regexp(t, `(?m)^  `+n.Name+` +(primary|replica) +up=true +fenced=false +queries=[1-9]\d* +errors=0$`, s)
	}
}
