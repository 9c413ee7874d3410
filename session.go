package rwshard

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rwshard/rwshard/health"
)

// Session is a unit of read-your-writes consistency: one HTTP request, one
// user, one job. After a write in a session, its reads go only to replicas
// known to have that write (see Consistency). Statements whose context
// carries no session belong to the connector's own scope (the *sql.DB):
// a read after a write through the same *sql.DB sees the write, with no
// code change. A session narrows that scope, so that one request's writes
// do not hold back another's reads. A Session is safe for concurrent use.
type Session struct {
	mu      sync.Mutex
	written time.Time      // when the last write was acknowledged; zero: never
	gtid    health.GTIDSet // its GTID (causal consistency); zero: unknown
}

type sessionKey struct{}

// WithSession returns a context carrying a new session. Statements run with
// that context (or one derived from it) belong to the session.
func WithSession(ctx context.Context) context.Context {
	return context.WithValue(ctx, sessionKey{}, &Session{})
}

// SessionFrom returns the session ctx carries, or nil.
func SessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

// ResumeSession returns a context carrying the session a token exported
// (Session.Token), for example by another instance of a stateless service
// that served the same user's previous request. Times in tokens are wall
// clock: instances need synchronized clocks (NTP), as pt-heartbeat does.
func ResumeSession(ctx context.Context, token string) (context.Context, error) {
	s, err := parseToken(token)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, sessionKey{}, s), nil
}

// wrote records a write acknowledged at t, with its GTID if known. A
// scope that many goroutines write in (the connector's) keeps the union of
// their GTIDs: a read waits for every write acknowledged before it.
func (s *Session) wrote(t time.Time, gtid health.GTIDSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.After(s.written) {
		s.written = t
	}
	s.gtid = s.gtid.Union(gtid)
}

// last returns the session's last write time and GTID.
func (s *Session) last() (time.Time, health.GTIDSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written, s.gtid
}

// LastWrite is when the session's last write was acknowledged (zero if
// none).
func (s *Session) LastWrite() time.Time {
	t, _ := s.last()
	return t
}

const tokenVersion = "rws1"

// Token exports the session as an opaque string: its last write time and
// GTID. Pass it along (a cookie, a header) and ResumeSession it elsewhere.
func (s *Session) Token() string {
	t, g := s.last()
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	raw := tokenVersion + "|" + strconv.FormatInt(ns, 10) + "|" + g.String()
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func parseToken(token string) (*Session, error) {
	bad := func(why string) error {
		return &ConfigError{Key: "session token", Value: quote(token), Err: errors.New(why)}
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, bad("not base64url")
	}
	parts := strings.SplitN(string(raw), "|", 3)
	if len(parts) != 3 || parts[0] != tokenVersion {
		return nil, bad("not an rwshard session token")
	}
	ns, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || ns < 0 {
		return nil, bad("bad write time")
	}
	g, err := health.ParseGTID(parts[2])
	if err != nil {
		return nil, &ConfigError{Key: "session token", Value: quote(token), Err: err}
	}
	s := &Session{gtid: g}
	if ns > 0 {
		s.written = time.Unix(0, ns)
	}
	return s, nil
}
