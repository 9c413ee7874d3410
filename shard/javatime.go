package shard

import (
	"errors"
	"strconv"
	"time"
)

// javaPattern is the subset of java.time.format.DateTimeFormatter
// patterns that ShardingSphere's INTERVAL algorithm configurations use:
//
//	y, u    year; yy is the two-digit year 2000-2099, any other count
//	        the full year zero-padded to the count (yyyy: 2024)
//	M       month 1-12 (MM zero-padded; MMM and longer, the names, are
//	        not supported)
//	d       day of month; H hour 0-23; m minute; s second (doubled:
//	        zero-padded)
//	S       fraction of a second, as many digits as letters
//	'text'  literal text ('' is a quote); other characters than letters
//	        and [ ] { } # are literal
//
// Times are naive: a wall clock with no zone, held as a time.Time in UTC.
type javaPattern struct {
	src    string
	tokens []javaToken
	width  int // length of every formatted text; -1 when it varies
	fields uint16
}

type javaToken struct {
	field byte   // 0 for a literal, else one of y M d H m s S ('y' for u too)
	count int    // pattern letters
	lit   string // the literal text
}

// fieldBit returns the fields bit of a pattern letter.
func fieldBit(f byte) uint16 {
	switch f {
	case 'y':
		return 1
	case 'M':
		return 2
	case 'd':
		return 4
	case 'H':
		return 8
	case 'm':
		return 16
	case 's':
		return 32
	case 'S':
		return 64
	}
	return 0
}

func compileJavaPattern(src string) (*javaPattern, error) {
	p := &javaPattern{src: src}
	if src == "" {
		return nil, errors.New("empty pattern")
	}
	addLit := func(s string) {
		if n := len(p.tokens); n > 0 && p.tokens[n-1].field == 0 {
			p.tokens[n-1].lit += s
		} else {
			p.tokens = append(p.tokens, javaToken{lit: s})
		}
		if p.width >= 0 {
			p.width += len(s)
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\'':
			if i+1 < len(src) && src[i+1] == '\'' {
				addLit("'")
				i += 2
				continue
			}
			j := i + 1
			var lit []byte
			for {
				if j >= len(src) {
					return nil, errors.New("unterminated quote at offset " + strconv.Itoa(i))
				}
				if src[j] == '\'' {
					if j+1 < len(src) && src[j+1] == '\'' {
						lit = append(lit, '\'')
						j += 2
						continue
					}
					break
				}
				lit = append(lit, src[j])
				j++
			}
			addLit(string(lit))
			i = j + 1
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			j := i
			for j < len(src) && src[j] == c {
				j++
			}
			count := j - i
			f := c
			if f == 'u' {
				f = 'y'
			}
			bit := fieldBit(f)
			if bit == 0 || f == 'M' && count > 2 || f != 'y' && f != 'S' && count > 2 || f == 'S' && count > 9 {
				return nil, errors.New("unsupported pattern letters " + strconv.Quote(src[i:j]) + " at offset " + strconv.Itoa(i))
			}
			if p.fields&bit != 0 {
				return nil, errors.New("pattern letters " + strconv.Quote(src[i:j]) + " repeat a field at offset " + strconv.Itoa(i))
			}
			p.fields |= bit
			p.tokens = append(p.tokens, javaToken{field: f, count: count})
			switch {
			case p.width < 0:
			case f == 'y' && count == 2, f == 'S':
				p.width += count
			case f == 'y' && count >= 4 || f != 'y' && count == 2:
				p.width += count
			default:
				p.width = -1 // unpadded fields vary in width
			}
			i = j
		case c == '[' || c == ']' || c == '{' || c == '}' || c == '#':
			return nil, errors.New("unsupported pattern character " + strconv.Quote(string(c)) + " at offset " + strconv.Itoa(i))
		default:
			j := i + 1
			for j < len(src) && !javaSpecial(src[j]) {
				j++
			}
			addLit(src[i:j])
			i = j
		}
	}
	return p, nil
}

func javaSpecial(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '\'' || c == '[' || c == ']' ||
		c == '{' || c == '}' || c == '#'
}

func (p *javaPattern) has(f byte) bool { return p.fields&fieldBit(f) != 0 }

// appendFormat appends t formatted by the pattern.
func (p *javaPattern) appendFormat(b []byte, t time.Time) []byte {
	for _, tok := range p.tokens {
		switch tok.field {
		case 0:
			b = append(b, tok.lit...)
		case 'y':
			y := t.Year()
			if tok.count == 2 {
				b = appendPadded(b, ((y%100)+100)%100, 2)
			} else {
				b = appendPadded(b, y, tok.count)
			}
		case 'M':
			b = appendPadded(b, int(t.Month()), tok.count)
		case 'd':
			b = appendPadded(b, t.Day(), tok.count)
		case 'H':
			b = appendPadded(b, t.Hour(), tok.count)
		case 'm':
			b = appendPadded(b, t.Minute(), tok.count)
		case 's':
			b = appendPadded(b, t.Second(), tok.count)
		case 'S':
			f := t.Nanosecond()
			for i := tok.count; i < 9; i++ {
				f /= 10
			}
			b = appendPadded(b, f, tok.count)
		}
	}
	return b
}

func appendPadded(b []byte, v, width int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(v), 10)
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// parse reads a naive time in the pattern. Text longer than a
// fixed-width pattern is cut to its width, and text that stops after a
// whole field leaves the fields after it at their least (month and day
// 1, time 00:00:00), as ShardingSphere does with such values: with
// "yyyy-MM-dd HH:mm:ss", "2024-03-15 10:20:30.5" reads as
// 2024-03-15 10:20:30 and "2024-03-15" as 2024-03-15 00:00:00.
func (p *javaPattern) parse(s string) (time.Time, error) {
	if p.width > 0 && len(s) > p.width {
		s = s[:p.width]
	}
	year, month, day, hour, minute, sec, nsec := 1970, 1, 1, 0, 0, 0, 0
	pos := 0
	for ti, tok := range p.tokens {
		if pos == len(s) && ti > 0 {
			break
		}
		if tok.field == 0 {
			n := min(len(tok.lit), len(s)-pos)
			if s[pos:pos+n] != tok.lit[:n] {
				return time.Time{}, errors.New("text " + strconv.Quote(s) + " does not match pattern " + strconv.Quote(p.src) + " at offset " + strconv.Itoa(pos))
			}
			pos += n
			continue
		}
		minW, maxW := tok.count, tok.count
		switch {
		case tok.field == 'y' && tok.count != 2:
			if tok.count < 4 {
				minW, maxW = tok.count, 9
			} else {
				minW, maxW = 4, tok.count
			}
		case tok.field != 'S' && tok.count == 1:
			maxW = 2
		}
		// An unpadded field followed by a field reads its least width.
		if maxW > minW && ti+1 < len(p.tokens) && p.tokens[ti+1].field != 0 {
			maxW = minW
		}
		j := pos
		for j < len(s) && j-pos < maxW && asciiDigit(s[j]) {
			j++
		}
		if j-pos < minW {
			return time.Time{}, errors.New("text " + strconv.Quote(s) + " does not match pattern " + strconv.Quote(p.src) + " at offset " + strconv.Itoa(pos))
		}
		v, _ := strconv.Atoi(s[pos:j])
		switch tok.field {
		case 'y':
			year = v
			if tok.count == 2 {
				year = 2000 + v
			}
		case 'M':
			month = v
		case 'd':
			day = v
		case 'H':
			hour = v
		case 'm':
			minute = v
		case 's':
			sec = v
		case 'S':
			nsec = v
			for i := tok.count; i < 9; i++ {
				nsec *= 10
			}
		}
		pos = j
	}
	if pos < len(s) {
		return time.Time{}, errors.New("text " + strconv.Quote(s) + " has extra characters for pattern " + strconv.Quote(p.src) + " at offset " + strconv.Itoa(pos))
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, time.Month(month)) ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, errors.New("text " + strconv.Quote(s) + " is not a valid date-time for pattern " + strconv.Quote(p.src))
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), nil
}

// truncate keeps of a naive time only the fields the pattern shows, so
// a value compares as its formatted text would.
func (p *javaPattern) truncate(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	if !p.has('M') {
		mo = 1
	}
	if !p.has('d') {
		d = 1
	}
	if !p.has('H') {
		h = 0
	}
	if !p.has('m') {
		mi = 0
	}
	if !p.has('s') {
		s = 0
	}
	ns := 0
	for _, tok := range p.tokens {
		if tok.field == 'S' {
			div := 1
			for i := tok.count; i < 9; i++ {
				div *= 10
			}
			ns = t.Nanosecond() / div * div
		}
	}
	return time.Date(y, mo, d, h, mi, s, ns, time.UTC)
}

// naive reads a time.Time at its wall clock in its own location, as a
// Java LocalDateTime.
func naive(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

func daysIn(year int, m time.Month) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
