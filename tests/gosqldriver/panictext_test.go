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
