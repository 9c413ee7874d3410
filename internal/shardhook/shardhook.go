// Package shardhook is where the sharding module
// (github.com/rwshard/rwshard/shard) plugs into the driver: a blank import
// of it registers its Opener, and the driver opens a sharded connector
// through it when a Config names sharding rules. The driver module does
// not import the sharding module (it would link vitess into every
// program that only splits reads and writes); this package is the seam.
//
// Types cross the seam as any because this package cannot import the
// root package: the sharding module type-asserts the *rwshard.Config it
// is given, and the driver type-asserts the extra methods it needs on
// what the Opener returns.
package shardhook

import (
	"context"
	"database/sql/driver"
	"io"
	"sync/atomic"

	"github.com/rwshard/rwshard/internal/route"
)

// Connector is what an Opener returns: a driver.Connector the driver
// wraps in its own, closed by the driver's Close.
type Connector interface {
	driver.Connector
	io.Closer
}

// Opener opens a sharded connector for a normalized *rwshard.Config.
type Opener func(cfg any) (Connector, error)

var opener atomic.Pointer[Opener]

// Register installs the sharding module's Opener. Called from that
// module's init; a second registration replaces the first (there is one
// sharding module).
func Register(o Opener) { opener.Store(&o) }

// Lookup returns the registered Opener, or nil when the sharding module
// is not linked into the program.
func Lookup() Opener {
	if p := opener.Load(); p != nil {
		return *p
	}
	return nil
}

// Units is what the sharding module asks of the driver's logical
// connection of one data source, beyond a driver.Conn: run one unit of a
// statement the module has classified (cls, the logical statement's
// class), with no classification of its own, as a prepared statement
// when prepared (on the backend connection the driver's plan chooses,
// in that connection's statement cache: never prepared first on another
// connection). Its plan, retries, session and transaction state are the
// driver's, as for any statement.
type Units interface {
	QueryUnit(ctx context.Context, q string, args []driver.NamedValue, cls route.Class, prepared bool) (driver.Rows, error)
	ExecUnit(ctx context.Context, q string, args []driver.NamedValue, cls route.Class, prepared bool) (driver.Result, error)
}
