package shard

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var snowflakeEpoch = time.Date(2016, 11, 1, 0, 0, 0, 0, time.UTC)

// fakeClock is a settable Clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(sinceEpoch time.Duration) *fakeClock {
	return &fakeClock{t: snowflakeEpoch.Add(sinceEpoch)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// tickingClock advances one millisecond every perMilli reads, safely
// for concurrent use.
func tickingClock(perMilli int64) (Clock, func() int64) {
	var reads atomic.Int64
	base := snowflakeEpoch.Add(1000 * time.Hour)
	millis := func() int64 { return reads.Load() / perMilli }
	return func() time.Time {
		return base.Add(time.Duration(reads.Add(1)/perMilli) * time.Millisecond)
	}, func() int64 { return base.UnixMilli() - snowflakeEpochMillis + millis() }
}

// decode splits an ID into its fields.
func decode(id int64) (millis, worker, seq int64) {
	return id >> 22, id >> 12 & 1023, id & 4095
}

func mustSnowflake(t testing.TB, worker int64, clock Clock, opts ...SnowflakeOption) *Snowflake {
	t.Helper()
	s, err := NewSnowflake(worker, clock, opts...)
	require.NoError(t, err)
	return s
}

func nextID(t testing.TB, s *Snowflake) int64 {
	t.Helper()
	id, err := s.NextID()
	require.NoError(t, err)
	return id
}

func TestSnowflakeLayout(t *testing.T) {
	clock := newFakeClock(1000 * time.Millisecond)
	s := mustSnowflake(t, 5, clock.Now)
	assert.Equal(t, int64(5), s.WorkerID())
	assert.Equal(t, int64(1000<<22|5<<12|0), nextID(t, s))
	assert.Equal(t, int64(1000<<22|5<<12|1), nextID(t, s))

	// At the epoch the timestamp bits are zero; worker ids fill their 10
	// bits and no more.
	for _, w := range []int64{0, 1, 512, 1023} {
		s := mustSnowflake(t, w, newFakeClock(0).Now)
		id := nextID(t, s)
		ms, worker, seq := decode(id)
		assert.Equal(t, [3]int64{0, w, 0}, [3]int64{ms, worker, seq}, "worker %d", w)
		assert.Equal(t, w<<12, id)
	}
	// A known instant: 2024-01-01T00:00:00Z (Unix 1704067200) is 226,108,800,000 ms after the epoch.
	s = mustSnowflake(t, 1023, func() time.Time { return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) })
	ms, worker, seq := decode(nextID(t, s))
	assert.Equal(t, [3]int64{226108800000, 1023, 0}, [3]int64{ms, worker, seq})

	_, err := NewSnowflake(-1, nil)
	assert.EqualError(t, err, "rwshard: shard: SNOWFLAKE: worker id -1 out of range [0, 1023]")
	_, err = NewSnowflake(1024, nil)
	assert.EqualError(t, err, "rwshard: shard: SNOWFLAKE: worker id 1024 out of range [0, 1023]")
	_, err = NewSnowflake(0, nil, WithClockTolerance(-time.Millisecond))
	assert.EqualError(t, err, "rwshard: shard: SNOWFLAKE: negative clock tolerance -1ms")
	_, err = NewSnowflake(0, nil, WithVibrationOffset(4096))
	assert.EqualError(t, err, "rwshard: shard: SNOWFLAKE: vibration offset 4096 out of range [0, 4095]")
}

func TestSnowflakeClockLimits(t *testing.T) {
	s := mustSnowflake(t, 0, newFakeClock(-24*time.Hour).Now)
	_, err := s.NextID()
	assert.EqualError(t, err, "rwshard: shard: SNOWFLAKE: clock reads 2016-10-31T00:00:00Z, before the epoch 2016-11-01T00:00:00Z")

	last := snowflakeEpoch.Add((1<<41 - 1) * time.Millisecond)
	assert.Equal(t, "2086-07-08", last.Format(time.DateOnly), "the documented end of the timestamp")
	clock := &fakeClock{t: last}
	s = mustSnowflake(t, 0, clock.Now)
	id := nextID(t, s)
	assert.Positive(t, id, "bit 63 stays clear")
	clock.Add(time.Millisecond)
	_, err = s.NextID()
	assert.EqualError(t, err, "rwshard: shard: SNOWFLAKE: the 41-bit timestamp has run out (after 2086-07-08)")
}

func TestSnowflakeVibration(t *testing.T) {
	firstSeqs := func(opts ...SnowflakeOption) []int64 {
		clock := newFakeClock(time.Hour)
		s := mustSnowflake(t, 1, clock.Now, opts...)
		var seqs []int64
		for i := 0; i < 6; i++ {
			_, _, seq := decode(nextID(t, s))
			seqs = append(seqs, seq)
			clock.Add(time.Millisecond)
		}
		return seqs
	}
	assert.Equal(t, []int64{0, 1, 0, 1, 0, 1}, firstSeqs(), "ShardingSphere's default max-vibration-offset 1")
	assert.Equal(t, []int64{0, 0, 0, 0, 0, 0}, firstSeqs(WithVibrationOffset(0)))
	assert.Equal(t, []int64{0, 1, 2, 3, 0, 1}, firstSeqs(WithVibrationOffset(3)))
}

func TestSnowflakeBurstBorrowsThenWaits(t *testing.T) {
	clock := newFakeClock(time.Hour)
	start := time.Hour.Milliseconds()
	s := mustSnowflake(t, 7, clock.Now, WithVibrationOffset(0))
	// The clock stands still: 4096 IDs per millisecond, the next ten
	// milliseconds borrowed.
	prev := int64(-1)
	for i := 0; i < 11*4096; i++ {
		id := nextID(t, s)
		require.Greater(t, id, prev)
		prev = id
		ms, worker, seq := decode(id)
		require.Equal(t, start+int64(i/4096), ms, "ID %d", i)
		require.Equal(t, int64(7), worker)
		require.Equal(t, int64(i%4096), seq)
	}
	// Ten milliseconds ahead: the next ID waits for the clock.
	done := make(chan int64)
	go func() {
		id, _ := s.NextID()
		done <- id
	}()
	select {
	case id := <-done:
		t.Fatalf("NextID returned %d while the clock stood still 10ms behind", id)
	case <-time.After(50 * time.Millisecond):
	}
	clock.Add(time.Millisecond)
	select {
	case id := <-done:
		ms, _, seq := decode(id)
		assert.Equal(t, start+11, ms)
		assert.Equal(t, int64(0), seq)
		assert.Greater(t, id, prev)
	case <-time.After(10 * time.Second):
		t.Fatal("NextID did not return after the clock moved")
	}
}

func TestSnowflakeClockStepsBack(t *testing.T) {
	clock := newFakeClock(time.Hour)
	start := time.Hour.Milliseconds()
	s := mustSnowflake(t, 3, clock.Now, WithVibrationOffset(0))
	var ids []int64
	for i := 0; i < 3; i++ {
		ids = append(ids, nextID(t, s))
	}
	// Back 5ms, within the 10ms tolerance: IDs continue from the last
	// millisecond.
	clock.Add(-5 * time.Millisecond)
	for i := 0; i < 3; i++ {
		ids = append(ids, nextID(t, s))
	}
	for i, id := range ids {
		ms, _, seq := decode(id)
		assert.Equal(t, [2]int64{start, int64(i)}, [2]int64{ms, seq})
	}
	// The clock catches up and passes: a new millisecond.
	clock.Add(6 * time.Millisecond)
	ms, _, seq := decode(nextID(t, s))
	assert.Equal(t, [2]int64{start + 1, 0}, [2]int64{ms, seq})

	// Back 11ms: too far. It fails until the clock is within 10ms again.
	clock.Add(-11 * time.Millisecond)
	_, err := s.NextID()
	assert.ErrorIs(t, err, ErrClockBackwards)
	assert.EqualError(t, err, "rwshard: shard: SNOWFLAKE: clock moved backwards: it reads 11ms before the last ID, more than the tolerance of 10ms (max-tolerate-time-difference-milliseconds)")
	clock.Add(time.Millisecond)
	ms, _, seq = decode(nextID(t, s))
	assert.Equal(t, [2]int64{start + 1, 1}, [2]int64{ms, seq})

	// With no tolerance any step back fails.
	strict := mustSnowflake(t, 3, clock.Now, WithClockTolerance(0))
	nextID(t, strict)
	clock.Add(-time.Millisecond)
	_, err = strict.NextID()
	assert.True(t, errors.Is(err, ErrClockBackwards))
	clock.Add(time.Millisecond)
	nextID(t, strict)
}

func TestSnowflakeMonotonic(t *testing.T) {
	clock, _ := tickingClock(1000)
	s := mustSnowflake(t, 9, clock)
	prev := int64(-1)
	for i := 0; i < 1_000_000; i++ {
		id, err := s.NextID()
		if err != nil {
			t.Fatal(err)
		}
		if id <= prev {
			t.Fatalf("ID %d: %d after %d", i, id, prev)
		}
		prev = id
	}
	_, worker, _ := decode(prev)
	assert.Equal(t, int64(9), worker)
}

func TestSnowflakeConcurrent(t *testing.T) {
	// 5,000 reads a millisecond: more IDs than the sequence holds, so
	// the generator borrows milliseconds and waits for the clock too.
	clock, clockMillis := tickingClock(5000)
	s := mustSnowflake(t, 1, clock)
	const goroutines = 8
	each := 125_000 // a million IDs in all
	if testing.Short() {
		each = 10_000
	}
	ids := make([][]int64, goroutines)
	var wg sync.WaitGroup
	for g := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]int64, 0, each)
			for i := 0; i < each; i++ {
				id, err := s.NextID()
				if err != nil {
					t.Error(err)
					return
				}
				out = append(out, id)
			}
			ids[g] = out
		}()
	}
	wg.Wait()
	var all []int64
	for g, list := range ids {
		require.Len(t, list, each)
		for i := 1; i < len(list); i++ {
			require.Greater(t, list[i], list[i-1], "goroutine %d, ID %d", g, i)
		}
		all = append(all, list...)
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		require.NotEqual(t, all[i-1], all[i], "duplicate ID")
	}
	ms, _, _ := decode(all[len(all)-1])
	assert.LessOrEqual(t, ms, clockMillis()+defaultSnowflakeTolerance, "IDs run at most the tolerance ahead of the clock")
}

func TestSnowflakeRealClock(t *testing.T) {
	s := mustSnowflake(t, 2, nil)
	before := time.Now().UnixMilli() - snowflakeEpochMillis
	prev := int64(-1)
	for i := 0; i < 100_000; i++ {
		id := nextID(t, s)
		require.Greater(t, id, prev)
		prev = id
	}
	after := time.Now().UnixMilli() - snowflakeEpochMillis
	ms, _, _ := decode(prev)
	assert.GreaterOrEqual(t, ms, before)
	assert.LessOrEqual(t, ms, after+defaultSnowflakeTolerance)
}

func TestNewKeyGenerator(t *testing.T) {
	clock := newFakeClock(time.Second)
	g, err := NewKeyGenerator("snowflake", map[string]string{
		"worker-id": "7", "max-tolerate-time-difference-milliseconds": "0", "max-vibration-offset": "0",
	}, clock.Now)
	require.NoError(t, err)
	s := g.(*Snowflake)
	assert.Equal(t, int64(7), s.WorkerID())
	assert.Equal(t, int64(0), s.tolerance)
	assert.Equal(t, int64(0), s.vibration)
	id, err := g.NextID()
	require.NoError(t, err)
	assert.Equal(t, int64(1000<<22|7<<12), id)

	g, err = NewKeyGenerator("SNOWFLAKE", nil, nil)
	require.NoError(t, err)
	s = g.(*Snowflake)
	assert.Equal(t, [3]int64{0, 10, 1}, [3]int64{s.WorkerID(), s.tolerance, s.vibration}, "ShardingSphere's defaults")

	cases := []struct {
		typ   string
		props map[string]string
		want  string
	}{
		{"UUID", nil, `rwshard: shard: "UUID": unknown key generator type; want SNOWFLAKE (for UUID, NANOID, COSID or a class of your own: SNOWFLAKE in the file, or shard.Rules built in Go with your shard.KeyGenerator)`},
		{"SNOWFLAKE", map[string]string{"worker-id": "1024"}, `rwshard: shard: SNOWFLAKE: property worker-id="1024": out of range [0, 1023]`},
		{"SNOWFLAKE", map[string]string{"worker-id": "one"}, `rwshard: shard: SNOWFLAKE: property worker-id="one": not an integer`},
		{"SNOWFLAKE", map[string]string{"max-tolerate-time-difference-milliseconds": "-1"}, `rwshard: shard: SNOWFLAKE: property max-tolerate-time-difference-milliseconds="-1": out of range [0, 2147483647]`},
		{"SNOWFLAKE", map[string]string{"max-vibration-offset": "4096"}, `rwshard: shard: SNOWFLAKE: property max-vibration-offset="4096": out of range [0, 4095]`},
	}
	for _, c := range cases {
		_, err := NewKeyGenerator(c.typ, c.props, nil)
		assert.EqualError(t, err, c.want)
		var pe *PropError
		assert.True(t, errors.As(err, &pe), c.want)
	}
}

func BenchmarkSnowflake(b *testing.B) {
	s := mustSnowflake(b, 1, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.NextID(); err != nil {
			b.Fatal(err)
		}
	}
}
