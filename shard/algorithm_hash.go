package shard

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"
	"unicode/utf16"

	"github.com/cespare/xxhash/v2"
)

// hashModAlgorithm is HASH_MOD: xxhash64 of the value's canonical bytes,
// modulo sharding-count, picks the target whose name ends with the
// remainder. Ranges go to every target.
//
// Canonical bytes depend on the value-type property:
//
//	auto (default)  integers of every Go kind: the 8-byte big-endian form
//	                of their int64 (signed kinds) or uint64 (unsigned) value,
//	                so 5, int32(5) and uint64(5) agree; string and []byte:
//	                their bytes; time.Time: its UTC RFC 3339 text with
//	                nanoseconds (time.RFC3339Nano).
//	long, int       an integer column: decimal strings are read as numbers
//	                first, so "5" and 5 agree; other values are an error.
//	string          a string column: integers are hashed as their decimal
//	                text, so 5 and "5" agree; time.Time is an error.
//
// With auto, 5 and "5" land in different shards: set value-type when the
// values of one column can arrive as both (a literal '5' compared with an
// INT column, say).
type hashModAlgorithm struct {
	count     uint64
	valueType string
}

func newHashModAlgorithm(m map[string]string) (Algorithm, error) {
	p := algoProps{typ: "HASH_MOD", m: m}
	n, err := p.int64Prop("sharding-count", 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	vt, err := p.enumProp("value-type", "auto", "auto", "long", "int", "string")
	if err != nil {
		return nil, err
	}
	if vt == "int" {
		vt = "long"
	}
	return &hashModAlgorithm{count: uint64(n), valueType: vt}, nil
}

func (a *hashModAlgorithm) String() string {
	s := "HASH_MOD(sharding-count=" + strconv.FormatUint(a.count, 10)
	if a.valueType != "auto" {
		s += ", value-type=" + a.valueType
	}
	return s + ")"
}

func (a *hashModAlgorithm) Shard(targets []string, v Value) (string, error) {
	h, err := a.hash(v)
	if err != nil {
		return "", err
	}
	r := h % a.count
	if i := numberedTarget(targets, r); i >= 0 {
		return targets[i], nil
	} else {
		return "", noTargetError("HASH_MOD", v, strconv.FormatUint(r, 10), i, targets)
	}
}

func (a *hashModAlgorithm) ShardRange(targets []string, _ Range) ([]string, error) {
	return targets, nil
}

// hash returns xxhash64 of the canonical bytes of v.
func (a *hashModAlgorithm) hash(v Value) (uint64, error) {
	var buf [40]byte
	switch x := v.(type) {
	case int64:
		if a.valueType == "string" {
			return xxhash.Sum64(strconv.AppendInt(buf[:0], x, 10)), nil
		}
		binary.BigEndian.PutUint64(buf[:8], uint64(x))
		return xxhash.Sum64(buf[:8]), nil
	case string:
		if a.valueType == "long" {
			return a.hashDecimal(v)
		}
		return xxhash.Sum64String(x), nil
	case []byte:
		if a.valueType == "long" {
			return a.hashDecimal(v)
		}
		return xxhash.Sum64(x), nil
	case time.Time:
		if a.valueType != "auto" {
			return 0, valueError("HASH_MOD", v, "cannot be hashed as value-type="+a.valueType)
		}
		return xxhash.Sum64(x.UTC().AppendFormat(buf[:0], time.RFC3339Nano)), nil
	}
	neg, mag, _, ok := intParts(v)
	if !ok {
		return 0, valueError("HASH_MOD", v, "cannot be hashed (want an integer, string, []byte or time.Time)")
	}
	if a.valueType == "string" {
		b := buf[:0]
		if neg {
			b = append(b, '-')
		}
		return xxhash.Sum64(strconv.AppendUint(b, mag, 10)), nil
	}
	if neg {
		mag = -mag // two's complement: the int64 bits
	}
	binary.BigEndian.PutUint64(buf[:8], mag)
	return xxhash.Sum64(buf[:8]), nil
}

// hashDecimal hashes a decimal string as the integer it spells.
func (a *hashModAlgorithm) hashDecimal(v Value) (uint64, error) {
	neg, mag, big, ok := intParts(v)
	if !ok {
		return 0, valueError("HASH_MOD", v, "is not an integer (value-type=long)")
	}
	if big || (neg && mag > 1<<63) {
		return 0, valueError("HASH_MOD", v, "is out of the int64 and uint64 range")
	}
	if neg {
		mag = -mag
	}
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], mag)
	return xxhash.Sum64(buf[:]), nil
}

// javaHashModAlgorithm is SS_HASH_MOD (alias JAVA_HASH_MOD):
// ShardingSphere's HashModShardingAlgorithm,
//
//	Math.abs((long) value.hashCode()) % sharding-count
//
// picking the target whose name ends with the result. It finds rows that
// ShardingSphere placed. Java's hashCode depends on the Java type of the
// value, which ShardingSphere takes from the JDBC driver or the SQL
// literal; the value-type property says which type to mimic:
//
//	long (default)  java.lang.Long, as for a BIGINT column:
//	                (int)(v ^ (v >>> 32)). Integer values and decimal
//	                strings that fit an int64 are accepted.
//	int             java.lang.Integer, as for an INT column: the value
//	                itself; it must fit an int32.
//	string          java.lang.String, as for a CHAR/VARCHAR column:
//	                s[0]*31^(n-1) + … + s[n-1] over the UTF-16 code units
//	                of the UTF-8 text (invalid bytes read as U+FFFD);
//	                integers are hashed as their decimal text.
//
// Long and Integer agree on 0 … 2147483647, so long is right for either
// column type unless the keys are negative. Ranges go to every target.
type javaHashModAlgorithm struct {
	typ       string // SS_HASH_MOD or JAVA_HASH_MOD, for messages
	count     int64
	valueType string
}

func newJavaHashModAlgorithm(typ string, m map[string]string) (Algorithm, error) {
	p := algoProps{typ: typ, m: m}
	n, err := p.int64Prop("sharding-count", 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	vt, err := p.enumProp("value-type", "long", "long", "int", "string")
	if err != nil {
		return nil, err
	}
	return &javaHashModAlgorithm{typ: typ, count: n, valueType: vt}, nil
}

func (a *javaHashModAlgorithm) String() string {
	return a.typ + "(sharding-count=" + strconv.FormatInt(a.count, 10) + ", value-type=" + a.valueType + ")"
}

func (a *javaHashModAlgorithm) Shard(targets []string, v Value) (string, error) {
	h, err := a.hashCode(v)
	if err != nil {
		return "", err
	}
	r := uint64(javaAbs(h) % a.count)
	if i := numberedTarget(targets, r); i >= 0 {
		return targets[i], nil
	} else {
		return "", noTargetError(a.typ, v, strconv.FormatUint(r, 10), i, targets)
	}
}

func (a *javaHashModAlgorithm) ShardRange(targets []string, _ Range) ([]string, error) {
	return targets, nil
}

// javaAbs is Math.abs((long) h): never negative, 2147483648 for
// Integer.MIN_VALUE.
func javaAbs(h int32) int64 {
	x := int64(h)
	if x < 0 {
		return -x
	}
	return x
}

// hashCode returns the Java hashCode of v as the configured Java type.
func (a *javaHashModAlgorithm) hashCode(v Value) (int32, error) {
	switch a.valueType {
	case "int":
		x, ok := int64Of(v)
		if !ok || x < math.MinInt32 || x > math.MaxInt32 {
			return 0, valueError(a.typ, v, "is not an integer in the Java int range (value-type=int)")
		}
		return javaIntegerHash(int32(x)), nil
	case "string":
		switch x := v.(type) {
		case string:
			return javaStringHash(x), nil
		case []byte:
			return javaBytesHash(x), nil
		}
		neg, mag, _, ok := intParts(v)
		if !ok {
			return 0, valueError(a.typ, v, "is not a string or an integer (value-type=string)")
		}
		var buf [24]byte
		b := buf[:0]
		if neg {
			b = append(b, '-')
		}
		return javaBytesHash(strconv.AppendUint(b, mag, 10)), nil
	default:
		x, ok := int64Of(v)
		if !ok {
			return 0, valueError(a.typ, v, "is not an integer in the Java long range (value-type=long)")
		}
		return javaLongHash(x), nil
	}
}

// javaIntegerHash is java.lang.Integer.hashCode.
func javaIntegerHash(v int32) int32 { return v }

// javaLongHash is java.lang.Long.hashCode: (int)(v ^ (v >>> 32)).
func javaLongHash(v int64) int32 { return int32(v ^ int64(uint64(v)>>32)) }

// javaStringHash is java.lang.String.hashCode of the UTF-16 form of s.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		h = javaHashRune(h, r)
	}
	return h
}

// javaBytesHash is javaStringHash of UTF-8 bytes.
func javaBytesHash(b []byte) int32 {
	var h int32
	for _, r := range string(b) { // no copy: the compiler ranges over b
		h = javaHashRune(h, r)
	}
	return h
}

func javaHashRune(h int32, r rune) int32 {
	if r < 0x10000 {
		return 31*h + int32(r)
	}
	r1, r2 := utf16.EncodeRune(r)
	return 31*(31*h+int32(r1)) + int32(r2)
}
