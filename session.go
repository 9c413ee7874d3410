package rwshard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rwshard/rwshard/internal/monitor"
)

// Session is a unit of read-your-writes consistency: one HTTP request, one
// user, one job. After a write in a session, its reads go only to replicas
// known to have that write (see Consistency). Statements whose context
// carries no session belong to the connector's own scope (the *sql.DB):
// a read after a write through the same *sql.DB sees the write, with no
// code change. A session narrows that scope, so that one request's writes
// do not hold back another's reads. A Session is safe for concurrent use.
//
// A session keeps its writes per replication cluster. A sharded
// connector's data sources are clusters of their own, each numbering its
// GTIDs independently (usually all in domain 0): a write on one data
// source says nothing of another's replicas, so the session's reads of a
// data source consult that data source's writes only (Config.DataSource
// names the part; an ordinary connector uses the unnamed one).
type Session struct {
	mu    sync.Mutex
	own   sessionPart   // the unnamed cluster: a connector that is no data source
	parts []sessionPart // data sources (Config.DataSource), by name; nil when none
	// shared: own came from an rws1 token, which a sharded connector
	// wrote with the writes of every data source in one part: it stands
	// for every data source that has no part of its own yet.
	shared bool
	// next, set on a connector's own scope when the connector joins its
	// cluster's scope in the process (cluster.join), receives every write
	// recorded here after that: a transaction that began before the join
	// records its commit in the scope it began in.
	next atomic.Pointer[Session]
}

// sessionPart is what a session wrote on one replication cluster.
type sessionPart struct {
	name    string          // Config.DataSource; "" for own
	written time.Time       // when the last write was acknowledged; zero: never
	gtid    monitor.GTIDSet // the union of its writes' GTIDs (causal consistency)
	// unknown: when the newest write whose GTID could not be read was
	// acknowledged (the read failed, or its connection broke); zero:
	// none. Until a position read after it covers it (covered), the GTID
	// does not stand for the part's writes: an older GTID would pass a
	// replica that lacks the newer write.
	unknown time.Time
}

type sessionKey struct{}

// sessionsMade is set before the first context carrying a session is
// made: until then SessionFrom answers nil without walking the context's
// chain, which it otherwise does for every write (as hint.FromContext
// does for every statement).
var sessionsMade atomic.Bool

// withSession is the one place a session is put into a context.
func withSession(ctx context.Context, s *Session) context.Context {
	if !sessionsMade.Load() { // a store only once: the flag is read everywhere
		sessionsMade.Store(true)
	}
	return context.WithValue(ctx, sessionKey{}, s)
}

// WithSession returns a context carrying a new session. Statements run with
// that context (or one derived from it) belong to the session.
func WithSession(ctx context.Context) context.Context {
	return withSession(ctx, &Session{})
}

// SessionFrom returns the session ctx carries, or nil.
func SessionFrom(ctx context.Context) (s *Session) {
	if sessionsMade.Load() {
		s = sessionFrom(ctx)
	}
	return s
}

// sessionFrom is SessionFrom's lookup, kept out of line so that
// SessionFrom inlines: without a session made, a write pays one load.
//
//go:noinline
func sessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

// wroteOn records a write on cluster name acknowledged at t, with its
// GTID if known. A scope that many goroutines write in (the connector's)
// keeps the union of their GTIDs: a read waits for every write
// acknowledged before it.
func (s *Session) wroteOn(name string, t time.Time, gtid monitor.GTIDSet) {
	s.mu.Lock()
	p := s.part(name, true)
	if t.After(p.written) {
		p.written = t
	}
	if gtid.IsZero() && t.After(p.unknown) {
		p.unknown = t
	}
	p.gtid = p.gtid.Union(gtid)
	s.mu.Unlock()
	if n := s.next.Load(); n != nil {
		n.wroteOn(name, t, gtid)
	}
}

// absorb adds what from recorded, part by part, to s: the later write
// time, the union of the GTIDs, the later unknown.
func (s *Session) absorb(from *Session) {
	from.mu.Lock()
	own := from.own
	parts := slices.Clone(from.parts)
	from.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range append(parts, own) {
		q := s.part(p.name, true)
		if p.written.After(q.written) {
			q.written = p.written
		}
		if p.unknown.After(q.unknown) {
			q.unknown = p.unknown
		}
		q.gtid = q.gtid.Union(p.gtid)
	}
}

// gtidOf adds a primary's whole position, read from asOf on, to cluster
// name's part: it covers every write acknowledged before asOf, those
// whose GTID is unknown included.
func (s *Session) gtidOf(name string, gtid monitor.GTIDSet, asOf time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.part(name, true)
	p.gtid = p.gtid.Union(gtid)
	if !asOf.IsZero() && !p.unknown.After(asOf) {
		p.unknown = time.Time{}
	}
}

// rule returns what a causal read of cluster name must respect: the last
// write time, and the GTID unless a write's GTID is unknown (then the
// time rule alone applies, see readFilter).
func (s *Session) rule(name string) (since time.Time, gtid monitor.GTIDSet, unknown bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.part(name, false)
	if p == nil {
		return time.Time{}, monitor.GTIDSet{}, false
	}
	if !p.unknown.IsZero() {
		return p.written, monitor.GTIDSet{}, true
	}
	return p.written, p.gtid, false
}

// part returns the part of cluster name (s.mu held), added if add and
// missing; nil if missing. A data source without a part of its own reads
// own when own is shared (an rws1 token).
func (s *Session) part(name string, add bool) *sessionPart {
	if name == "" {
		return &s.own
	}
	i, found := slices.BinarySearchFunc(s.parts, name, func(p sessionPart, name string) int { return strings.Compare(p.name, name) })
	switch {
	case found:
		return &s.parts[i]
	case add:
		s.parts = slices.Insert(s.parts, i, sessionPart{name: name})
		if s.shared { // what the token said of every data source holds for this one
			s.parts[i].written, s.parts[i].gtid = s.own.written, s.own.gtid
		}
		return &s.parts[i]
	case s.shared:
		return &s.own
	}
	return nil
}

// LastWrite is when the session's last write was acknowledged (zero if
// none).
func (s *Session) LastWrite() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.own.written
	for _, p := range s.parts {
		if p.written.After(t) {
			t = p.written
		}
	}
	return t
}

// Token versions: rws1 holds one part (a session that wrote on one
// cluster, the unnamed one: every session before sessions had parts);
// rws2 holds every part of a session that wrote on data sources.
const (
	tokenVersion      = "rws1" // rws1|<ns>|<gtid>[|<mac>]
	tokenVersionParts = "rws2" // rws2|<n>|<part>|…|<part>[|<mac>], part = <name>/<ns>/<gtid>
)

// sharedName names a shared own part (Session.shared) in an rws2 token:
// no escaped data source name is "*" (partName escapes it).
const sharedName = "*"

// token exports the session as an opaque string: its last write time and
// GTID on every cluster it wrote on (in a sharded connector, each data
// source), signed with key when there is one (Connector.SessionToken).
func (s *Session) token(key []byte) string {
	s.mu.Lock()
	var raw string
	if len(s.parts) == 0 {
		raw = tokenVersion + "|" + s.own.fields()
	} else {
		var b strings.Builder
		n := len(s.parts)
		own := !s.own.written.IsZero() || !s.own.gtid.IsZero() || s.shared
		if own {
			n++
		}
		b.WriteString(tokenVersionParts + "|" + strconv.Itoa(n))
		if own {
			name := ""
			if s.shared {
				name = sharedName
			}
			b.WriteString("|" + name + "/" + strings.ReplaceAll(s.own.fields(), "|", "/"))
		}
		for _, p := range s.parts {
			b.WriteString("|" + partName(p.name) + "/" + strings.ReplaceAll(p.fields(), "|", "/"))
		}
		raw = b.String()
	}
	s.mu.Unlock()
	if key != nil {
		raw += "|" + base64.RawURLEncoding.EncodeToString(tokenMAC(key, raw))
	}
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// fields is a part's write time and GTID as an rws1 token has them:
// <ns>|<gtid>.
func (p *sessionPart) fields() string {
	var ns int64
	if !p.written.IsZero() {
		ns = p.written.UnixNano()
	}
	if !p.unknown.IsZero() {
		// A write's GTID is unknown: the token's reader follows the time
		// rule, as this session would.
		return strconv.FormatInt(ns, 10) + "|"
	}
	return strconv.FormatInt(ns, 10) + "|" + p.gtid.String()
}

// partName escapes a data source name for a token: nothing but letters,
// digits and -_.~ stays as it is, so the name has no | or /, and is never
// sharedName.
func partName(name string) string { return url.QueryEscape(name) }

// tokenMAC authenticates a token's payload: HMAC-SHA256, 16 bytes.
func tokenMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)[:16]
}

// SessionToken exports session s as a token to pass along (a cookie, a
// header) to another instance of the service, which resumes it with
// ResumeSession: its reads then see s's writes. The token carries the last
// write's wall-clock time and GTID on every cluster s wrote on, signed
// with Config.SessionKey, so that a client carrying it cannot edit it and
// push its reads to the primary or into waits. Without a key it is an
// error, unless Config.UnsignedTokens says tokens never leave trusted
// code. Instances need synchronized clocks (NTP), as pt-heartbeat does.
func (c *Connector) SessionToken(s *Session) (string, error) {
	if len(c.cfg.SessionKey) == 0 && !c.cfg.UnsignedTokens {
		return "", noSessionKey()
	}
	return s.token(c.cfg.SessionKey), nil
}

// ResumeSession returns a context carrying the session a token of
// SessionToken exported, on any connector with the same SessionKey. A
// token that is unsigned, edited or signed with another key is an error
// (a *ConfigError); without a key, so is every token, unless
// Config.UnsignedTokens is set.
func (c *Connector) ResumeSession(ctx context.Context, token string) (context.Context, error) {
	if len(c.cfg.SessionKey) == 0 && !c.cfg.UnsignedTokens {
		return ctx, noSessionKey()
	}
	s, err := parseToken(token, c.cfg.SessionKey)
	if err != nil {
		return ctx, err
	}
	return withSession(ctx, s), nil
}

// noSessionKey refuses tokens on a connector that cannot sign or check
// them.
func noSessionKey() error {
	return configErr("SessionKey", "", "session tokens need Config.SessionKey to sign and check them (or Config.UnsignedTokens)")
}

// parseToken reads a token; with a key it must carry that key's MAC.
// Its errors name the token (as given) and what is wrong with it, never
// the MAC it should have carried.
func parseToken(token string, key []byte) (*Session, error) {
	bad := func(why string) error {
		return &ConfigError{Key: "session token", Value: quote(token), Err: errors.New(why)}
	}
	rawb, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, bad("not base64url")
	}
	raw := string(rawb)
	fields := strings.Split(raw, "|")
	// n: the fields of the payload, the MAC's field after them.
	var n int
	switch fields[0] {
	case tokenVersion:
		n = 3
	case tokenVersionParts:
		parts, err := strconv.Atoi(fields[min(1, len(fields)-1)])
		if err != nil || parts < 1 || parts > len(fields) {
			return nil, bad("bad part count")
		}
		n = 2 + parts
	default:
		return nil, bad("not an rwshard session token")
	}
	switch {
	case len(fields) < n || len(fields) > n+1:
		return nil, bad("not an rwshard session token")
	case key != nil && len(fields) == n:
		return nil, bad("not signed (this connector has a SessionKey)")
	case key != nil:
		mac, err := base64.RawURLEncoding.DecodeString(fields[n])
		payload := strings.Join(fields[:n], "|")
		if err != nil || !hmac.Equal(mac, tokenMAC(key, payload)) {
			return nil, bad("signature does not match: edited, or signed with another key")
		}
	case len(fields) > n:
		return nil, bad("signed, and this connector has no SessionKey to check it")
	}
	s := &Session{}
	if fields[0] == tokenVersion {
		// One part for every cluster: the unnamed one, and, for a sharded
		// connector, every data source (as that token meant).
		s.shared = true
		if err := s.own.parse(fields[1], fields[2]); err != nil {
			return nil, &ConfigError{Key: "session token", Value: quote(token), Err: err}
		}
		return s, nil
	}
	ownSeen := false
	for _, f := range fields[2:n] {
		name, rest, ok1 := strings.Cut(f, "/")
		ns, gtid, ok2 := strings.Cut(rest, "/")
		if !ok1 || !ok2 {
			return nil, bad("bad part")
		}
		var p *sessionPart
		switch name {
		case "", sharedName:
			if ownSeen {
				return nil, bad("two unnamed parts")
			}
			ownSeen, s.shared, p = true, name == sharedName, &s.own
		default:
			if name, err = url.QueryUnescape(name); err != nil || name == "" {
				return nil, bad("bad part name")
			}
			if len(s.parts) > 0 && s.parts[len(s.parts)-1].name >= name {
				return nil, bad("parts out of order")
			}
			s.parts = append(s.parts, sessionPart{name: name})
			p = &s.parts[len(s.parts)-1]
		}
		if err := p.parse(ns, gtid); err != nil {
			return nil, &ConfigError{Key: "session token", Value: quote(token), Err: err}
		}
	}
	if len(s.parts) == 0 {
		return nil, bad("no data source part") // rws1's form
	}
	return s, nil
}

// parse reads a part's write time (Unix ns, 0 for none) and GTID.
func (p *sessionPart) parse(ns, gtid string) error {
	t, err := strconv.ParseInt(ns, 10, 64)
	if err != nil || t < 0 {
		return errors.New("bad write time")
	}
	if p.gtid, err = monitor.ParseGTID(gtid); err != nil {
		return err
	}
	if t > 0 {
		p.written = time.Unix(0, t)
	}
	return nil
}
