package shard

import (
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// TypeSnowflake is the key generator type NewKeyGenerator accepts.
const TypeSnowflake = "SNOWFLAKE"

// Snowflake ID layout, as ShardingSphere's SnowflakeKeyGenerateAlgorithm:
// bit 63 zero, 41 bits of milliseconds since 2016-11-01T00:00:00Z, 10
// bits of worker id, 12 bits of sequence.
const (
	snowflakeEpochMillis  = 1477958400000 // 2016-11-01T00:00:00Z
	snowflakeSequenceBits = 12
	snowflakeWorkerBits   = 10
	snowflakeMaxSequence  = 1<<snowflakeSequenceBits - 1
	snowflakeMaxWorkerID  = 1<<snowflakeWorkerBits - 1
	snowflakeMaxMillis    = 1<<41 - 1 // until 2086-07-08

	defaultSnowflakeTolerance = 10 // ms, as ShardingSphere
	defaultSnowflakeVibration = 1  // as ShardingSphere
)

// ErrClockBackwards is matched (errors.Is) by the error of NextID when
// the clock is behind the last ID issued by more than the tolerance.
var ErrClockBackwards = errors.New("rwshard: shard: SNOWFLAKE: clock moved backwards")

type clockError struct{ msg string }

func (e *clockError) Error() string        { return e.msg }
func (e *clockError) Is(target error) bool { return target == ErrClockBackwards }

// Snowflake is ShardingSphere's SNOWFLAKE key generator: IDs that
// ShardingSphere would also issue (same epoch, same layout), strictly
// increasing from one generator, also under concurrent use. Give every
// process that inserts into one table its own worker id.
//
// The clock policy differs from ShardingSphere's, which sleeps while the
// clock is behind and spins while a millisecond's 4096 sequence numbers
// are used up. Snowflake never sleeps: it lets its own millisecond run
// ahead of the clock by at most the tolerance (default 10 ms, ShardingSphere's
// max-tolerate-time-difference-milliseconds):
//
//   - The clock steps back by no more than the tolerance: IDs keep coming
//     from the last millisecond, with the next sequence numbers.
//   - A millisecond's sequence numbers run out: the next millisecond is
//     borrowed, if that keeps within the tolerance; else NextID yields
//     (runtime.Gosched) until the clock catches up, as ShardingSphere
//     spins. The Clock must therefore advance.
//   - The clock is behind the last ID by more than the tolerance:
//     NextID fails with an error matching ErrClockBackwards, and works
//     again once the clock is back within the tolerance.
//
// IDs are thus at most the tolerance ahead of the clock. A restart of a
// process within that time could repeat an ID of its previous run; the
// default 10 ms is far shorter than any restart.
//
// Make one with NewSnowflake or NewKeyGenerator; the zero value is not
// ready for use.
type Snowflake struct {
	workerID  int64
	clock     Clock
	tolerance int64 // ms
	vibration int64 // the largest first sequence number of a millisecond

	mu     sync.Mutex
	last   int64 // millisecond (since the epoch) of the last ID; -1 before it
	seq    int64 // sequence of the last ID
	offset int64 // first sequence of the last new millisecond
}

var _ KeyGenerator = (*Snowflake)(nil)

// SnowflakeOption sets an optional parameter of NewSnowflake.
type SnowflakeOption func(*Snowflake) error

// WithClockTolerance sets how far (whole milliseconds, default 10 ms) the
// generator's time may run ahead of its clock: to ride out a clock that
// steps back, and to borrow milliseconds in bursts. 0 makes it wait for
// the clock in bursts and fail on any step back.
func WithClockTolerance(d time.Duration) SnowflakeOption {
	return func(s *Snowflake) error {
		if d < 0 {
			return errors.New("rwshard: shard: SNOWFLAKE: negative clock tolerance " + d.String())
		}
		s.tolerance = d.Milliseconds()
		return nil
	}
}

// WithVibrationOffset sets ShardingSphere's max-vibration-offset (0 to
// 4095, default 1): the first sequence number of each new millisecond
// cycles through 0 … n, so that in light traffic, where most IDs are the
// first of their millisecond, ID modulo 2 (or n+1) still spreads rows
// over shards.
func WithVibrationOffset(n int) SnowflakeOption {
	return func(s *Snowflake) error {
		if n < 0 || n > snowflakeMaxSequence {
			return errors.New("rwshard: shard: SNOWFLAKE: vibration offset " + strconv.Itoa(n) + " out of range [0, 4095]")
		}
		s.vibration = int64(n)
		return nil
	}
}

// NewSnowflake returns a generator for worker id 0 … 1023 reading clock
// (time.Now when nil).
func NewSnowflake(workerID int64, clock Clock, opts ...SnowflakeOption) (*Snowflake, error) {
	if workerID < 0 || workerID > snowflakeMaxWorkerID {
		return nil, errors.New("rwshard: shard: SNOWFLAKE: worker id " + strconv.FormatInt(workerID, 10) + " out of range [0, 1023]")
	}
	if clock == nil {
		clock = time.Now
	}
	s := &Snowflake{
		workerID:  workerID,
		clock:     clock,
		tolerance: defaultSnowflakeTolerance,
		vibration: defaultSnowflakeVibration,
		last:      -1,
		offset:    -1,
	}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// NewKeyGenerator builds a key generator from its type (matched without
// regard to case) and ShardingSphere properties. The only type is
// SNOWFLAKE, with
//
//	worker-id                                  0 … 1023, default 0
//	max-tolerate-time-difference-milliseconds  default 10
//	max-vibration-offset                       0 … 4095, default 1
//
// clock is the time source (time.Now when nil).
func NewKeyGenerator(typ string, props map[string]string, clock Clock) (KeyGenerator, error) {
	if strings.ToUpper(strings.TrimSpace(typ)) != TypeSnowflake {
		return nil, &PropError{Type: typ, Reason: "unknown key generator type; want SNOWFLAKE (for UUID, NANOID, COSID or a class of your own: SNOWFLAKE in the file, or shard.Rules built in Go with your shard.KeyGenerator)"}
	}
	p := algoProps{typ: TypeSnowflake, m: props}
	worker, err := p.optInt64Prop("worker-id", 0, 0, snowflakeMaxWorkerID)
	if err != nil {
		return nil, err
	}
	tol, err := p.optInt64Prop("max-tolerate-time-difference-milliseconds", defaultSnowflakeTolerance, 0, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	vib, err := p.optInt64Prop("max-vibration-offset", defaultSnowflakeVibration, 0, snowflakeMaxSequence)
	if err != nil {
		return nil, err
	}
	return NewSnowflake(worker, clock,
		WithClockTolerance(time.Duration(tol)*time.Millisecond), WithVibrationOffset(int(vib)))
}

// WorkerID returns the worker id in the generator's IDs.
func (s *Snowflake) WorkerID() int64 { return s.workerID }

// NextID returns the next ID. See Snowflake for how it treats the clock.
func (s *Snowflake) NextID() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		now := s.clock().UnixMilli() - snowflakeEpochMillis
		switch {
		case now < 0:
			return 0, errors.New("rwshard: shard: SNOWFLAKE: clock reads " + s.clock().UTC().Format(time.RFC3339Nano) +
				", before the epoch 2016-11-01T00:00:00Z")
		case now > s.last:
			// A new millisecond.
			if s.offset >= s.vibration {
				s.offset = 0
			} else {
				s.offset++
			}
			s.last, s.seq = now, s.offset
		case s.last-now > s.tolerance:
			return 0, &clockError{msg: "rwshard: shard: SNOWFLAKE: clock moved backwards: it reads " +
				strconv.FormatInt(s.last-now, 10) + "ms before the last ID, more than the tolerance of " +
				strconv.FormatInt(s.tolerance, 10) + "ms (max-tolerate-time-difference-milliseconds)"}
		case s.seq < snowflakeMaxSequence:
			// The same millisecond, or the clock is behind within the
			// tolerance: the next sequence number.
			s.seq++
		case s.last+1-now <= s.tolerance:
			// Out of sequence numbers: borrow the next millisecond.
			s.last, s.seq = s.last+1, 0
		default:
			// Out of sequence numbers and as far ahead as allowed.
			s.mu.Unlock()
			runtime.Gosched()
			s.mu.Lock()
			continue
		}
		if s.last > snowflakeMaxMillis {
			return 0, errors.New("rwshard: shard: SNOWFLAKE: the 41-bit timestamp has run out (after 2086-07-08)")
		}
		return s.last<<(snowflakeWorkerBits+snowflakeSequenceBits) | s.workerID<<snowflakeSequenceBits | s.seq, nil
	}
}
