package shard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Built-in algorithm types accepted by NewAlgorithm (matched without
// regard to case).
const (
	TypeMod           = "MOD"
	TypeHashMod       = "HASH_MOD" // xxhash64; not ShardingSphere's HASH_MOD
	TypeSSHashMod     = "SS_HASH_MOD"
	TypeJavaHashMod   = "JAVA_HASH_MOD" // alias of SS_HASH_MOD
	TypeBoundaryRange = "BOUNDARY_RANGE"
	TypeVolumeRange   = "VOLUME_RANGE"
	TypeInterval      = "INTERVAL"
	TypeInline        = "INLINE"
)

// NewAlgorithm builds a built-in sharding algorithm from its type (matched
// without regard to case) and its properties, named as in ShardingSphere
// 5.x so the props of a ShardingSphere YAML rule pass through unchanged.
// The result is immutable and safe for concurrent use.
//
//	MOD             sharding-count; optional start-offset, stop-offset
//	                (cut a string value before parsing it), zero-padding
//	HASH_MOD        sharding-count; optional value-type = auto|long|int|string
//	SS_HASH_MOD     sharding-count; optional value-type = long|int|string
//	BOUNDARY_RANGE  sharding-ranges ("10,20,30")
//	VOLUME_RANGE    range-lower, range-upper, sharding-volume
//	INTERVAL        datetime-pattern, datetime-lower, datetime-upper,
//	                sharding-suffix-pattern; optional datetime-interval-amount
//	                (default 1), datetime-interval-unit (default DAYS)
//	INLINE          algorithm-expression; optional
//	                allow-range-query-with-inline-sharding (default false)
//
// MOD, HASH_MOD, SS_HASH_MOD, BOUNDARY_RANGE and VOLUME_RANGE compute a
// number and pick the target whose name ends with it, as ShardingSphere's
// auto-table algorithms do: the run of digits that ends the name, read as
// a number, must equal it, so t_order_1 and t_order_01 both answer 1 and
// t_order_11 does not. INTERVAL picks the target that ends with the
// formatted suffix. INLINE picks the target named by the expression.
//
// HASH_MOD differs from ShardingSphere's: there HASH_MOD is the Java
// hashCode algorithm, here it is xxhash64 of the value's canonical bytes
// and ShardingSphere's is SS_HASH_MOD (alias JAVA_HASH_MOD). A reader of
// ShardingSphere YAML must map its HASH_MOD to SS_HASH_MOD to find rows
// where ShardingSphere put them.
//
// Unknown properties are ignored (ShardingSphere ignores them too); a
// missing or invalid one is a *PropError naming the type, the property
// and the value.
func NewAlgorithm(typ string, props map[string]string) (Algorithm, error) {
	switch t := strings.ToUpper(strings.TrimSpace(typ)); t {
	case TypeMod:
		return newModAlgorithm(props)
	case TypeHashMod:
		return newHashModAlgorithm(props)
	case TypeSSHashMod, TypeJavaHashMod:
		return newJavaHashModAlgorithm(t, props)
	case TypeBoundaryRange:
		return newBoundaryRangeAlgorithm(props)
	case TypeVolumeRange:
		return newVolumeRangeAlgorithm(props)
	case TypeInterval:
		return newIntervalAlgorithm(props)
	case TypeInline:
		return newInlineAlgorithm(props)
	default:
		return nil, &PropError{Type: typ, Reason: "unknown sharding algorithm type; want one of " +
			"MOD, HASH_MOD, SS_HASH_MOD, JAVA_HASH_MOD, BOUNDARY_RANGE, VOLUME_RANGE, INTERVAL, INLINE"}
	}
}

// PropError reports an unknown algorithm or key generator type, or a
// missing or invalid property of one.
type PropError struct {
	Type    string // algorithm or key generator type ("MOD")
	Prop    string // property name ("sharding-count"); empty for an unknown type
	Value   string // the property's value as given; empty when Missing
	Missing bool   // the property is required and absent
	Reason  string // what is wrong with it
}

func (e *PropError) Error() string {
	switch {
	case e.Prop == "":
		return "rwshard: shard: " + strconv.Quote(e.Type) + ": " + e.Reason
	case e.Missing:
		return "rwshard: shard: " + e.Type + ": property " + e.Prop + " is required"
	default:
		return "rwshard: shard: " + e.Type + ": property " + e.Prop + "=" + strconv.Quote(e.Value) + ": " + e.Reason
	}
}

// ErrNoTarget is matched (errors.Is) by the error of Shard when the value
// maps to no target among those given (or to several), or, for INTERVAL,
// falls outside datetime-lower … datetime-upper.
var ErrNoTarget = errors.New("rwshard: shard: no matching target")

// targetError is the error of a value that maps to no target, or to
// more than one.
type targetError struct{ msg string }

func (e *targetError) Error() string        { return e.msg }
func (e *targetError) Is(target error) bool { return target == ErrNoTarget }

// algoProps reads the properties of one algorithm, recording its type for
// messages.
type algoProps struct {
	typ string
	m   map[string]string
}

func (p algoProps) errorf(key, value, format string, args ...any) error {
	return &PropError{Type: p.typ, Prop: key, Value: value, Reason: fmt.Sprintf(format, args...)}
}

func (p algoProps) lookup(key string) (string, bool) {
	v, ok := p.m[key]
	return strings.TrimSpace(v), ok
}

func (p algoProps) required(key string) (string, error) {
	v, ok := p.lookup(key)
	if !ok || v == "" {
		return "", &PropError{Type: p.typ, Prop: key, Missing: true}
	}
	return v, nil
}

// int64Prop parses a required integer property within [lo, hi].
func (p algoProps) int64Prop(key string, lo, hi int64) (int64, error) {
	s, err := p.required(key)
	if err != nil {
		return 0, err
	}
	return p.parseInt64(key, s, lo, hi)
}

// optInt64Prop parses an optional integer property within [lo, hi].
func (p algoProps) optInt64Prop(key string, def, lo, hi int64) (int64, error) {
	s, ok := p.lookup(key)
	if !ok || s == "" {
		return def, nil
	}
	return p.parseInt64(key, s, lo, hi)
}

func (p algoProps) parseInt64(key, s string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, p.errorf(key, s, "not an integer")
	}
	if n < lo || n > hi {
		return 0, p.errorf(key, s, "out of range [%d, %d]", lo, hi)
	}
	return n, nil
}

func (p algoProps) optBoolProp(key string, def bool) (bool, error) {
	s, ok := p.lookup(key)
	if !ok || s == "" {
		return def, nil
	}
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, p.errorf(key, s, "want true or false")
}

// enumProp reads an optional property whose value is one of choices
// (matched without regard to case; the lower-case form is returned).
func (p algoProps) enumProp(key, def string, choices ...string) (string, error) {
	s, ok := p.lookup(key)
	if !ok || s == "" {
		return def, nil
	}
	l := strings.ToLower(s)
	for _, c := range choices {
		if l == c {
			return c, nil
		}
	}
	return "", p.errorf(key, s, "want one of %s", strings.Join(choices, ", "))
}

// trailingNumber returns the number that the run of ASCII digits at the
// end of name spells; ok is false when name does not end with a digit or
// the number does not fit a uint64.
func trailingNumber(name string) (n uint64, ok bool) {
	i := len(name)
	for i > 0 && asciiDigit(name[i-1]) {
		i--
	}
	if i == len(name) {
		return 0, false
	}
	for _, c := range []byte(name[i:]) {
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

func asciiDigit(c byte) bool { return '0' <= c && c <= '9' }

// numberedTarget returns the index of the one target whose trailing
// number is n; -1 when none is, -2 when several are.
func numberedTarget(targets []string, n uint64) int {
	found := -1
	for i, t := range targets {
		if m, ok := trailingNumber(t); ok && m == n {
			if found >= 0 {
				return -2
			}
			found = i
		}
	}
	return found
}

// hasNameSuffix reports whether name ends with suffix at a boundary: a
// suffix that starts with a digit must not continue a run of digits in
// name (t_order_2024 ends with "2024", t_order_12024 does not).
func hasNameSuffix(name, suffix string) bool {
	if !strings.HasSuffix(name, suffix) {
		return false
	}
	i := len(name) - len(suffix)
	return i == 0 || suffix == "" || !asciiDigit(suffix[0]) || !asciiDigit(name[i-1])
}

// suffixedTarget returns the index of the one target that ends with
// suffix; -1 when none does, -2 when several do.
func suffixedTarget(targets []string, suffix string) int {
	found := -1
	for i, t := range targets {
		if hasNameSuffix(t, suffix) {
			if found >= 0 {
				return -2
			}
			found = i
		}
	}
	return found
}

// noTargetError explains a lookup by numberedTarget or suffixedTarget
// that returned idx < 0.
func noTargetError(algo string, v Value, want string, idx int, targets []string) error {
	what := "no target ends with " + want
	if idx == -2 {
		what = "several targets end with " + want
	}
	return &targetError{msg: "rwshard: shard: " + algo + ": value " + describeValue(v) + ": " + what +
		" among " + describeTargets(targets)}
}

// describeValue renders a sharding value for an error message: the value
// and its Go type, long strings cut short.
func describeValue(v Value) string {
	const max = 64
	cut := func(s string) string {
		if len(s) > max {
			return s[:max] + "..."
		}
		return s
	}
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strconv.Quote(cut(x)) + " (string)"
	case []byte:
		return strconv.Quote(cut(string(x))) + " ([]byte)"
	case time.Time:
		return x.Format(time.RFC3339Nano) + " (time.Time)"
	default:
		return cut(fmt.Sprint(x)) + " (" + fmt.Sprintf("%T", x) + ")"
	}
}

// describeTargets renders a target list for an error message, at most
// eight names.
func describeTargets(targets []string) string {
	const max = 8
	if len(targets) <= max {
		return "[" + strings.Join(targets, " ") + "]"
	}
	return "[" + strings.Join(targets[:max], " ") + " ... (" + strconv.Itoa(len(targets)) + " in all)]"
}

// pickMarked returns the targets whose mark is set, in target order; an
// empty, non-nil slice when none is.
func pickMarked(targets []string, marks []bool) []string {
	out := make([]string, 0, len(targets))
	for i, t := range targets {
		if marks[i] {
			out = append(out, t)
		}
	}
	return out
}
