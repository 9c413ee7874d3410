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
// prints, that GORM's writes ran on the primary and its reads on a replica.
// Each want is a regular expression matched at the end of a line of the
// step's paragraph.
func TestRun(t *testing.T) {
	_, got := labtest.RunFresh(t, lab.RW(), 2*time.Minute, run)
	replica := `replica[12]`
	for _, c := range []struct{ step, want string }{
		// The first statement, before health has probed the replicas (sql.Open
		// does no I/O): the primary answers it, unless the probes were quicker.
		{"gorm.Open", `ran on (primary×1  \(starting×1\)|` + replica + `×1  \(replica×1\))`},
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
