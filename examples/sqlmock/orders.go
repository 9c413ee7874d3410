package orders

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/rwshard/rwshard/hint"
)

// The statements; the tests spell them out as sqlmock expectations.
const (
	insertOrder = "INSERT INTO orders (customer, total, status) VALUES (?, ?, 'new')"
	selectOrder = "SELECT id, customer, total, status FROM orders WHERE id = ?"
	selectStat  = "SELECT status FROM orders WHERE id = ?"
	lockOrder   = "SELECT status FROM orders WHERE id = ? FOR UPDATE"
	payOrder    = "UPDATE orders SET status = 'paid' WHERE id = ?"
)

// ErrNotFound is returned for an order id that does not exist.
var ErrNotFound = errors.New("orders: no such order")

// Order is one order; Total is in cents.
type Order struct {
	ID       int64
	Customer string
	Total    int64
	Status   string
}

// Store reads and writes orders through an rwshard *sql.DB.
type Store struct{ db *sql.DB }

// NewStore returns a Store over db (sql.Open("rwshard", dsn) in
// production, rwshard.OpenDB over sqlmock handles in the tests).
func NewStore(db *sql.DB) *Store { return &Store{db: db} }

// Place records a new order and returns its id. An INSERT: the primary.
func (s *Store) Place(ctx context.Context, customer string, total int64) (int64, error) {
	res, err := s.db.ExecContext(ctx, insertOrder, customer, total)
	if err != nil {
		return 0, fmt.Errorf("orders: place: %w", err)
	}
	return res.LastInsertId()
}

// Get returns an order. A plain read: a replica, which may be a moment
// behind the primary.
func (s *Store) Get(ctx context.Context, id int64) (Order, error) {
	var o Order
	err := s.db.QueryRowContext(ctx, selectOrder, id).Scan(&o.ID, &o.Customer, &o.Total, &o.Status)
	if errors.Is(err, sql.ErrNoRows) {
		return Order{}, ErrNotFound
	}
	if err != nil {
		return Order{}, fmt.Errorf("orders: get %d: %w", id, err)
	}
	return o, nil
}

// Status returns an order's status as the primary has it: a payment
// callback must not act on a stale status, so the read asks for the
// primary with hint.Primary.
func (s *Store) Status(ctx context.Context, id int64) (string, error) {
	var status string
	err := s.db.QueryRowContext(hint.Primary(ctx), selectStat, id).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("orders: status %d: %w", id, err)
	}
	return status, nil
}

// Pay marks a new order paid, in a transaction: the primary from BEGIN to
// COMMIT, its locking read included.
func (s *Store) Pay(ctx context.Context, id int64) (err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("orders: pay %d: %w", id, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	var status string
	switch err = tx.QueryRowContext(ctx, lockOrder, id).Scan(&status); {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("orders: pay %d: %w", id, err)
	case status != "new":
		return fmt.Errorf("orders: pay %d: status is %q", id, status)
	}
	if _, err = tx.ExecContext(ctx, payOrder, id); err != nil {
		return fmt.Errorf("orders: pay %d: %w", id, err)
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("orders: pay %d: %w", id, err)
	}
	return nil
}
