package hint

import (
	"fmt"
	"strings"
	"time"
)

// Comment hint prefixes. A comment whose text starts with one of them (case
// does not matter) is a hint; any other comment is left alone.
const (
	prefix   = "rwshard:"
	ssPrefix = "SHARDINGSPHERE_HINT:"
)

// Error reports a comment hint that cannot be honoured. It names the
// comment and the item at fault; a malformed hint is never ignored.
type Error struct {
	Comment string // the comment text, without delimiters
	Item    string // the item at fault
	Reason  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("hint %q: %s: %q", e.Comment, e.Reason, e.Item)
}

// Parse reads a hint from the text of one SQL comment (without the /* */ or
// -- delimiters). It returns ok=false for a comment that is not a hint.
//
// rwshard's own form is a list of items separated by commas or spaces:
//
//	/* rwshard:primary */
//	/* rwshard:replica, max_lag=500ms */
//	/* rwshard:node=replica2 */
//	/* rwshard:pool=reporting */
//
// The ShardingSphere form /* SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true */ is
// understood as rwshard:primary; its other keys are rejected as unsupported.
func Parse(comment string) (h Hint, ok bool, err error) {
	text := strings.TrimSpace(comment)
	switch {
	case hasPrefixFold(text, prefix):
		h, err = parseItems(comment, text[len(prefix):], rwshardItem)
	case hasPrefixFold(text, ssPrefix):
		h, err = parseItems(comment, text[len(ssPrefix):], shardingSphereItem)
	default:
		return Hint{}, false, nil
	}
	return h, true, err
}

func hasPrefixFold(s, p string) bool {
	return len(s) >= len(p) && strings.EqualFold(s[:len(p)], p)
}

func parseItems(comment, list string, item func(h *Hint, key, val string, hasVal bool) string) (Hint, error) {
	var h Hint
	n := 0
	for f := range strings.FieldsFuncSeq(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
		n++
		key, val, hasVal := strings.Cut(f, "=")
		if reason := item(&h, key, val, hasVal); reason != "" {
			return Hint{}, &Error{Comment: strings.TrimSpace(comment), Item: f, Reason: reason}
		}
	}
	if n == 0 {
		return Hint{}, &Error{Comment: strings.TrimSpace(comment), Item: "", Reason: "empty hint"}
	}
	return h, nil
}

// setRoute records a route, refusing two different routes in one comment.
func setRoute(h *Hint, r Route, node string) string {
	if h.Route != Default && (h.Route != r || h.Node != node) {
		return "conflicting route"
	}
	h.Route, h.Node = r, node
	return ""
}

func rwshardItem(h *Hint, key, val string, hasVal bool) string {
	switch strings.ToLower(key) {
	case "primary", "master", "write":
		if hasVal {
			return "takes no value"
		}
		return setRoute(h, PrimaryOnly, "")
	case "replica", "slave", "read":
		if hasVal {
			return "takes no value"
		}
		return setRoute(h, ReplicaOK, "")
	case "node":
		if val == "" {
			return "needs a node name"
		}
		return setRoute(h, NodeOnly, val)
	case "pool":
		if val == "" {
			return "needs a pool name"
		}
		h.Pool = val
		return ""
	case "max_lag", "maxlag":
		d, err := time.ParseDuration(val)
		if err != nil || d <= 0 {
			return "needs a positive duration such as 500ms"
		}
		h.MaxLag = d
		return ""
	default:
		return "unknown item"
	}
}

func shardingSphereItem(h *Hint, key, val string, hasVal bool) string {
	switch strings.ToUpper(key) {
	case "WRITE_ROUTE_ONLY":
		switch strings.ToLower(val) {
		case "true":
			return setRoute(h, PrimaryOnly, "")
		case "false":
			return ""
		}
		return "needs true or false"
	case "DATA_SOURCE_NAME", "SHARDING_DATABASE_VALUE", "SHARDING_TABLE_VALUE",
		"SKIP_SQL_REWRITE", "DISABLE_AUDIT_NAMES", "SHADOW":
		return "ShardingSphere hint key not supported by rwshard"
	default:
		return "unknown ShardingSphere hint key"
	}
}
