package route

import (
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sameResult asserts that a cached answer equals Classify's.
func sameResult(t testing.TB, sql string, got Class, gotErr error) {
	t.Helper()
	want, wantErr := Classify(sql)
	require.Equalf(t, want, got, "class of %q", sql)
	if wantErr == nil {
		require.NoErrorf(t, gotErr, "%q", sql)
	} else {
		require.EqualErrorf(t, gotErr, wantErr.Error(), "%q", sql)
	}
}

// countingClassifier returns a Classifier whose classifications are
// counted per text.
func countingClassifier(size int) (*Classifier, func(string) int64) {
	c := NewClassifier(size)
	var mu sync.Mutex
	counts := map[string]int64{}
	c.classify = func(sql string) (Class, error) {
		mu.Lock()
		counts[sql]++
		mu.Unlock()
		return Classify(sql)
	}
	return c, func(sql string) int64 {
		mu.Lock()
		defer mu.Unlock()
		return counts[sql]
	}
}

func TestClassifierHitsEqualClassify(t *testing.T) {
	c, count := countingClassifier(0)
	sqls := []string{"/* rwshard:bogus */ SELECT 1", "/* rwshard:replica */ SELECT 1"}
	for _, tc := range classifyCases {
		sqls = append(sqls, tc.sql)
	}
	for round := 0; round < 3; round++ {
		for _, sql := range sqls {
			got, err := c.Classify(sql)
			sameResult(t, sql, got, err)
		}
	}
	for _, sql := range sqls {
		assert.EqualValuesf(t, 1, count(sql), "classifications of %q", sql)
	}
}

func TestClassifierHitAllocs(t *testing.T) {
	c := NewClassifier(0)
	for _, sql := range []string{firstSightSQL, "SET autocommit=0", "/* rwshard:primary */ SELECT 1", "/* rwshard:bogus */ SELECT 1"} {
		_, _ = c.Classify(sql)
		n := testing.AllocsPerRun(100, func() { _, _ = c.Classify(sql) })
		assert.Zerof(t, n, "allocations on a hit for %q", sql)
	}
}

// TestClassifierCollision forces every text onto the same hash: the cache
// must still answer each text with its own class.
func TestClassifierCollision(t *testing.T) {
	sqls := []string{
		"SELECT 1 FROM t", // same length, different kinds
		"DELETE   FROM t",
		"BEGIN          ",
		"SELECT 'x' FOR UPDATE",
		"/* rwshard:bogus */ SELECT 1",
	}
	for _, size := range []int{1, 2, 16, 0} {
		c := NewClassifier(size)
		c.hash = func(string) uint64 { return 42 }
		for round := 0; round < 4; round++ {
			for _, sql := range sqls {
				got, err := c.Classify(sql)
				sameResult(t, sql, got, err)
			}
			for i := len(sqls) - 1; i >= 0; i-- {
				got, err := c.Classify(sqls[i])
				sameResult(t, sqls[i], got, err)
			}
		}
		assert.LessOrEqual(t, c.Len(), 2, "one hash holds one entry per generation")
	}
}

func TestClassifierBounded(t *testing.T) {
	for _, size := range []int{0, 1, 10, 100, 1000, 5000} {
		c := NewClassifier(size)
		limit := size
		if size <= 0 {
			limit = DefaultCacheSize
		}
		limit = max(limit, 2)
		for i := range 100_000 {
			sql := fmt.Sprintf("SELECT * FROM t WHERE id = %d", i)
			got, err := c.Classify(sql)
			require.NoError(t, err)
			require.Equal(t, Read, got.Kind)
			if i%997 == 0 {
				require.LessOrEqualf(t, c.Len(), limit, "size %d after %d statements", size, i+1)
			}
		}
		assert.LessOrEqualf(t, c.Len(), limit, "size %d", size)
		assert.Positivef(t, c.Len(), "size %d", size)
	}
}

// TestClassifierKeepsUsedStatements checks the generations: a statement
// used in every generation survives any number of others passing through.
func TestClassifierKeepsUsedStatements(t *testing.T) {
	c, count := countingClassifier(64) // one shard, 32 per generation
	hot := []string{"SELECT 1", "UPDATE t SET a = 1", "BEGIN"}
	for i := range 10_000 {
		for _, sql := range hot {
			_, _ = c.Classify(sql)
		}
		_, _ = c.Classify(fmt.Sprintf("SELECT %d", i))
	}
	for _, sql := range hot {
		assert.EqualValuesf(t, 1, count(sql), "classifications of %q", sql)
	}
	assert.LessOrEqual(t, c.Len(), 64)
}

func TestClassifierLongStatements(t *testing.T) {
	c, count := countingClassifier(16)
	c.halfBytes = 100
	long := fmt.Sprintf("SELECT %0200d", 7)
	for range 3 {
		got, err := c.Classify(long)
		sameResult(t, long, got, err)
	}
	assert.EqualValues(t, 3, count(long), "a statement over the byte budget is not cached")
	assert.Zero(t, c.Len())

	// Text bytes turn the generations over too.
	for i := range 100 {
		_, _ = c.Classify(fmt.Sprintf("SELECT %040d", i))
	}
	for i := range c.shards {
		assert.LessOrEqual(t, c.shards[i].curBytes, c.halfBytes)
	}
}

func TestClassifierConcurrent(t *testing.T) {
	c := NewClassifier(128)
	var classified atomic.Int64
	c.classify = func(sql string) (Class, error) {
		classified.Add(1)
		return Classify(sql)
	}
	want := make([]Class, len(classifyCases))
	for i, tc := range classifyCases {
		want[i], _ = Classify(tc.sql)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 4000 {
				j := (i*7 + g*13) % len(classifyCases)
				got, err := c.Classify(classifyCases[j].sql)
				if err != nil || !reflect.DeepEqual(got, want[j]) {
					t.Errorf("%q: got %+v, %v; want %+v", classifyCases[j].sql, got, err, want[j])
					return
				}
				if i%50 == 0 {
					sql := fmt.Sprintf("SELECT %d FROM t%d", i, g)
					got, err := c.Classify(sql)
					if err != nil || got.Kind != Read {
						t.Errorf("%q: got %+v, %v", sql, got, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, c.Len(), 128)
	assert.Positive(t, classified.Load())
}
