package rwshard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
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
	s, err := parseToken(token, nil)
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
// The token is not authenticated: a client that carries it can edit it,
// and so push its own reads to the primary or into waits (never to a
// staler replica than its own edits allow). Connector.SessionToken signs
// it with Config.SessionKey.
func (s *Session) Token() string { return s.token(nil) }

func (s *Session) token(key []byte) string {
	t, g := s.last()
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	raw := tokenVersion + "|" + strconv.FormatInt(ns, 10) + "|" + g.String()
	if key != nil {
		raw += "|" + base64.RawURLEncoding.EncodeToString(tokenMAC(key, raw))
	}
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// tokenMAC authenticates a token's payload: HMAC-SHA256, 16 bytes.
func tokenMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return m.Sum(nil)[:16]
}

// SessionToken is Session.Token signed with Config.SessionKey (unsigned
// without one): ResumeSession of this Connector, or of any with the same
// key, refuses a token that was edited.
func (c *Connector) SessionToken(s *Session) string { return s.token(c.cfg.SessionKey) }

// ResumeSession is the package's ResumeSession checking the token's
// signature with Config.SessionKey: an unsigned or edited token is an
// error (a *ConfigError). Without a key it accepts unsigned tokens only.
func (c *Connector) ResumeSession(ctx context.Context, token string) (context.Context, error) {
	s, err := parseToken(token, c.cfg.SessionKey)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, sessionKey{}, s), nil
}

// parseToken reads a token; with a key it must carry that key's MAC.
func parseToken(token string, key []byte) (*Session, error) {
	bad := func(why string) error {
		return &ConfigError{Key: "session token", Value: quote(token), Err: errors.New(why)}
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, bad("not base64url")
	}
	parts := strings.SplitN(string(raw), "|", 4)
	if len(parts) < 3 || parts[0] != tokenVersion {
		return nil, bad("not an rwshard session token")
	}
	switch {
	case key != nil && len(parts) != 4:
		return nil, bad("not signed (this connector has a SessionKey)")
	case key != nil:
		mac, err := base64.RawURLEncoding.DecodeString(parts[3])
		payload := strings.Join(parts[:3], "|")
		if err != nil || !hmac.Equal(mac, tokenMAC(key, payload)) {
			return nil, bad("signature does not match: edited, or signed with another key")
		}
	case len(parts) == 4:
		return nil, bad("signed, and this connector has no SessionKey to check it")
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
