package gosqldriver

import (
	"strings"
	"testing"
)

// A -timeout panic in -json output shows from its first line, with the
// tests still running, whatever follows it.
func TestPanicText(t *testing.T) {
	out := `{"Action":"output","Test":"TestA","Output":"--- PASS: TestA (0.01s)\n"}
{"Action":"output","Output":"panic: test timed out after 4m0s\n"}
{"Action":"output","Output":"\trunning tests:\n"}
{"Action":"output","Output":"\t\tTestContextCancelQueryRow (3m2s)\n"}
{"Action":"output","Output":"\ngoroutine 1 [running]:\n"}
` + strings.Repeat(`{"Action":"output","Output":"\tframe\n"}`+"\n", 100)
	got := panicText([]byte(out), 4)
	want := "panic: test timed out after 4m0s\n\trunning tests:\n\t\tTestContextCancelQueryRow (3m2s)\n"
	if got != want {
		t.Errorf("panicText = %q, want %q", got, want)
	}
	if panicText([]byte(`{"Action":"output","Output":"ok\n"}`), 4) != "" {
		t.Error("no panic: empty")
	}
}

// The goroutines of a -timeout panic's dump that name a frame asked for,
// whole, and no other.
func TestStacksIn(t *testing.T) {
	out := `{"Action":"output","Output":"panic: test timed out after 4m0s\n"}
{"Action":"output","Output":"\ngoroutine 1 [running]:\n\ttesting.(*M).startAlarm\n\n"}
{"Action":"output","Output":"goroutine 7 [select]:\n\tdatabase/sql.(*DB).conn(...)\n\tgithub.com/rwshard/rwshard.(*conn).BeginTx(...)\n\n"}
{"Action":"output","Output":"goroutine 9 [IO wait]:\n\tinternal/poll.runtime_pollWait\n"}
`
	got := stacksIn([]byte(out), []string{"database/sql.", "rwshard"}, 400)
	want := "goroutine 7 [select]:\n\tdatabase/sql.(*DB).conn(...)\n\tgithub.com/rwshard/rwshard.(*conn).BeginTx(...)\n"
	if got != want {
		t.Errorf("stacksIn = %q, want %q", got, want)
	}
	if got := stacksIn([]byte(out), []string{"database/sql."}, 2); got != "goroutine 7 [select]:\n\tdatabase/sql.(*DB).conn(...)\n… 2 lines more" {
		t.Errorf("stacksIn cut to 2 lines = %q", got)
	}
	if stacksIn([]byte(`{"Action":"output","Output":"goroutine 1 [running]:\n"}`), []string{"goroutine"}, 10) != "" {
		t.Error("no panic: empty")
	}
}
