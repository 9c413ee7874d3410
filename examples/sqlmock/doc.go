// Package orders is the data layer of a small order service, written to
// show how a service unit-tests its queries with rwshard and go-sqlmock,
// without a database.
//
// The Store takes an rwshard *sql.DB and knows nothing of nodes: rwshard
// sends Place (an INSERT) and Pay (a transaction) to the primary, Get (a
// plain read) to a replica, and Status to the primary because it asks for
// a fresh read with hint.Primary. The tests build one sqlmock handle per
// node, hand them to rwshard.OpenDB, and set each expectation on the mock
// of the node where the statement must run: a statement routed elsewhere
// reaches a mock that does not expect it and fails the test, and
// ExpectationsWereMet on every mock proves that nothing expected was
// skipped.
//
//	go test ./sqlmock    # in examples/: no database needed
package orders
