package rwshard

import "database/sql/driver"

var _ driver.Tx = (*txn)(nil)

// txn is a BeginTx transaction: the logical connection, whose statements
// all run on its pinned backend connection until Commit or Rollback.
type txn conn

func (t *txn) Commit() error   { return (*conn)(t).endTx(true) }
func (t *txn) Rollback() error { return (*conn)(t).endTx(false) }
