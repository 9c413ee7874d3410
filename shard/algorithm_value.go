package shard

import "math"

// Integer sharding values. A value is an integer when it is of a Go
// integer kind (int, int8 … int64, uint, uint8 … uint64) or a string or
// []byte spelling a decimal integer: an optional sign and at least one
// ASCII digit, nothing else (no spaces, no underscores). None of these
// conversions allocates.

// decimalDigits checks the syntax of a decimal integer and returns its
// sign and digits.
func decimalDigits[T string | []byte](s T) (neg bool, digits T, ok bool) {
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return false, s, false
	}
	for i := 0; i < len(s); i++ {
		if !asciiDigit(s[i]) {
			return false, s, false
		}
	}
	return neg, s, true
}

// decimalMagnitude parses checked digits; big is true when they exceed
// a uint64.
func decimalMagnitude[T string | []byte](digits T) (mag uint64, big bool) {
	for i := 0; i < len(digits); i++ {
		d := uint64(digits[i] - '0')
		if mag > (math.MaxUint64-d)/10 {
			return math.MaxUint64, true
		}
		mag = mag*10 + d
	}
	return mag, false
}

// intParts splits an integer value into sign and magnitude. big is true
// for a decimal string beyond a uint64 magnitude (mag is then MaxUint64).
// ok is false when v is not an integer.
func intParts(v Value) (neg bool, mag uint64, big, ok bool) {
	signed := func(x int64) (bool, uint64, bool, bool) {
		if x < 0 {
			return true, uint64(-(x + 1)) + 1, false, true
		}
		return false, uint64(x), false, true
	}
	switch x := v.(type) {
	case int64:
		return signed(x)
	case int:
		return signed(int64(x))
	case int32:
		return signed(int64(x))
	case int16:
		return signed(int64(x))
	case int8:
		return signed(int64(x))
	case uint64:
		return false, x, false, true
	case uint:
		return false, uint64(x), false, true
	case uint32:
		return false, uint64(x), false, true
	case uint16:
		return false, uint64(x), false, true
	case uint8:
		return false, uint64(x), false, true
	case string:
		n, d, ok := decimalDigits(x)
		if !ok {
			return false, 0, false, false
		}
		m, big := decimalMagnitude(d)
		return n && m != 0, m, big, true
	case []byte:
		n, d, ok := decimalDigits(x)
		if !ok {
			return false, 0, false, false
		}
		m, big := decimalMagnitude(d)
		return n && m != 0, m, big, true
	}
	return false, 0, false, false
}

// int64Of converts an integer value that fits an int64; ok is false for
// anything else.
func int64Of(v Value) (int64, bool) {
	if x, ok := v.(int64); ok {
		return x, true
	}
	neg, mag, big, ok := intParts(v)
	switch {
	case !ok || big:
		return 0, false
	case neg && mag <= 1<<63:
		return int64(-mag), true // -(1<<63) wraps to itself, as wanted
	case !neg && mag <= math.MaxInt64:
		return int64(mag), true
	}
	return 0, false
}

// satInt64Of converts an integer value, saturating at the int64 limits
// (exact is false then). ok is false when v is not an integer.
func satInt64Of(v Value) (x int64, exact, ok bool) {
	if x, ok := v.(int64); ok {
		return x, true, true
	}
	neg, mag, big, ok := intParts(v)
	switch {
	case !ok:
		return 0, false, false
	case neg && !big && mag <= 1<<63:
		return int64(-mag), true, true
	case neg:
		return math.MinInt64, false, true
	case !big && mag <= math.MaxInt64:
		return int64(mag), true, true
	}
	return math.MaxInt64, false, true
}

// residue returns the Euclidean remainder of an integer value divided
// by n (0 <= r < n, so -1 mod 4 is 3, as Java's BigInteger.mod has it);
// decimal strings of any length are accepted. ok is false when v is not
// an integer. n must be in [1, 1<<32].
func residue(v Value, n uint64) (r uint64, ok bool) {
	switch x := v.(type) {
	case int64:
		return signedResidue(x, n), true
	case string:
		return decimalResidue(x, n)
	case []byte:
		return decimalResidue(x, n)
	}
	neg, mag, _, ok := intParts(v)
	if !ok {
		return 0, false
	}
	r = mag % n
	if neg && r != 0 {
		r = n - r
	}
	return r, true
}

func signedResidue(x int64, n uint64) uint64 {
	if x >= 0 {
		return uint64(x) % n
	}
	r := (uint64(-(x + 1)) + 1) % n
	if r != 0 {
		r = n - r
	}
	return r
}

func decimalResidue[T string | []byte](s T, n uint64) (uint64, bool) {
	neg, d, ok := decimalDigits(s)
	if !ok {
		return 0, false
	}
	var r uint64
	for i := 0; i < len(d); i++ {
		r = (r*10 + uint64(d[i]-'0')) % n
	}
	if neg && r != 0 {
		r = n - r
	}
	return r, true
}
