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
// user gives theirs, and checks, from what it prints, that GORM's writes
// ran on the primary and its reads on a replica, and that the node names
// it learnt with hint.Node are the lab's. Each want is a regular
// expression matched at the end of a line of the step's paragraph.
func TestRun(t *testing.T) {
	l := labtest.Fresh(t, lab.RW())
	var out strings.Builder
	if err := run(labtest.Ctx(t, 2*time.Minute), &out, labtest.DSN(l, "")); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	replica := `replica[12]`
	const byNode = `db.WithContext(hint.Node(ctx, name)).Raw("SELECT @@server_id").Scan(&id) for each node`
	cases := []struct{ step, want string }{
		// The first statement, before health has probed the replicas (sql.Open
		// does no I/O): the primary answers it, unless the probes were quicker.
		{"gorm.Open", `ran on (primary×1  \(starting×1\)|` + replica + `×1  \(replica×1\))`},
		{byNode, `ran on primary×1 replica1×1 replica2×1  \(hint-node×3\)`},
		{"db.WithContext(hint.Primary(ctx)).Migrator().DropTable(&Order{})", "DROP TABLE IF EXISTS `orders` CASCADE"},
		{"db.WithContext(hint.Primary(ctx)).Migrator().DropTable(&Order{})", `ran on primary×\d+  \(hint-primary×\d+\)`},
		{"db.WithContext(hint.Primary(ctx)).AutoMigrate(&Order{})", `ran on primary×4  \(hint-primary×4\)`},
		{"db.Create(&orders)", "RETURNING `written_by`,`id`"},
		{"db.Create(&orders)", `ran on primary×1  \(write×1\)`},
		{"db.Create(&orders)", `order 1: written_by primary`},
		{"db.Create(&orders)", `order 2: written_by primary`},
		{"db.Select(readFrom).Find(&all)", `ran on ` + replica + `×1  \(replica×1\)`},
		{"db.Select(readFrom).Find(&all)", `2 orders, read_from ` + replica},
		{"db.Transaction(First, Update)", `ran on primary×2  \(in-transaction×2\)`},
		{"db.Transaction(First, Update)", `order 1: read_from primary`},
		{"db.WithContext(hint.Primary(ctx)).Select(readFrom).First(&fresh, 1)", `ran on primary×1  \(hint-primary×1\)`},
		{"db.WithContext(hint.Primary(ctx)).Select(readFrom).First(&fresh, 1)", `order 1: status paid, read_from primary`},
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
