package rwshard

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// What every statement writes in a connection, a statement cache and its
// entries lies on lines no other connection's memory shares: each type is
// padded to a size the allocator aligns to 64-byte cache lines (its size
// class; 576, 64 and 128 bytes are their own), and the fields the short
// path touches come first. A field added without taking padding away
// fails here.
func TestSizeofHotStructs(t *testing.T) {
	assert.Equal(t, uintptr(576), unsafe.Sizeof(conn{}), "conn")
	assert.Equal(t, uintptr(64), unsafe.Sizeof(stmtCache{}), "stmtCache")
	assert.Equal(t, uintptr(128), unsafe.Sizeof(cachedStmt{}), "cachedStmt")

	var c conn
	assert.True(t, unsafe.Offsetof(c.pendingWrite) < 64, "the held connection's state and the flags on the first line: they end at %d", unsafe.Offsetof(c.pendingWrite)+1)
	assert.Equal(t, uintptr(64), unsafe.Offsetof(c.short), "the short path's state on the second line")
	assert.True(t, unsafe.Offsetof(c.vars)+unsafe.Sizeof(c.vars.key) <= 128, "vars.key on the second line: ends at %d", unsafe.Offsetof(c.vars)+unsafe.Sizeof(c.vars.key))
	assert.True(t, unsafe.Offsetof(c.plainCtx) >= 64 && unsafe.Offsetof(c.plainCtx)+unsafe.Sizeof(c.plainCtx) <= 128, "plainCtx on the second line: at %d", unsafe.Offsetof(c.plainCtx))
	var e cachedStmt
	assert.True(t, unsafe.Offsetof(e.queryer)+unsafe.Sizeof(e.queryer) <= 64, "an entry's live, used and methods on one line")
	var bc backendConn
	assert.True(t, unsafe.Offsetof(bc.vars)+unsafe.Sizeof(bc.vars.key) <= 64, "a connection's checker, cache and vars.key on one line")
	var s stmt
	assert.True(t, unsafe.Offsetof(s.short)+unsafe.Sizeof(s.short) <= 64, "a statement's short-path fields on one line")
}
