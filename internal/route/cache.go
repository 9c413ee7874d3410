package route

import (
	"sync"

	"github.com/cespare/xxhash/v2"
)

// DefaultCacheSize is the number of statements a Classifier keeps when
// NewClassifier is given a size ≤ 0.
const DefaultCacheSize = 4096

const (
	// maxShards bounds the number of independently locked parts of the
	// cache; a cache gets fewer when that would leave less than
	// minShardSize statements in each.
	maxShards    = 16
	minShardSize = 64
	// maxCacheBytes bounds the statement text a Classifier retains. A
	// statement longer than a shard's half share of it is classified on
	// every call rather than cached: retaining it would evict everything
	// else.
	maxCacheBytes = 64 << 20
)

// Classifier is Classify with a bounded cache of classified statements,
// keyed by the xxhash64 of the text. A hit costs a hash and a map lookup
// and does not allocate; a statement is lexed once while it stays cached.
// The cache stores the text with the class and compares it on a hit, so a
// hash collision costs a classification, never a wrong answer. Errors
// (malformed comment hints) are cached like classes.
//
// A Classifier is safe for concurrent use. Its zero value is not usable:
// call NewClassifier.
type Classifier struct {
	shards []shard
	mask   uint64
	// half is the number of statements a shard's current generation may
	// hold before it becomes the previous one; halfBytes the same for the
	// bytes of text.
	half, halfBytes int
	// hash is xxhash.Sum64String and classify is Classify; tests replace
	// them to force collisions and to count classifications.
	hash     func(string) uint64
	classify func(string) (Class, error)
	// tag computes Class.Tag (NewTaggingClassifier); nil: none.
	tag func(string, Class) int
}

// shard is one independently locked part of the cache. It holds two
// generations: a statement is looked up in cur, then in prev (and moved to
// cur on a hit there); when cur is full, prev is dropped and cur becomes
// prev. A statement used at least once per generation is never evicted;
// memory is bounded by two generations.
type shard struct {
	mu        sync.Mutex
	cur, prev map[uint64]entry
	curBytes  int
	_         [64]byte // keep shards on separate cache lines
}

// entry is a cached classification.
type entry struct {
	sql   string
	class Class
	err   error
}

// NewClassifier returns a Classifier that keeps about size statements
// (DefaultCacheSize if size ≤ 0).
func NewClassifier(size int) *Classifier {
	if size <= 0 {
		size = DefaultCacheSize
	}
	size = max(size, 2)
	n := 1
	for n < maxShards && size/(n*2) >= minShardSize {
		n *= 2
	}
	half := max(size/n/2, 1)
	c := &Classifier{
		shards:    make([]shard, n),
		mask:      uint64(n - 1),
		half:      half,
		halfBytes: maxCacheBytes / n / 2,
		hash:      xxhash.Sum64String,
		classify:  Classify,
	}
	for i := range c.shards {
		c.shards[i].cur = make(map[uint64]entry, half)
		c.shards[i].prev = make(map[uint64]entry, half)
	}
	return c
}

// NewTaggingClassifier is NewClassifier with a tag function: a pure
// function of a text and its class, run once per text when it is
// classified (not on a cache hit), whose result the Classifier returns
// as Class.Tag. The driver uses it to decide its pool rules once per
// statement text. tag is not called for a text whose hint is malformed.
func NewTaggingClassifier(size int, tag func(sql string, c Class) int) *Classifier {
	c := NewClassifier(size)
	c.tag = tag
	return c
}

// Classify returns Classify(sql), from the cache when it can.
func (c *Classifier) Classify(sql string) (Class, error) {
	h := c.hash(sql)
	s := &c.shards[h&c.mask]
	s.mu.Lock()
	if e, ok := s.cur[h]; ok && e.sql == sql {
		s.mu.Unlock()
		return e.class, e.err
	}
	if e, ok := s.prev[h]; ok && e.sql == sql {
		delete(s.prev, h)
		c.put(s, h, e)
		s.mu.Unlock()
		return e.class, e.err
	}
	s.mu.Unlock()

	class, err := c.classify(sql)
	if err == nil && c.tag != nil {
		class.Tag = c.tag(sql, class)
	}
	if len(sql) <= c.halfBytes {
		s.mu.Lock()
		c.put(s, h, entry{sql: sql, class: class, err: err})
		s.mu.Unlock()
	}
	return class, err
}

// put stores e in the current generation of s, which must be locked,
// turning the generations over first if it is full. A colliding entry
// under the same hash is replaced.
func (c *Classifier) put(s *shard, h uint64, e entry) {
	if old, ok := s.cur[h]; ok {
		s.curBytes -= len(old.sql)
	} else if len(s.cur) >= c.half || s.curBytes+len(e.sql) > c.halfBytes {
		clear(s.prev)
		s.prev, s.cur = s.cur, s.prev
		s.curBytes = 0
	}
	s.cur[h] = e
	s.curBytes += len(e.sql)
}

// Len returns the number of statements cached.
func (c *Classifier) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.cur) + len(s.prev)
		s.mu.Unlock()
	}
	return n
}
