package rwshard

import (
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkerConn is a backend connection with its own argument converter:
// strings become their length, "drop" is removed, "bad" is refused, and
// everything else is left to the default converter.
type checkerConn struct{ driver.Conn }

var errBadArg = errors.New("bad argument")

func (checkerConn) CheckNamedValue(nv *driver.NamedValue) error {
	s, ok := nv.Value.(string)
	switch {
	case !ok:
		return driver.ErrSkip
	case s == "drop":
		nv.Value = "scribbled" // must not survive the removal
		return driver.ErrRemoveArgument
	case s == "bad":
		nv.Value = nil // as go-sql-driver leaves it on error
		return errBadArg
	}
	nv.Value = int64(len(s))
	return nil
}

func namedArgs(vals ...any) []driver.NamedValue {
	out := make([]driver.NamedValue, len(vals))
	for i, v := range vals {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func TestConvertArgs(t *testing.T) {
	t.Run("in place", func(t *testing.T) {
		args := namedArgs("abc", int32(7))
		out, err := convertArgs(checkerConn{}, args)
		require.NoError(t, err)
		want := namedArgs(int64(3), int64(7))
		require.Equal(t, want, out)
		require.Equal(t, want, args)
		// Converting again (a retry on another connection) changes nothing.
		out, err = convertArgs(checkerConn{}, out)
		require.NoError(t, err)
		require.Equal(t, want, out)
	})
	t.Run("removed", func(t *testing.T) {
		args := namedArgs("ab", "drop", "abcd")
		out, err := convertArgs(checkerConn{}, args)
		require.NoError(t, err)
		require.Equal(t, []driver.NamedValue{{Ordinal: 1, Value: int64(2)}, {Ordinal: 3, Value: int64(4)}}, out)
		require.Equal(t, "drop", args[1].Value, "a removed argument is left as it was")
	})
	t.Run("refused", func(t *testing.T) {
		args := namedArgs("ab", "bad")
		_, err := convertArgs(checkerConn{}, args)
		require.ErrorIs(t, err, errBadArg)
		require.Equal(t, "bad", args[1].Value, "a refused argument is left as it was")
	})
	t.Run("default converter", func(t *testing.T) {
		args := namedArgs(int8(5), struct{}{})
		_, err := convertArgs(nil, args)
		require.Error(t, err)
		require.Equal(t, int64(5), args[0].Value)
		require.Equal(t, struct{}{}, args[1].Value, "a refused argument is left as it was")
	})
	t.Run("no allocation", func(t *testing.T) {
		args := namedArgs(int64(1), "x")
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := convertArgs(checkerConn{}, args); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs)
	})
}
