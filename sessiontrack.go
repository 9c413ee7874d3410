package rwshard

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rwshard/rwshard/internal/monitor"
)

// A write's GTID, learned in the write's own round trip. MariaDB reports
// a change of a tracked session variable in the OK packet that ends a
// statement (session_track_system_variables, capability
// CLIENT_SESSION_TRACK), so with last_gtid tracked the OK of every commit
// carries that commit's GTID, as MaxScale reads it. go-sql-driver neither
// asks for the capability nor reads the tracker (its PR #1633), so
// trackConn, the socket rwshard dials for it, does both: it sets the
// capability bit in the client's handshake response and watches the
// server's replies for OK packets. Reading the GTID with a statement
// after the write instead would cost a round trip and reset ROW_COUNT()
// and FOUND_ROWS() on the caller's connection.
//
// Only plain connections are watched: with TLS or compression the bytes
// on the socket are not packets, and the tracker switches itself off
// (a write's GTID is then unknown, and read-your-writes falls back to the
// primary's position).

// Protocol constants the tracker needs (the MySQL/MariaDB client/server
// protocol).
const (
	capClientMySQL     = 1 << 0 // CLIENT_LONG_PASSWORD; MariaDB servers clear it
	capCompress        = 1 << 5
	capSSL             = 1 << 11
	capSessionTrack    = 1 << 23
	capDeprecateEOF    = 1 << 24
	extCapCacheMeta    = 1 << 4 // MariaDB: MARIADB_CLIENT_CACHE_METADATA
	statusMoreResults  = 0x0008
	statusStateChanged = 0x4000
	comQuery           = 0x03
	comStmtExecute     = 0x17
	maxPayload         = 0xffffff
	trackCapture       = 1024 // the largest packet the tracker reads whole
	trackLastGTID      = "last_gtid"
	sessionTrackSysVar = 0 // SESSION_TRACK_SYSTEM_VARIABLES
)

// Where the tracker is in the server's stream.
const (
	trkGreeting   uint8 = iota // the server's first packet
	trkLogin                   // the handshake: nothing watched until the client's next command
	trkIdle                    // between commands, or in a reply not watched
	trkHeader                  // the first packet of a reply
	trkColumns                 // column definitions
	trkColumnsEOF              // the EOF after them (no CLIENT_DEPRECATE_EOF)
	trkRows                    // rows, until the packet that ends them
	trkOff                     // not a plain MariaDB connection: nothing watched
)

// trackConn is a backend connection's socket, watched for the GTIDs the
// server reports. Only the goroutine that holds the connection reads and
// writes it, as go-sql-driver does; gen is read by that goroutine too.
type trackConn struct {
	net.Conn
	// used is monotonic() at the connection's last read or write: the
	// server counts wait_timeout from about then (connPool.put).
	used   time.Duration
	state  uint8
	caps   uint32 // capabilities the client asked for (with session tracking)
	server uint32 // capabilities the server offered
	mariadb,
	ext bool // the client asked for MariaDB's metadata caching

	// The packet being read: its header's bytes (hdrN of them), what is
	// left of its payload, and, for a packet the tracker reads whole,
	// its bytes so far.
	hdr     [4]byte
	hdrN    int
	left    int
	cont    bool // the packet continues one of maxPayload bytes
	capture bool
	buf     []byte
	columns uint64 // column definitions left to skip

	// gen counts the GTIDs reported; gtid is the last one's text. lost
	// counts replies the tracker could not read (a packet too large to
	// capture): a write's GTID is unknown after one.
	gen, lost uint64
	gtid      [64]byte
	gtidN     int
	// on: the connection asked the server to track last_gtid (see
	// nodeConnector.Connect); set once, before the connection is used.
	on atomic.Bool
	// armed: the replies to the commands sent from now on are watched;
	// the executor arms the tracker for the statements that may commit
	// (watch), so that the replies of reads, most of the traffic, pass
	// through untouched.
	armed bool
}

// watch arms or disarms the tracker (see armed).
func (t *trackConn) watch(on bool) {
	if t != nil {
		t.armed = on
	}
}

// newTrackConn watches c.
func newTrackConn(c net.Conn) *trackConn { return &trackConn{Conn: c} }

// SyscallConn is the socket's, so that go-sql-driver's liveness check
// (a non-blocking read of the descriptor) works through the wrapper.
func (t *trackConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := t.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

// active reports whether the connection's OK packets carry last_gtid.
func (t *trackConn) active() bool { return t != nil && t.on.Load() && t.state != trkOff }

// mark is where a statement starts: what it reports is what the tracker
// counts after it.
func (t *trackConn) mark() (gen, lost uint64) { return t.gen, t.lost }

// What a statement's replies said of its commit (see since).
const (
	gtidUnknown = iota // not watched, or a reply could not be read
	gtidNone           // every reply read: nothing was committed to the binlog
	gtidKnown          // the GTID of the last commit
)

// since says what the server reported after mark: the GTID of the last
// commit (gtidKnown), that the statement committed nothing to the binlog
// (gtidNone: a temporary table's write, an UPDATE that matched no row, a
// read-only transaction's COMMIT), or nothing certain (gtidUnknown).
func (t *trackConn) since(gen, lost uint64) (monitor.GTIDSet, int) {
	switch {
	case t == nil || !t.active() || t.lost != lost:
		return monitor.GTIDSet{}, gtidUnknown
	case t.gen == gen:
		return monitor.GTIDSet{}, gtidNone
	}
	g, err := monitor.ParseGTID(string(t.gtid[:t.gtidN]))
	if err != nil || g.IsZero() {
		return monitor.GTIDSet{}, gtidUnknown
	}
	return g, gtidKnown
}

// Write watches the client's packets: the handshake response, where it
// asks for session tracking, and the start of each command. go-sql-driver
// writes one packet per call (writePacket); a packet with sequence
// number 0 starts a command.
func (t *trackConn) Write(p []byte) (int, error) {
	t.used = monotonic()
	switch {
	case t.state == trkOff || len(p) < 5:
	case t.state == trkLogin && p[3] == 1 && t.caps == 0:
		t.login(p)
	case p[3] == 0 && t.state != trkGreeting && (t.armed || t.state != trkIdle):
		t.command(p[4])
	}
	return t.Conn.Write(p)
}

// login reads the client's handshake response and asks for session
// tracking in it, when the server offers it and the connection is plain.
func (t *trackConn) login(p []byte) {
	if len(p) < 4+32 {
		t.state = trkOff
		return
	}
	caps := binary.LittleEndian.Uint32(p[4:8])
	if caps&(capSSL|capCompress) != 0 || !t.mariadb || t.server&capSessionTrack == 0 {
		t.state = trkOff
		return
	}
	caps |= capSessionTrack
	binary.LittleEndian.PutUint32(p[4:8], caps)
	t.caps = caps
	t.ext = caps&capClientMySQL == 0 && binary.LittleEndian.Uint32(p[4+28:4+32])&extCapCacheMeta != 0
}

// command starts watching the reply to a command: a query's or an
// execution's; the others' replies carry no commit.
func (t *trackConn) command(cmd byte) {
	t.hdrN, t.left, t.cont, t.capture, t.buf = 0, 0, false, false, t.buf[:0]
	if t.armed && (cmd == comQuery || cmd == comStmtExecute) {
		t.state = trkHeader
	} else {
		t.state = trkIdle
	}
}

// Read passes the server's bytes on and follows its packets.
func (t *trackConn) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	if n > 0 {
		t.used = monotonic()
	}
	if n > 0 && t.state != trkIdle && t.state != trkOff && t.state != trkLogin {
		t.feed(p[:n])
	}
	return n, err
}

// feed follows the packets in b, which continues the stream where the
// last call left it.
func (t *trackConn) feed(b []byte) {
	for len(b) > 0 && t.state != trkIdle && t.state != trkOff && t.state != trkLogin {
		if t.left == 0 && t.hdrN < 4 {
			k := copy(t.hdr[t.hdrN:], b)
			t.hdrN += k
			b = b[k:]
			if t.hdrN < 4 {
				return
			}
			t.left = int(t.hdr[0]) | int(t.hdr[1])<<8 | int(t.hdr[2])<<16
			t.begin()
			if t.left == 0 {
				t.end()
			}
			continue
		}
		k := min(t.left, len(b))
		if t.capture {
			t.take(b[:k])
		}
		t.left -= k
		b = b[k:]
		if t.left == 0 {
			t.end()
		}
	}
}

// begin decides, at a packet's header, whether its payload is read
// whole: the greeting, a reply's first packet, and a packet that may end
// the rows (read whole once its first byte says so).
func (t *trackConn) begin() {
	t.buf = t.buf[:0]
	first := !t.cont
	t.cont = t.left == maxPayload
	switch {
	case !first:
		t.capture = false // the rest of a large packet
	case t.left == maxPayload && (t.state == trkHeader || t.state == trkGreeting):
		t.capture = false
		t.lost++ // a reply's first packet of 16 MiB: not an OK packet worth reading
		t.state = trkIdle
	case t.state == trkGreeting || t.state == trkHeader:
		t.capture = t.left <= trackCapture
		if !t.capture {
			t.lost++
			t.state = trkIdle
		}
	case t.state == trkRows:
		t.capture = t.left < maxPayload // its first byte decides (take)
	default:
		t.capture = false
	}
}

// take keeps a captured packet's bytes. In the rows, only a packet whose
// first byte is 0xFE or 0xFF can end them: the others stop being captured
// at that byte.
func (t *trackConn) take(b []byte) {
	if t.state == trkRows && len(t.buf) == 0 && b[0] != 0xfe && b[0] != 0xff {
		t.capture = false
		return
	}
	if len(t.buf)+len(b) > trackCapture {
		t.capture = false
		t.lost++
		t.state = trkIdle
		return
	}
	t.buf = append(t.buf, b...)
}

// end acts on a packet that has been read whole.
func (t *trackConn) end() {
	t.hdrN = 0
	if t.cont {
		return // more of it follows
	}
	captured := t.capture
	t.capture = false
	switch t.state {
	case trkGreeting:
		t.greeting(t.buf)
	case trkHeader:
		t.header(t.buf)
	case trkColumns:
		if t.columns--; t.columns == 0 {
			t.afterColumns()
		}
	case trkColumnsEOF:
		t.state = trkRows
	case trkRows:
		if captured && len(t.buf) > 0 {
			t.rowsEnd(t.buf)
		}
	}
}

// greeting reads the server's handshake: its capabilities, and whether
// it is MariaDB (whose servers clear CLIENT_MYSQL).
func (t *trackConn) greeting(p []byte) {
	t.state = trkOff
	if len(p) < 2 || p[0] != 10 {
		return
	}
	i := 1
	for i < len(p) && p[i] != 0 {
		i++ // the server version
	}
	i += 1 + 4 + 8 + 1 // its NUL, connection id, scramble, filler
	if i+2 > len(p) {
		return
	}
	caps := uint32(binary.LittleEndian.Uint16(p[i:]))
	i += 2 + 1 + 2 // charset, status
	if i+2 <= len(p) {
		caps |= uint32(binary.LittleEndian.Uint16(p[i:])) << 16
	}
	t.server = caps
	t.mariadb = caps&capClientMySQL == 0
	t.state = trkLogin
}

// header reads a reply's first packet: an OK, an error, a LOCAL INFILE
// request (an OK follows the file), or the column count of a result set.
func (t *trackConn) header(p []byte) {
	if len(p) == 0 {
		t.state = trkIdle
		return
	}
	switch p[0] {
	case 0x00:
		t.ok(p)
	case 0xff:
		t.state = trkIdle
	case 0xfb:
		// the client sends the file; the server's OK is the next header
	default:
		n, k := lenenc(p)
		if k == 0 {
			t.state = trkIdle
			t.lost++
			return
		}
		meta := true
		if t.ext {
			meta = k < len(p) && p[k] == 1
		}
		t.columns = n
		if !meta || n == 0 {
			t.afterColumns()
			return
		}
		t.state = trkColumns
	}
}

// afterColumns moves past the column definitions.
func (t *trackConn) afterColumns() {
	if t.caps&capDeprecateEOF == 0 {
		t.state = trkColumnsEOF
	} else {
		t.state = trkRows
	}
}

// rowsEnd reads the packet that ends a result set's rows: an error, an
// EOF packet (its status at bytes 3-4), or with CLIENT_DEPRECATE_EOF an
// OK packet with a 0xFE header, which carries session state.
func (t *trackConn) rowsEnd(p []byte) {
	if p[0] == 0xff {
		t.state = trkIdle
		return
	}
	if t.caps&capDeprecateEOF == 0 {
		t.state = trkIdle
		if len(p) >= 5 && binary.LittleEndian.Uint16(p[3:])&statusMoreResults != 0 {
			t.state = trkHeader
		}
		return
	}
	t.ok(p)
}

// ok reads an OK packet: its status, and the session state changes it
// reports; another result follows it when the status says so.
func (t *trackConn) ok(p []byte) {
	t.state = trkIdle
	i := 1
	for range 2 { // affected rows, last insert id
		_, k := lenenc(p[i:])
		if k == 0 {
			t.lost++
			return
		}
		i += k
	}
	if i+4 > len(p) {
		t.lost++
		return
	}
	status := binary.LittleEndian.Uint16(p[i:])
	i += 4 // status, warnings
	if status&statusStateChanged != 0 {
		if !t.states(p[i:]) {
			t.lost++
		}
	}
	if status&statusMoreResults != 0 {
		t.state = trkHeader
	}
}

// states reads an OK packet's info and session state changes, keeping a
// last_gtid reported; false when they do not parse.
func (t *trackConn) states(p []byte) bool {
	info, k := lenenc(p) // the human-readable info
	if k == 0 || uint64(len(p)-k) < info {
		return false
	}
	p = p[k+int(info):]
	total, k := lenenc(p)
	if k == 0 || uint64(len(p)-k) < total {
		return false
	}
	p = p[k : k+int(total)]
	for len(p) > 0 {
		typ := p[0]
		size, k := lenenc(p[1:])
		if k == 0 || uint64(len(p)-1-k) < size {
			return false
		}
		data := p[1+k : 1+k+int(size)]
		p = p[1+k+int(size):]
		if typ != sessionTrackSysVar {
			continue
		}
		name, rest, ok := lenencString(data)
		if !ok || string(name) != trackLastGTID {
			continue
		}
		value, _, ok := lenencString(rest)
		if !ok || len(value) > len(t.gtid) {
			return false
		}
		t.gtidN = copy(t.gtid[:], value)
		t.gen++
	}
	return true
}

// lenenc reads a length-encoded integer; k is the bytes it took, 0 when
// p is too short or starts with no integer.
func lenenc(p []byte) (v uint64, k int) {
	if len(p) == 0 {
		return 0, 0
	}
	switch p[0] {
	case 0xfc:
		if len(p) < 3 {
			return 0, 0
		}
		return uint64(binary.LittleEndian.Uint16(p[1:])), 3
	case 0xfd:
		if len(p) < 4 {
			return 0, 0
		}
		return uint64(p[1]) | uint64(p[2])<<8 | uint64(p[3])<<16, 4
	case 0xfe:
		if len(p) < 9 {
			return 0, 0
		}
		return binary.LittleEndian.Uint64(p[1:]), 9
	case 0xfb, 0xff:
		return 0, 0
	}
	return uint64(p[0]), 1
}

// lenencString reads a length-encoded string and returns what follows.
func lenencString(p []byte) (s, rest []byte, ok bool) {
	n, k := lenenc(p)
	if k == 0 || uint64(len(p)-k) < n {
		return nil, nil, false
	}
	return p[k : k+int(n)], p[k+int(n):], true
}
