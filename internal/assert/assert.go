// Package assert is a small, dependency-free subset of testify's assert
// API for rwshard's own tests: the driver module requires nothing but
// go-sql-driver/mysql and xxhash, so its tests use the standard library
// only. Each function reports a failure with t.Errorf and returns whether
// the check held; package require stops the test instead.
package assert

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// T is what the checks need of a *testing.T.
type T interface {
	Helper()
	Errorf(format string, args ...any)
}

func fail(t T, msgAndArgs []any, format string, args ...any) bool {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if m := message(msgAndArgs); m != "" {
		msg += "\n\tmessage: " + m
	}
	t.Errorf("%s", msg)
	return false
}

func message(msgAndArgs []any) string {
	switch len(msgAndArgs) {
	case 0:
		return ""
	case 1:
		if s, ok := msgAndArgs[0].(string); ok {
			return s
		}
		return fmt.Sprintf("%+v", msgAndArgs[0])
	default:
		if s, ok := msgAndArgs[0].(string); ok {
			return fmt.Sprintf(s, msgAndArgs[1:]...)
		}
		return fmt.Sprint(msgAndArgs...)
	}
}

// ObjectsAreEqual is reflect.DeepEqual, with []byte compared by content.
func ObjectsAreEqual(expected, actual any) bool {
	if expected == nil || actual == nil {
		return expected == actual
	}
	eb, ok1 := expected.([]byte)
	ab, ok2 := actual.([]byte)
	if ok1 && ok2 {
		if eb == nil || ab == nil {
			return eb == nil && ab == nil
		}
		return bytes.Equal(eb, ab)
	}
	return reflect.DeepEqual(expected, actual)
}

func equalValues(expected, actual any) bool {
	if ObjectsAreEqual(expected, actual) {
		return true
	}
	if expected == nil || actual == nil {
		return false
	}
	ev, av := reflect.ValueOf(expected), reflect.ValueOf(actual)
	if ev.Type().ConvertibleTo(av.Type()) {
		return reflect.DeepEqual(ev.Convert(av.Type()).Interface(), actual)
	}
	return false
}

func show(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []byte:
		return fmt.Sprintf("%q", x)
	case error:
		return fmt.Sprintf("%T(%v)", v, x)
	}
	return fmt.Sprintf("%#v", v)
}

func Equal(t T, expected, actual any, msgAndArgs ...any) bool {
	t.Helper()
	if !ObjectsAreEqual(expected, actual) {
		return fail(t, msgAndArgs, "not equal:\n\texpected: %s\n\tactual:   %s", show(expected), show(actual))
	}
	return true
}

func Equalf(t T, expected, actual any, format string, args ...any) bool {
	t.Helper()
	return Equal(t, expected, actual, append([]any{format}, args...)...)
}

func EqualValues(t T, expected, actual any, msgAndArgs ...any) bool {
	t.Helper()
	if !equalValues(expected, actual) {
		return fail(t, msgAndArgs, "not equal values:\n\texpected: %s\n\tactual:   %s", show(expected), show(actual))
	}
	return true
}

func EqualValuesf(t T, expected, actual any, format string, args ...any) bool {
	t.Helper()
	return EqualValues(t, expected, actual, append([]any{format}, args...)...)
}

func NotEqual(t T, expected, actual any, msgAndArgs ...any) bool {
	t.Helper()
	if ObjectsAreEqual(expected, actual) {
		return fail(t, msgAndArgs, "should not be %s", show(actual))
	}
	return true
}

func NotEqualf(t T, expected, actual any, format string, args ...any) bool {
	t.Helper()
	return NotEqual(t, expected, actual, append([]any{format}, args...)...)
}

func Same(t T, expected, actual any, msgAndArgs ...any) bool {
	t.Helper()
	if !samePointers(expected, actual) {
		return fail(t, msgAndArgs, "not the same pointer: %p and %p", expected, actual)
	}
	return true
}

func NotSame(t T, expected, actual any, msgAndArgs ...any) bool {
	t.Helper()
	if samePointers(expected, actual) {
		return fail(t, msgAndArgs, "the same pointer: %p", expected)
	}
	return true
}

func samePointers(a, b any) bool {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	return av.Kind() == reflect.Pointer && bv.Kind() == reflect.Pointer && av.Type() == bv.Type() && av.Pointer() == bv.Pointer()
}

func True(t T, value bool, msgAndArgs ...any) bool {
	t.Helper()
	if !value {
		return fail(t, msgAndArgs, "should be true")
	}
	return true
}

func False(t T, value bool, msgAndArgs ...any) bool {
	t.Helper()
	if value {
		return fail(t, msgAndArgs, "should be false")
	}
	return true
}

func Falsef(t T, value bool, format string, args ...any) bool {
	t.Helper()
	return False(t, value, append([]any{format}, args...)...)
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

func Nil(t T, v any, msgAndArgs ...any) bool {
	t.Helper()
	if !isNil(v) {
		return fail(t, msgAndArgs, "expected nil, got %s", show(v))
	}
	return true
}

func NotNil(t T, v any, msgAndArgs ...any) bool {
	t.Helper()
	if isNil(v) {
		return fail(t, msgAndArgs, "expected a value, got nil")
	}
	return true
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Chan, reflect.Map, reflect.Slice, reflect.Array, reflect.String:
		return rv.Len() == 0
	case reflect.Pointer:
		if rv.IsNil() {
			return true
		}
		return isEmpty(rv.Elem().Interface())
	}
	return rv.IsZero()
}

func Empty(t T, v any, msgAndArgs ...any) bool {
	t.Helper()
	if !isEmpty(v) {
		return fail(t, msgAndArgs, "should be empty, is %s", show(v))
	}
	return true
}

func NotEmpty(t T, v any, msgAndArgs ...any) bool {
	t.Helper()
	if isEmpty(v) {
		return fail(t, msgAndArgs, "should not be empty, is %s", show(v))
	}
	return true
}

func Zero(t T, v any, msgAndArgs ...any) bool {
	t.Helper()
	if v != nil && !reflect.ValueOf(v).IsZero() {
		return fail(t, msgAndArgs, "should be zero, is %s", show(v))
	}
	return true
}

func Zerof(t T, v any, format string, args ...any) bool {
	t.Helper()
	return Zero(t, v, append([]any{format}, args...)...)
}

func NotZero(t T, v any, msgAndArgs ...any) bool {
	t.Helper()
	if v == nil || reflect.ValueOf(v).IsZero() {
		return fail(t, msgAndArgs, "should not be zero, is %s", show(v))
	}
	return true
}

func Len(t T, v any, n int, msgAndArgs ...any) bool {
	t.Helper()
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Chan, reflect.Map, reflect.Slice, reflect.Array, reflect.String:
		if rv.Len() != n {
			return fail(t, msgAndArgs, "should have %d item(s), has %d: %s", n, rv.Len(), show(v))
		}
		return true
	}
	return fail(t, msgAndArgs, "%s has no length", show(v))
}

// contains reports whether list (a string, slice, array or map) holds
// elem (a substring, an element, a key); ok is false when list is none
// of those.
func contains(list, elem any) (found, ok bool) {
	lv := reflect.ValueOf(list)
	switch lv.Kind() {
	case reflect.String:
		ev := reflect.ValueOf(elem)
		if ev.Kind() != reflect.String {
			return false, false
		}
		return strings.Contains(lv.String(), ev.String()), true
	case reflect.Map:
		for _, k := range lv.MapKeys() {
			if ObjectsAreEqual(k.Interface(), elem) {
				return true, true
			}
		}
		return false, true
	case reflect.Slice, reflect.Array:
		for i := range lv.Len() {
			if ObjectsAreEqual(lv.Index(i).Interface(), elem) {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

func Contains(t T, list, elem any, msgAndArgs ...any) bool {
	t.Helper()
	found, ok := contains(list, elem)
	if !ok {
		return fail(t, msgAndArgs, "%s cannot contain anything", show(list))
	}
	if !found {
		return fail(t, msgAndArgs, "%s does not contain %s", show(list), show(elem))
	}
	return true
}

func NotContains(t T, list, elem any, msgAndArgs ...any) bool {
	t.Helper()
	found, ok := contains(list, elem)
	if !ok {
		return fail(t, msgAndArgs, "%s cannot contain anything", show(list))
	}
	if found {
		return fail(t, msgAndArgs, "%s should not contain %s", show(list), show(elem))
	}
	return true
}

func Regexp(t T, rx, str any, msgAndArgs ...any) bool {
	t.Helper()
	r, ok := rx.(*regexp.Regexp)
	if !ok {
		r = regexp.MustCompile(fmt.Sprint(rx))
	}
	s := fmt.Sprint(str)
	if !r.MatchString(s) {
		return fail(t, msgAndArgs, "%q does not match %q", s, r.String())
	}
	return true
}

func NoError(t T, err error, msgAndArgs ...any) bool {
	t.Helper()
	if err != nil {
		return fail(t, msgAndArgs, "unexpected error: %v", err)
	}
	return true
}

func NoErrorf(t T, err error, format string, args ...any) bool {
	t.Helper()
	return NoError(t, err, append([]any{format}, args...)...)
}

func Error(t T, err error, msgAndArgs ...any) bool {
	t.Helper()
	if err == nil {
		return fail(t, msgAndArgs, "an error is expected but got nil")
	}
	return true
}

func EqualError(t T, err error, want string, msgAndArgs ...any) bool {
	t.Helper()
	if err == nil {
		return fail(t, msgAndArgs, "an error %q is expected but got nil", want)
	}
	if err.Error() != want {
		return fail(t, msgAndArgs, "error message not equal:\n\texpected: %q\n\tactual:   %q", want, err.Error())
	}
	return true
}

func EqualErrorf(t T, err error, want string, format string, args ...any) bool {
	t.Helper()
	return EqualError(t, err, want, append([]any{format}, args...)...)
}

func ErrorContains(t T, err error, substr string, msgAndArgs ...any) bool {
	t.Helper()
	if err == nil {
		return fail(t, msgAndArgs, "an error containing %q is expected but got nil", substr)
	}
	if !strings.Contains(err.Error(), substr) {
		return fail(t, msgAndArgs, "error %q does not contain %q", err.Error(), substr)
	}
	return true
}

func ErrorIs(t T, err, target error, msgAndArgs ...any) bool {
	t.Helper()
	if !errors.Is(err, target) {
		return fail(t, msgAndArgs, "error is not %v:\n\tgot: %v", target, err)
	}
	return true
}

func NotErrorIs(t T, err, target error, msgAndArgs ...any) bool {
	t.Helper()
	if errors.Is(err, target) {
		return fail(t, msgAndArgs, "error should not be %v:\n\tgot: %v", target, err)
	}
	return true
}

func ErrorAs(t T, err error, target any, msgAndArgs ...any) bool {
	t.Helper()
	if !errors.As(err, target) {
		return fail(t, msgAndArgs, "error is not a %s:\n\tgot: %T(%v)", reflect.TypeOf(target).Elem(), err, err)
	}
	return true
}

func ErrorAsf(t T, err error, target any, format string, args ...any) bool {
	t.Helper()
	return ErrorAs(t, err, target, append([]any{format}, args...)...)
}

// compare orders two numbers (or strings, durations) of the same kind.
func compare(a, b any) (int, bool) {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	if !av.IsValid() || !bv.IsValid() || av.Type() != bv.Type() {
		return 0, false
	}
	switch av.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return cmp3(av.Int() < bv.Int(), av.Int() > bv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return cmp3(av.Uint() < bv.Uint(), av.Uint() > bv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return cmp3(av.Float() < bv.Float(), av.Float() > bv.Float()), true
	case reflect.String:
		return strings.Compare(av.String(), bv.String()), true
	}
	if at, ok := a.(time.Time); ok {
		return at.Compare(b.(time.Time)), true
	}
	return 0, false
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

func order(t T, a, b any, ok func(int) bool, rel string, msgAndArgs []any) bool {
	t.Helper()
	c, comparable := compare(a, b)
	if !comparable {
		return fail(t, msgAndArgs, "cannot compare %s and %s", show(a), show(b))
	}
	if !ok(c) {
		return fail(t, msgAndArgs, "%s is not %s %s", show(a), rel, show(b))
	}
	return true
}

func Greater(t T, a, b any, msgAndArgs ...any) bool {
	t.Helper()
	return order(t, a, b, func(c int) bool { return c > 0 }, "greater than", msgAndArgs)
}

func GreaterOrEqual(t T, a, b any, msgAndArgs ...any) bool {
	t.Helper()
	return order(t, a, b, func(c int) bool { return c >= 0 }, "greater than or equal to", msgAndArgs)
}

func Less(t T, a, b any, msgAndArgs ...any) bool {
	t.Helper()
	return order(t, a, b, func(c int) bool { return c < 0 }, "less than", msgAndArgs)
}

func LessOrEqual(t T, a, b any, msgAndArgs ...any) bool {
	t.Helper()
	return order(t, a, b, func(c int) bool { return c <= 0 }, "less than or equal to", msgAndArgs)
}

func LessOrEqualf(t T, a, b any, format string, args ...any) bool {
	t.Helper()
	return LessOrEqual(t, a, b, append([]any{format}, args...)...)
}

func Positive(t T, v any, msgAndArgs ...any) bool {
	t.Helper()
	zero := reflect.Zero(reflect.TypeOf(v)).Interface()
	return order(t, v, zero, func(c int) bool { return c > 0 }, "greater than", msgAndArgs)
}

func Positivef(t T, v any, format string, args ...any) bool {
	t.Helper()
	return Positive(t, v, append([]any{format}, args...)...)
}

func toFloat(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	}
	return 0, false
}

func InDelta(t T, expected, actual any, delta float64, msgAndArgs ...any) bool {
	t.Helper()
	e, ok1 := toFloat(expected)
	a, ok2 := toFloat(actual)
	if !ok1 || !ok2 {
		return fail(t, msgAndArgs, "InDelta needs numbers: %s, %s", show(expected), show(actual))
	}
	if math.IsNaN(a) || math.Abs(e-a) > delta {
		return fail(t, msgAndArgs, "%v and %v differ by more than %v", e, a, delta)
	}
	return true
}

func InEpsilon(t T, expected, actual any, epsilon float64, msgAndArgs ...any) bool {
	t.Helper()
	e, ok1 := toFloat(expected)
	a, ok2 := toFloat(actual)
	if !ok1 || !ok2 || e == 0 {
		return fail(t, msgAndArgs, "InEpsilon needs numbers, the expected one not 0: %s, %s", show(expected), show(actual))
	}
	if rel := math.Abs(e-a) / math.Abs(e); math.IsNaN(rel) || rel > epsilon {
		return fail(t, msgAndArgs, "relative error of %v against %v is more than %v", a, e, epsilon)
	}
	return true
}

func WithinDuration(t T, expected, actual time.Time, delta time.Duration, msgAndArgs ...any) bool {
	t.Helper()
	if d := expected.Sub(actual); d < -delta || d > delta {
		return fail(t, msgAndArgs, "%v and %v are %v apart, more than %v", expected, actual, d, delta)
	}
	return true
}

func NotPanics(t T, f func(), msgAndArgs ...any) (ok bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			ok = fail(t, msgAndArgs, "panicked: %v", r)
		}
	}()
	f()
	return true
}

// Eventually checks condition every tick until it holds, for at most
// waitFor.
func Eventually(t T, condition func() bool, waitFor, tick time.Duration, msgAndArgs ...any) bool {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		if condition() {
			return true
		}
		if time.Now().After(deadline) {
			return fail(t, msgAndArgs, "condition not satisfied within %v", waitFor)
		}
		time.Sleep(tick)
	}
}

func DirExists(t T, path string, msgAndArgs ...any) bool {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return fail(t, msgAndArgs, "directory %s does not exist", path)
	}
	return true
}

func NoDirExists(t T, path string, msgAndArgs ...any) bool {
	t.Helper()
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fail(t, msgAndArgs, "directory %s exists", path)
	}
	return true
}
