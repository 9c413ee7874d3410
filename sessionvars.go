package rwshard

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rwshard/rwshard/internal/route"
)

// Session variables without pinning (route.ReplayableSet): a logical
// connection that runs SET time_zone = '+00:00' (or sql_mode, SET NAMES,
// …) records the setting, and every backend connection it then uses,
// replicas included, is brought to that state before its next statement:
// one SET, once per backend connection and change, not per statement.
// Backend connections remember what was applied to them; the value each
// variable had before rwshard first changed it is kept in a user variable
// of the connection (@__rwshard_<name>), so that a connection going back
// to a logical connection without the setting is restored to what the
// DSN and the server gave it.
//
// User variables are session commands too (after MaxScale's session
// command history): SET @v = literal is recorded as such, an assignment
// from an expression runs on the primary connection and the value it
// produced is recorded (captureVars). A backend connection going back to
// a logical connection without the variable has it set to NULL, the
// value of a user variable nobody set.

// sessionVars is a set of variable settings: a logical connection's
// wanted ones, or those applied to a backend connection.
type sessionVars struct {
	key  string             // canonical form; "" when empty (first: what every statement compares)
	list []route.Assignment // by name, one per name
}

// with returns v with as applied, later assignments winning.
func (v sessionVars) with(as []route.Assignment) sessionVars {
	list := slices.Clone(v.list)
	for _, a := range as {
		i, found := slices.BinarySearchFunc(list, a.Name, func(x route.Assignment, name string) int { return strings.Compare(x.Name, name) })
		if found {
			list[i].Value = a.Value
		} else {
			list = slices.Insert(list, i, a)
		}
	}
	var b strings.Builder
	for _, a := range list {
		b.WriteString(a.Name)
		b.WriteByte('=')
		b.WriteString(a.Value)
		b.WriteByte(';')
	}
	return sessionVars{list: list, key: b.String()}
}

func (v sessionVars) value(name string) (string, bool) {
	i, found := slices.BinarySearchFunc(v.list, name, func(x route.Assignment, name string) int { return strings.Compare(x.Name, name) })
	if !found {
		return "", false
	}
	return v.list[i].Value, true
}

// applyVars brings the backend connection to the settings want: one
// SET of what differs, saving each variable's value before its first
// change and restoring it for a variable want does not set. Nothing when
// it already has them (the common case: one string comparison, inlined).
// A failed SET leaves its state unknown: it is discarded when released.
func (b *backend) applyVars(ctx context.Context, want *sessionVars) error {
	if b.bc != nil && !sameKey(b.bc.vars.key, want.key) {
		return b.bc.setVars(ctx, want)
	}
	return nil
}

// sameKey reports whether two sessionVars keys are equal, without a call
// when both are empty (no variable set: nearly always), where the
// compiled string comparison calls runtime.memequal for equal lengths.
func sameKey(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || a == b)
}

// setVars is applyVars' SET, for a connection whose settings differ.
func (bc *backendConn) setVars(ctx context.Context, want *sessionVars) error {
	var b strings.Builder
	b.WriteString("SET ")
	n := 0
	add := func(s ...string) {
		if n > 0 {
			b.WriteString(", ")
		}
		n++
		for _, p := range s {
			b.WriteString(p)
		}
	}
	for _, a := range bc.vars.list {
		if _, ok := want.value(a.Name); !ok {
			if a.Name[0] == '@' {
				add(a.Name, " = NULL") // a user variable nobody set is NULL
			} else {
				add(a.Name, " = @__rwshard_", a.Name)
			}
		}
	}
	saved := bc.saved
	for _, a := range want.list {
		if v, ok := bc.vars.value(a.Name); ok && v == a.Value {
			continue
		}
		if !saved[a.Name] && a.Name[0] != '@' {
			add("@__rwshard_", a.Name, " = @@session.", a.Name)
			if saved == nil {
				saved = map[string]bool{}
			}
			saved[a.Name] = true
		}
		add(a.Name, " = ", a.Value)
	}
	if _, err := exec(ctx, bc, b.String(), nil, prep{}); err != nil {
		bc.stale = true
		return err
	}
	bc.vars, bc.saved = *want, saved
	return nil
}

// noRows is the empty result of a SET run as a query.
type noRows struct{}

func (noRows) Columns() []string         { return nil }
func (noRows) Close() error              { return nil }
func (noRows) Next([]driver.Value) error { return io.EOF }

// captureVars reads the values of the variables an expression assigned
// on the held connection (kept.capture: user variables, and session
// variables as @@name) and records them as literals the logical
// connection applies to its other backend connections: a number as it
// reads, a string as its bytes in hex with its character set and
// collation, so that comparisons see the same value, NULL as NULL.
func (c *conn) captureVars(ctx context.Context) error {
	names := c.kept.capture
	var b strings.Builder
	b.WriteString("SELECT ")
	sysvars := false
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		if strings.HasPrefix(n, "@@") {
			n, sysvars = "@@session."+n[2:], true
		}
		fmt.Fprintf(&b, "%s, HEX(%s), CHARSET(%s), COLLATION(%s)", n, n, n, n)
	}
	rows, st, err := query(ctx, c.sess.dc, b.String(), nil, prep{})
	if err != nil {
		return err
	}
	defer func() {
		rows.Close()
		if st != nil {
			st.Close()
		}
	}()
	dest := make([]driver.Value, 4*len(names))
	if err := rows.Next(dest); err != nil {
		return err
	}
	typed, _ := rows.(driver.RowsColumnTypeDatabaseTypeName)
	as := make([]route.Assignment, 0, len(names))
	for i, n := range names {
		v, hex, cs, coll := dest[4*i], text(dest[4*i+1]), text(dest[4*i+2]), text(dest[4*i+3])
		lit := "NULL"
		switch {
		case v == nil:
		case typed != nil && numericType(typed.ColumnTypeDatabaseTypeName(4*i)):
			lit = text(v)
		case cs == "binary":
			lit = "X'" + hex + "'"
		default:
			lit = "_" + cs + " X'" + hex + "' COLLATE " + coll
		}
		as = append(as, route.Assignment{Name: strings.TrimPrefix(n, "@@"), Value: lit})
	}
	c.vars = c.vars.with(as)
	if bc := c.sess.bc; bc != nil {
		bc.vars = bc.vars.with(as) // they are on it already
		// A session variable's value before the assignment was not saved
		// (setVars): the connection cannot be restored, and is discarded
		// once let go.
		bc.stale = bc.stale || sysvars
	}
	c.kept.capture = nil
	c.more = c.kept.locks > 0 || len(c.kept.temps) > 0
	return nil
}

// text is a value read as text.
func text(v driver.Value) string {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// numericType reports a column type whose text is a numeric literal.
func numericType(t string) bool {
	switch strings.TrimPrefix(t, "UNSIGNED ") {
	case "DECIMAL", "BIGINT", "INT", "DOUBLE", "FLOAT", "TINYINT", "SMALLINT", "MEDIUMINT":
		return true
	}
	return false
}
