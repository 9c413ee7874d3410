// Package require is package assert's twin that stops the test
// (t.FailNow) when a check fails.
package require

import (
	"time"

	"github.com/rwshard/rwshard/internal/assert"
)

// T is what the checks need of a *testing.T.
type T interface {
	assert.T
	FailNow()
}

func Equal(t T, expected, actual any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Equal(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

func Equalf(t T, expected, actual any, format string, args ...any) {
	t.Helper()
	if !assert.Equalf(t, expected, actual, format, args...) {
		t.FailNow()
	}
}

func EqualValues(t T, expected, actual any, msgAndArgs ...any) {
	t.Helper()
	if !assert.EqualValues(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

func EqualValuesf(t T, expected, actual any, format string, args ...any) {
	t.Helper()
	if !assert.EqualValuesf(t, expected, actual, format, args...) {
		t.FailNow()
	}
}

func NotEqual(t T, expected, actual any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotEqual(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

func NotEqualf(t T, expected, actual any, format string, args ...any) {
	t.Helper()
	if !assert.NotEqualf(t, expected, actual, format, args...) {
		t.FailNow()
	}
}

func Same(t T, expected, actual any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Same(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

func NotSame(t T, expected, actual any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotSame(t, expected, actual, msgAndArgs...) {
		t.FailNow()
	}
}

func True(t T, value bool, msgAndArgs ...any) {
	t.Helper()
	if !assert.True(t, value, msgAndArgs...) {
		t.FailNow()
	}
}

func False(t T, value bool, msgAndArgs ...any) {
	t.Helper()
	if !assert.False(t, value, msgAndArgs...) {
		t.FailNow()
	}
}

func Falsef(t T, value bool, format string, args ...any) {
	t.Helper()
	if !assert.Falsef(t, value, format, args...) {
		t.FailNow()
	}
}

func Nil(t T, v any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Nil(t, v, msgAndArgs...) {
		t.FailNow()
	}
}

func NotNil(t T, v any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotNil(t, v, msgAndArgs...) {
		t.FailNow()
	}
}

func Empty(t T, v any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Empty(t, v, msgAndArgs...) {
		t.FailNow()
	}
}

func NotEmpty(t T, v any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotEmpty(t, v, msgAndArgs...) {
		t.FailNow()
	}
}

func Zero(t T, v any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Zero(t, v, msgAndArgs...) {
		t.FailNow()
	}
}

func Zerof(t T, v any, format string, args ...any) {
	t.Helper()
	if !assert.Zerof(t, v, format, args...) {
		t.FailNow()
	}
}

func NotZero(t T, v any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotZero(t, v, msgAndArgs...) {
		t.FailNow()
	}
}

func Len(t T, v any, n int, msgAndArgs ...any) {
	t.Helper()
	if !assert.Len(t, v, n, msgAndArgs...) {
		t.FailNow()
	}
}

func Contains(t T, list, elem any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Contains(t, list, elem, msgAndArgs...) {
		t.FailNow()
	}
}

func NotContains(t T, list, elem any, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotContains(t, list, elem, msgAndArgs...) {
		t.FailNow()
	}
}

func Regexp(t T, rx, str any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Regexp(t, rx, str, msgAndArgs...) {
		t.FailNow()
	}
}

func NoError(t T, err error, msgAndArgs ...any) {
	t.Helper()
	if !assert.NoError(t, err, msgAndArgs...) {
		t.FailNow()
	}
}

func NoErrorf(t T, err error, format string, args ...any) {
	t.Helper()
	if !assert.NoErrorf(t, err, format, args...) {
		t.FailNow()
	}
}

func Error(t T, err error, msgAndArgs ...any) {
	t.Helper()
	if !assert.Error(t, err, msgAndArgs...) {
		t.FailNow()
	}
}

func EqualError(t T, err error, want string, msgAndArgs ...any) {
	t.Helper()
	if !assert.EqualError(t, err, want, msgAndArgs...) {
		t.FailNow()
	}
}

func EqualErrorf(t T, err error, want string, format string, args ...any) {
	t.Helper()
	if !assert.EqualErrorf(t, err, want, format, args...) {
		t.FailNow()
	}
}

func ErrorContains(t T, err error, substr string, msgAndArgs ...any) {
	t.Helper()
	if !assert.ErrorContains(t, err, substr, msgAndArgs...) {
		t.FailNow()
	}
}

func ErrorIs(t T, err, target error, msgAndArgs ...any) {
	t.Helper()
	if !assert.ErrorIs(t, err, target, msgAndArgs...) {
		t.FailNow()
	}
}

func NotErrorIs(t T, err, target error, msgAndArgs ...any) {
	t.Helper()
	if !assert.NotErrorIs(t, err, target, msgAndArgs...) {
		t.FailNow()
	}
}

func ErrorAs(t T, err error, target any, msgAndArgs ...any) {
	t.Helper()
	if !assert.ErrorAs(t, err, target, msgAndArgs...) {
		t.FailNow()
	}
}

func ErrorAsf(t T, err error, target any, format string, args ...any) {
	t.Helper()
	if !assert.ErrorAsf(t, err, target, format, args...) {
		t.FailNow()
	}
}

func Greater(t T, a, b any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Greater(t, a, b, msgAndArgs...) {
		t.FailNow()
	}
}

func GreaterOrEqual(t T, a, b any, msgAndArgs ...any) {
	t.Helper()
	if !assert.GreaterOrEqual(t, a, b, msgAndArgs...) {
		t.FailNow()
	}
}

func Less(t T, a, b any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Less(t, a, b, msgAndArgs...) {
		t.FailNow()
	}
}

func LessOrEqual(t T, a, b any, msgAndArgs ...any) {
	t.Helper()
	if !assert.LessOrEqual(t, a, b, msgAndArgs...) {
		t.FailNow()
	}
}

func LessOrEqualf(t T, a, b any, format string, args ...any) {
	t.Helper()
	if !assert.LessOrEqualf(t, a, b, format, args...) {
		t.FailNow()
	}
}

func Positive(t T, v any, msgAndArgs ...any) {
	t.Helper()
	if !assert.Positive(t, v, msgAndArgs...) {
		t.FailNow()
	}
}

func Positivef(t T, v any, format string, args ...any) {
	t.Helper()
	if !assert.Positivef(t, v, format, args...) {
		t.FailNow()
	}
}

func InDelta(t T, expected, actual any, delta float64, msgAndArgs ...any) {
	t.Helper()
	if !assert.InDelta(t, expected, actual, delta, msgAndArgs...) {
		t.FailNow()
	}
}

func InEpsilon(t T, expected, actual any, epsilon float64, msgAndArgs ...any) {
	t.Helper()
	if !assert.InEpsilon(t, expected, actual, epsilon, msgAndArgs...) {
		t.FailNow()
	}
}

func WithinDuration(t T, expected, actual time.Time, delta time.Duration, msgAndArgs ...any) {
	t.Helper()
	if !assert.WithinDuration(t, expected, actual, delta, msgAndArgs...) {
		t.FailNow()
	}
}

func NotPanics(t T, f func(), msgAndArgs ...any) {
	t.Helper()
	if !assert.NotPanics(t, f, msgAndArgs...) {
		t.FailNow()
	}
}

func Eventually(t T, condition func() bool, waitFor, tick time.Duration, msgAndArgs ...any) {
	t.Helper()
	if !assert.Eventually(t, condition, waitFor, tick, msgAndArgs...) {
		t.FailNow()
	}
}

func DirExists(t T, path string, msgAndArgs ...any) {
	t.Helper()
	if !assert.DirExists(t, path, msgAndArgs...) {
		t.FailNow()
	}
}

func NoDirExists(t T, path string, msgAndArgs ...any) {
	t.Helper()
	if !assert.NoDirExists(t, path, msgAndArgs...) {
		t.FailNow()
	}
}
