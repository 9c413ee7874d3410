package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// TestRun runs the example on a lab of its own and checks, from what it
// prints, that the writes ran on the primary and the reads on a replica.
// Each want is a regular expression matched at the end of a line of the
// step's paragraph.
func TestRun(t *testing.T) {
	_, got := labtest.RunFresh(t, lab.RW(), 2*time.Minute, run)
	replica := `replica[12]`
	for _, c := range []struct{ step, want string }{
		{"db.ExecContext(ctx, schema)", `ran on primary×1  \(write×1\)`},
		{"db.NamedExecContext(ctx, insert, orders)", `VALUES \(\?, \?, 'new', @@server_id\),\(\?, \?, 'new', @@server_id\)`},
		{"db.NamedExecContext(ctx, insert, orders)", `ran on primary×1  \(write×1\)`},
		{"db.SelectContext(ctx, &all, selectAll)", `ran on ` + replica + `×1  \(replica×1\)`},
		{"db.SelectContext(ctx, &all, selectAll)", `order 1: written_by primary, read_from ` + replica},
		{"db.SelectContext(ctx, &all, selectAll)", `order 2: written_by primary, read_from ` + replica},
		{"db.GetContext(ctx, &o, selectOne, 2)", `ran on ` + replica + `×1  \(replica×1\)`},
		{"db.GetContext(ctx, &o, selectOne, 2)", `order 2: read_from ` + replica},
		{"db.BeginTxx; tx.GetContext; tx.NamedExecContext; tx.Commit", `ran on primary×2  \(in-transaction×2\)`},
		{"db.BeginTxx; tx.GetContext; tx.NamedExecContext; tx.Commit", `order 1: read_from primary`},
		{"db.GetContext(hint.Primary(ctx), &fresh, selectOne, 1)", `ran on primary×1  \(hint-primary×1\)`},
		{"db.GetContext(hint.Primary(ctx), &fresh, selectOne, 1)", `order 1: status paid, written_by primary, read_from primary`},
	} {
		if b := block(got, c.step); !regexp.MustCompile(`(?m)` + c.want + `$`).MatchString(b) {
			t.Errorf("step %q: want a line matching %q in\n%s", c.step, c.want, b)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", got)
	}
}

// block returns the paragraph of out whose first line is step.
func block(out, step string) string {
	for _, b := range strings.Split(out, "\n\n") {
		if first, _, _ := strings.Cut(b, "\n"); first == step {
			return b
		}
	}
	return ""
}
