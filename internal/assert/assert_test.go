package assert

import (
	"fmt"
	"io"
	"testing"
	"time"
)

// recorder is a T that records failures.
type recorder struct{ failed []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = append(r.failed, fmt.Sprintf(format, args...))
}

// Each check passes on its good case and fails on its bad one.
func TestChecks(t *testing.T) {
	wrapped := fmt.Errorf("ctx: %w", io.EOF)
	var target *customErr
	for _, tc := range []struct {
		name      string
		good, bad func(T) bool
	}{
		{"Equal", func(r T) bool { return Equal(r, []byte("a"), []byte("a")) }, func(r T) bool { return Equal(r, 1, int64(1)) }},
		{"EqualValues", func(r T) bool { return EqualValues(r, 1, int64(1)) }, func(r T) bool { return EqualValues(r, 1, 2) }},
		{"Contains", func(r T) bool { return Contains(r, []string{"a", "b"}, "b") && Contains(r, "abc", "bc") }, func(r T) bool { return Contains(r, map[string]int{"a": 1}, "b") }},
		{"Len", func(r T) bool { return Len(r, "abc", 3) }, func(r T) bool { return Len(r, []int{1}, 2) }},
		{"Empty", func(r T) bool { return Empty(r, "") && Empty(r, []int(nil)) && Empty(r, 0) }, func(r T) bool { return Empty(r, []int{1}) }},
		{"Nil", func(r T) bool { return Nil(r, (*int)(nil)) }, func(r T) bool { return Nil(r, 1) }},
		{"ErrorIs", func(r T) bool { return ErrorIs(r, wrapped, io.EOF) }, func(r T) bool { return ErrorIs(r, wrapped, io.ErrClosedPipe) }},
		{"ErrorAs", func(r T) bool { return ErrorAs(r, fmt.Errorf("x: %w", &customErr{}), &target) }, func(r T) bool { return ErrorAs(r, wrapped, &target) }},
		{"Greater", func(r T) bool { return Greater(r, 2, 1) }, func(r T) bool { return Greater(r, time.Second, time.Minute) }},
		{"LessOrEqual", func(r T) bool { return LessOrEqual(r, 1.0, 1.0) }, func(r T) bool { return LessOrEqual(r, "b", "a") }},
		{"Positive", func(r T) bool { return Positive(r, uint64(1)) }, func(r T) bool { return Positive(r, 0) }},
		{"InDelta", func(r T) bool { return InDelta(r, 1, 1.05, 0.1) }, func(r T) bool { return InDelta(r, 1, 2, 0.1) }},
		{"Regexp", func(r T) bool { return Regexp(r, `^a\d$`, "a1") }, func(r T) bool { return Regexp(r, `^a\d$`, "ab") }},
		{"NoError", func(r T) bool { return NoError(r, nil) }, func(r T) bool { return NoError(r, io.EOF) }},
		{"EqualError", func(r T) bool { return EqualError(r, io.EOF, "EOF") }, func(r T) bool { return EqualError(r, nil, "EOF") }},
		{"NotPanics", func(r T) bool { return NotPanics(r, func() {}) }, func(r T) bool { return NotPanics(r, func() { panic("x") }) }},
		{"Eventually", func(r T) bool { return Eventually(r, func() bool { return true }, time.Second, time.Millisecond) },
			func(r T) bool {
				return Eventually(r, func() bool { return false }, 5*time.Millisecond, time.Millisecond)
			}},
		{"Same", func(r T) bool { p := new(int); return Same(r, p, p) }, func(r T) bool { return Same(r, new(int), new(int)) }},
	} {
		good, bad := &recorder{}, &recorder{}
		if !tc.good(good) || len(good.failed) > 0 {
			t.Errorf("%s: good case failed: %v", tc.name, good.failed)
		}
		if tc.bad(bad) || len(bad.failed) != 1 {
			t.Errorf("%s: bad case passed (%v)", tc.name, bad.failed)
		}
	}
}

type customErr struct{}

func (*customErr) Error() string { return "custom" }
