package rwshard

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The tracker follows the server's packets as go-sql-driver reads them,
// in any pieces, and keeps the last_gtid of the OK packets that report
// one; rows that merely look like an OK packet are not taken for one.

// pkt frames a payload as one packet with sequence number seq.
func pkt(seq byte, payload []byte) []byte {
	h := []byte{byte(len(payload)), byte(len(payload) >> 8), byte(len(payload) >> 16), seq}
	return append(h, payload...)
}

func lenencInt(v uint64) []byte {
	switch {
	case v < 251:
		return []byte{byte(v)}
	case v < 1<<16:
		return []byte{0xfc, byte(v), byte(v >> 8)}
	case v < 1<<24:
		return []byte{0xfd, byte(v), byte(v >> 8), byte(v >> 16)}
	}
	b := make([]byte, 9)
	b[0] = 0xfe
	binary.LittleEndian.PutUint64(b[1:], v)
	return b
}

func lenencStr(s string) []byte { return append(lenencInt(uint64(len(s))), s...) }

// okPacket is an OK packet (header 0x00, or 0xFE ending rows) with the
// given status, reporting last_gtid when gtid is not empty.
func okPacket(header byte, status uint16, gtid string) []byte {
	p := []byte{header}
	p = append(p, lenencInt(3)...) // affected rows
	p = append(p, lenencInt(0)...) // last insert id
	if gtid != "" {
		status |= statusStateChanged
	}
	p = binary.LittleEndian.AppendUint16(p, status)
	p = append(p, 0, 0) // warnings
	p = append(p, lenencStr("Rows matched: 3")...)
	if gtid != "" {
		var v []byte
		v = append(v, lenencStr("last_gtid")...)
		v = append(v, lenencStr(gtid)...)
		entry := append([]byte{sessionTrackSysVar}, lenencInt(uint64(len(v)))...)
		entry = append(entry, v...)
		// Another tracker's entry before it (schema), which is skipped.
		other := append([]byte{1}, lenencStr(string(lenencStr("app")))...)
		state := append(other, entry...)
		p = append(p, lenencInt(uint64(len(state)))...)
		p = append(p, state...)
	}
	return p
}

// greeting is a MariaDB server's handshake (no CLIENT_MYSQL bit), offering
// session tracking.
func greeting() []byte {
	p := []byte{10}
	p = append(p, "5.5.5-10.11.6-MariaDB"...)
	p = append(p, 0)
	p = append(p, 1, 0, 0, 0)         // connection id
	p = append(p, make([]byte, 8)...) // scramble
	p = append(p, 0)
	caps := uint32(capSessionTrack | capDeprecateEOF | 1<<9)
	p = binary.LittleEndian.AppendUint16(p, uint16(caps))
	p = append(p, 33, 2, 0)
	p = binary.LittleEndian.AppendUint16(p, uint16(caps>>16))
	p = append(p, make([]byte, 21)...)
	return p
}

// loginPacket is go-sql-driver's handshake response with capabilities caps.
func loginPacket(caps uint32) []byte {
	p := make([]byte, 32)
	binary.LittleEndian.PutUint32(p, caps)
	p = append(p, "app"...)
	return pkt(1, append(p, 0))
}

// pipe is a net.Conn whose reads return the bytes queued, in chunks of
// step (0: all at once), and which swallows writes.
type pipe struct {
	net.Conn
	in   []byte
	step int
	out  bytes.Buffer
}

func (p *pipe) Read(b []byte) (int, error) {
	n := len(p.in)
	if p.step > 0 {
		n = min(n, p.step)
	}
	n = copy(b, p.in[:n])
	p.in = p.in[n:]
	return n, nil
}

func (p *pipe) Write(b []byte) (int, error)      { return p.out.Write(b) }
func (p *pipe) SetDeadline(time.Time) error      { return nil }
func (p *pipe) SetReadDeadline(time.Time) error  { return nil }
func (p *pipe) SetWriteDeadline(time.Time) error { return nil }
func (p *pipe) Close() error                     { return nil }

// session runs a handshake on a tracker over p and returns it.
func session(t *testing.T, p *pipe, caps uint32) *trackConn {
	t.Helper()
	tc := newTrackConn(p)
	p.in = append(p.in, pkt(0, greeting())...)
	drain(tc)
	login := loginPacket(caps)
	if _, err := tc.Write(login); err != nil {
		t.Fatal(err)
	}
	tc.on.Store(true)
	tc.armed = true // as for a statement that may commit
	return tc
}

// drain reads everything queued.
func drain(tc *trackConn) {
	buf := make([]byte, 4096)
	for len(tc.Conn.(*pipe).in) > 0 {
		_, _ = tc.Read(buf)
	}
}

// command sends a command and queues the server's reply packets.
func command(tc *trackConn, cmd byte, reply ...[]byte) {
	_, _ = tc.Write(pkt(0, []byte{cmd, 'x'}))
	p := tc.Conn.(*pipe)
	for i, r := range reply {
		p.in = append(p.in, pkt(byte(i+1), r)...)
	}
	drain(tc)
}

func gtidOf(t *testing.T, tc *trackConn, gen, lost uint64) string {
	t.Helper()
	g, state := tc.since(gen, lost)
	if state != gtidKnown {
		return ""
	}
	return g.String()
}

func TestTrackConn(t *testing.T) {
	const caps = capDeprecateEOF | 1<<9 | 1<<15 // DEPRECATE_EOF, PROTOCOL_41, SECURE_CONNECTION
	for _, step := range []int{0, 1, 3, 7} {
		p := &pipe{step: step}
		tc := session(t, p, caps)
		assert.True(t, tc.active(), "step %d: a plain MariaDB connection is watched", step)
		sent := binary.LittleEndian.Uint32(p.out.Bytes()[4:8])
		assert.True(t, sent&capSessionTrack != 0, "the handshake asks for session tracking")

		// An autocommit write: its OK reports the GTID.
		g, l := tc.mark()
		command(tc, comQuery, okPacket(0x00, 0x0002, "0-1-42"))
		assert.Equal(t, "0-1-42", gtidOf(t, tc, g, l), "step %d: the write's GTID", step)

		// A read: a result set whose binary rows start with 0x00 and
		// whose text rows may too; the OK that ends it reports nothing.
		g, l = tc.mark()
		col := lenencStr("def")
		row00 := append([]byte{0x00, 0x00}, lenencStr("0-9-9")...)
		command(tc, comStmtExecute, lenencInt(2), col, col, row00, okPacket(0x00, 0x0002, "")[1:], okPacket(0xfe, 0x0002, ""))
		assert.Equal(t, "", gtidOf(t, tc, g, l), "step %d: rows are not OK packets", step)
		_, state := tc.since(g, l)
		assert.Equal(t, gtidNone, state, "step %d: every reply read, nothing committed", step)
		assert.Equal(t, trkIdle, tc.state)

		// INSERT … RETURNING: the GTID is in the OK that ends the rows.
		g, l = tc.mark()
		command(tc, comQuery, lenencInt(1), col, lenencStr("7"), okPacket(0xfe, 0x0002, "0-1-43"))
		assert.Equal(t, "0-1-43", gtidOf(t, tc, g, l), "step %d: RETURNING's GTID", step)

		// Several results (a CALL): the last GTID reported wins.
		g, l = tc.mark()
		command(tc, comQuery, okPacket(0x00, statusMoreResults, "0-1-44"), lenencInt(1), col, lenencStr("x"),
			okPacket(0xfe, statusMoreResults, ""), okPacket(0x00, 0x0002, "0-1-45"))
		assert.Equal(t, "0-1-45", gtidOf(t, tc, g, l), "step %d: the last of several results", step)

		// An error ends the reply; LOCAL INFILE's OK comes after the file.
		g, l = tc.mark()
		command(tc, comQuery, append([]byte{0xff, 0x7a, 0x04}, "#42S02 no such table"...))
		assert.Equal(t, "", gtidOf(t, tc, g, l))
		command(tc, comQuery, append([]byte{0xfb}, "/tmp/f"...))
		_, _ = tc.Write(pkt(2, []byte("1,2\n")))
		_, _ = tc.Write(pkt(3, nil))
		p.in = append(p.in, pkt(4, okPacket(0x00, 0x0002, "0-1-46"))...)
		drain(tc)
		assert.Equal(t, "0-1-46", gtidOf(t, tc, g, l), "step %d: LOAD DATA LOCAL", step)

		// Unarmed (a read), a reply is not watched at all.
		tc.armed = false
		g, l = tc.mark()
		command(tc, comQuery, okPacket(0x00, 0x0002, "0-1-47"))
		assert.Equal(t, "", gtidOf(t, tc, g, l), "step %d: unarmed", step)
		tc.armed = true

		// A prepare's reply is not watched (its 0x00 is no OK packet).
		g, l = tc.mark()
		command(tc, 0x16, []byte{0x00, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, col)
		command(tc, comQuery, okPacket(0x00, 0x0002, ""))
		assert.Equal(t, "", gtidOf(t, tc, g, l), "step %d: nothing new", step)
	}
}

// With TLS or compression the socket carries no readable packets: the
// tracker switches itself off, and a write's GTID is unknown.
func TestTrackConnOff(t *testing.T) {
	for _, caps := range []uint32{capSSL | 1<<9, capCompress | 1<<9} {
		p := &pipe{}
		tc := session(t, p, caps)
		assert.False(t, tc.active(), "caps %x", caps)
		assert.Equal(t, uint32(0), binary.LittleEndian.Uint32(p.out.Bytes()[4:8])&capSessionTrack)
	}
	// A MySQL server (CLIENT_MYSQL set in its greeting) is not asked.
	p := &pipe{}
	tc := newTrackConn(p)
	gr := greeting()
	gr[len("5.5.5-10.11.6-MariaDB")+2+4+8+1] |= capClientMySQL
	p.in = pkt(0, gr)
	drain(tc)
	_, _ = tc.Write(loginPacket(1 << 9))
	assert.Equal(t, trkOff, tc.state)
}

// A reply too large to read whole is counted lost: the write's GTID is
// then unknown rather than wrong.
func TestTrackConnLost(t *testing.T) {
	p := &pipe{}
	tc := session(t, p, capDeprecateEOF|1<<9)
	g, l := tc.mark()
	big := okPacket(0x00, 0x0002, "0-1-50")
	big = append(big, make([]byte, trackCapture)...)
	command(tc, comQuery, big)
	_, state := tc.since(g, l)
	assert.Equal(t, gtidUnknown, state, "unknown, not guessed")
	g, l = tc.mark()
	command(tc, comQuery, okPacket(0x00, 0x0002, "0-1-51"))
	assert.Equal(t, "0-1-51", gtidOf(t, tc, g, l), "the next reply is read again")
}

// Whatever the server sends, the tracker never panics, and reading it in
// one piece or byte by byte comes to the same.
func FuzzTrackConn(f *testing.F) {
	f.Add([]byte{}, byte(comQuery))
	f.Add(pkt(1, okPacket(0x00, 0x0002, "0-1-1")), byte(comQuery))
	f.Add(append(pkt(1, lenencInt(1)), pkt(2, lenencStr("def"))...), byte(comStmtExecute))
	f.Fuzz(func(t *testing.T, reply []byte, cmd byte) {
		var got [2]string
		for i, step := range []int{0, 1} {
			p := &pipe{step: step}
			tc := session(t, p, capDeprecateEOF|1<<9)
			g, l := tc.mark()
			_, _ = tc.Write(pkt(0, []byte{cmd}))
			p.in = append(p.in, reply...)
			drain(tc)
			got[i] = gtidOf(t, tc, g, l)
		}
		if got[0] != got[1] {
			t.Fatalf("in one piece %q, byte by byte %q", got[0], got[1])
		}
	})
}
