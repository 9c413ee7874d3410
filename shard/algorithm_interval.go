package shard

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// intervalAlgorithm is INTERVAL, ShardingSphere's IntervalShardingAlgorithm:
// time is cut into steps of datetime-interval-amount ×
// datetime-interval-unit starting at datetime-lower, the last step being
// the one that starts at or before datetime-upper; a value belongs to the
// step that holds it, and the step's start, formatted by
// sharding-suffix-pattern, ends the name of its target (t_order_202403
// for March 2024 with yyyyMM).
//
// Values are time.Time, taken at their wall clock in their own location
// (a Java LocalDateTime has no zone: make the driver's loc match the one
// the Java services used), or strings in datetime-pattern; both are cut
// to the precision of datetime-pattern first. Patterns are the subset of
// Java's described at javaPattern (yyyy MM dd HH mm ss SSS and literals).
//
// Units are java.time.temporal.ChronoUnit names: NANOS, MICROS, MILLIS,
// SECONDS, MINUTES, HOURS, HALF_DAYS, DAYS (default), WEEKS, MONTHS,
// YEARS, DECADES, CENTURIES, MILLENNIA. Month-based units add months the
// Java way, step after step (Jan 31 + 1 month is Feb 29 in 2024, and the
// following steps stay on the 29th).
//
// Unlike ShardingSphere, datetime-upper is required (ShardingSphere uses
// the time the rule was loaded; these algorithms do not read a clock),
// and at most 131072 steps fit between datetime-lower and datetime-upper.
type intervalAlgorithm struct {
	pattern, suffix *javaPattern
	amount          int64
	unit            string
	// starts[k] is the start of step k; the last entry is the end of
	// the last step. suffixes[k] is the suffix of step k.
	starts   []time.Time
	suffixes []string
}

const maxIntervalSteps = 1 << 17

// chronoUnit returns the length of a ChronoUnit, fixed or in months.
func chronoUnit(name string) (d time.Duration, months int64, ok bool) {
	switch name {
	case "NANOS":
		return time.Nanosecond, 0, true
	case "MICROS":
		return time.Microsecond, 0, true
	case "MILLIS":
		return time.Millisecond, 0, true
	case "SECONDS":
		return time.Second, 0, true
	case "MINUTES":
		return time.Minute, 0, true
	case "HOURS":
		return time.Hour, 0, true
	case "HALF_DAYS":
		return 12 * time.Hour, 0, true
	case "DAYS":
		return 24 * time.Hour, 0, true
	case "WEEKS":
		return 7 * 24 * time.Hour, 0, true
	case "MONTHS":
		return 0, 1, true
	case "YEARS":
		return 0, 12, true
	case "DECADES":
		return 0, 120, true
	case "CENTURIES":
		return 0, 1200, true
	case "MILLENNIA":
		return 0, 12000, true
	}
	return 0, 0, false
}

func newIntervalAlgorithm(m map[string]string) (Algorithm, error) {
	p := algoProps{typ: "INTERVAL", m: m}
	pat, err := p.patternProp("datetime-pattern")
	if err != nil {
		return nil, err
	}
	if !pat.has('y') {
		return nil, p.errorf("datetime-pattern", pat.src, "has no year (y)")
	}
	suffix, err := p.patternProp("sharding-suffix-pattern")
	if err != nil {
		return nil, err
	}
	lower, err := p.timeProp("datetime-lower", pat)
	if err != nil {
		return nil, err
	}
	upper, err := p.timeProp("datetime-upper", pat)
	if err != nil {
		return nil, err
	}
	if upper.Before(lower) {
		s, _ := p.lookup("datetime-upper")
		return nil, p.errorf("datetime-upper", s, "is before datetime-lower")
	}
	amount, err := p.optInt64Prop("datetime-interval-amount", 1, 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	unitName, _ := p.lookup("datetime-interval-unit")
	if unitName == "" {
		unitName = "DAYS"
	}
	unitName = strings.ToUpper(unitName)
	unitLen, unitMonths, ok := chronoUnit(unitName)
	if !ok {
		return nil, p.errorf("datetime-interval-unit", unitName,
			"want one of NANOS, MICROS, MILLIS, SECONDS, MINUTES, HOURS, HALF_DAYS, DAYS, WEEKS, MONTHS, YEARS, DECADES, CENTURIES, MILLENNIA")
	}
	if unitLen > 0 && amount > int64(math.MaxInt64/unitLen) {
		return nil, p.errorf("datetime-interval-amount", strconv.FormatInt(amount, 10), "is too long a step in %s", unitName)
	}
	a := &intervalAlgorithm{pattern: pat, suffix: suffix, amount: amount, unit: unitName}
	step := func(t time.Time) time.Time {
		if unitLen > 0 {
			return t.Add(time.Duration(amount) * unitLen)
		}
		return javaPlusMonths(t, amount*unitMonths)
	}
	for t := lower; !t.After(upper); {
		if len(a.starts) == maxIntervalSteps {
			return nil, p.errorf("datetime-interval-amount", strconv.FormatInt(amount, 10),
				"in %s makes more than %d steps from datetime-lower to datetime-upper", unitName, maxIntervalSteps)
		}
		next := step(t)
		a.starts = append(a.starts, t)
		a.suffixes = append(a.suffixes, string(suffix.appendFormat(nil, t)))
		t = next
	}
	a.starts = append(a.starts, step(a.starts[len(a.starts)-1]))
	return a, nil
}

func (p algoProps) patternProp(key string) (*javaPattern, error) {
	s, err := p.required(key)
	if err != nil {
		return nil, err
	}
	pat, err := compileJavaPattern(s)
	if err != nil {
		return nil, p.errorf(key, s, "%v", err)
	}
	return pat, nil
}

func (p algoProps) timeProp(key string, pat *javaPattern) (time.Time, error) {
	s, err := p.required(key)
	if err != nil {
		return time.Time{}, err
	}
	t, err := pat.parse(s)
	if err != nil {
		return time.Time{}, p.errorf(key, s, "%v", err)
	}
	return t, nil
}

// javaPlusMonths is LocalDateTime.plusMonths: the day of month is cut
// to the length of the new month.
func javaPlusMonths(t time.Time, n int64) time.Time {
	y, m, d := t.Date()
	total := int64(y)*12 + int64(m-1) + n
	ny, nm := total/12, total%12
	if nm < 0 {
		ny, nm = ny-1, nm+12
	}
	month := time.Month(nm + 1)
	d = min(d, daysIn(int(ny), month))
	h, mi, s := t.Clock()
	return time.Date(int(ny), month, d, h, mi, s, t.Nanosecond(), time.UTC)
}

func (a *intervalAlgorithm) String() string {
	return "INTERVAL(datetime-pattern=" + a.pattern.src +
		", datetime-lower=" + string(a.pattern.appendFormat(nil, a.starts[0])) +
		", steps=" + strconv.Itoa(len(a.suffixes)) +
		", datetime-interval=" + strconv.FormatInt(a.amount, 10) + " " + a.unit +
		", sharding-suffix-pattern=" + a.suffix.src + ")"
}

// timeOf reads a value as a naive time at the precision of the pattern;
// exact is false when that cut something off.
func (a *intervalAlgorithm) timeOf(v Value) (t time.Time, exact bool, err error) {
	var text string
	switch x := v.(type) {
	case time.Time:
		n := naive(x)
		t = a.pattern.truncate(n)
		return t, t.Equal(n), nil
	case string:
		text = x
	case []byte:
		text = string(x)
	default:
		return time.Time{}, false, valueError("INTERVAL", v, "is not a time.Time or a string in datetime-pattern "+strconv.Quote(a.pattern.src))
	}
	t, err = a.pattern.parse(text)
	if err != nil {
		return time.Time{}, false, valueError("INTERVAL", v, "is not in datetime-pattern: "+err.Error())
	}
	return t, a.pattern.width < 0 || len(text) <= a.pattern.width, nil
}

// step returns the index of the step that holds t: -1 before the first
// step, len(a.suffixes) after the last.
func (a *intervalAlgorithm) step(t time.Time) int {
	// The number of starts <= t, minus one.
	lo, hi := 0, len(a.starts)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if !a.starts[mid].After(t) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo - 1
}

func (a *intervalAlgorithm) Shard(targets []string, v Value) (string, error) {
	t, _, err := a.timeOf(v)
	if err != nil {
		return "", err
	}
	k := a.step(t)
	switch {
	case k < 0:
		return "", &targetError{msg: "rwshard: shard: INTERVAL: value " + describeValue(v) + " is before datetime-lower"}
	case k >= len(a.suffixes):
		return "", &targetError{msg: "rwshard: shard: INTERVAL: value " + describeValue(v) + " is after the last interval (datetime-upper)"}
	}
	if i := suffixedTarget(targets, a.suffixes[k]); i >= 0 {
		return targets[i], nil
	} else {
		return "", noTargetError("INTERVAL", v, strconv.Quote(a.suffixes[k]), i, targets)
	}
}

// ShardRange returns the targets of every step that r overlaps and that
// exists among targets, in target order.
func (a *intervalAlgorithm) ShardRange(targets []string, r Range) ([]string, error) {
	first, last := 0, len(a.suffixes)-1
	if r.Lo != nil {
		t, _, err := a.timeOf(r.Lo)
		if err != nil {
			return nil, err
		}
		first = max(a.step(t), 0)
	}
	if r.Hi != nil {
		t, exact, err := a.timeOf(r.Hi)
		if err != nil {
			return nil, err
		}
		k := a.step(t)
		// [start, start) holds nothing of step k; but a bound cut to the
		// pattern's precision (< 00:00:00.5 read as 00:00:00) still
		// reaches into it.
		if k >= 0 && k < len(a.suffixes) && r.HiExclusive && exact && t.Equal(a.starts[k]) {
			k--
		}
		last = min(k, last)
	}
	if first > last {
		return []string{}, nil
	}
	marks := make([]bool, len(targets))
	for k := first; k <= last; k++ {
		if k > first && a.suffixes[k] == a.suffixes[k-1] {
			continue
		}
		for i, name := range targets {
			if hasNameSuffix(name, a.suffixes[k]) {
				marks[i] = true
			}
		}
	}
	return pickMarked(targets, marks), nil
}
