package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rwshard/rwshard/internal/lab"
	"github.com/rwshard/rwshard/internal/lab/labtest"
)

// TestRun runs the example on a lab of its own, given the lab's DSN as a
// user gives theirs, and checks, from what it prints, that the writes ran
// on the primary and the reads on a replica, and that the node names it
// learnt with hint.Node are the lab's. Each want is a regular expression
// matched at the end of a line of the step's paragraph.
func TestRun(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	var out strings.Builder
	if err := run(labtest.Ctx(t, 2*time.Minute), &out, labtest.DSN(l, "")); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	replica := `replica[12]`
	const byNode = `db.GetContext(hint.Node(ctx, name), &id, "SELECT @@server_id") for each node`
	cases := []struct{ step, want string }{
		{byNode, `ran on primary×1 replica1×1 replica2×1  \(hint-node×3\)`},
		{"db.ExecContext(ctx, dropTable); db.ExecContext(ctx, schema)", `ran on primary×2  \(write×2\)`},
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
	}
	// The names the example learnt are the lab's, server_id for server_id.
	for _, n := range l.Nodes() {
		cases = append(cases, struct{ step, want string }{byNode, fmt.Sprintf(`  %s: server_id %d`, n.Name, n.ServerID)})
	}
	for _, c := range cases {
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
