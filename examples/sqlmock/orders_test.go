package orders_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/rwshard/rwshard"
	orders "github.com/rwshard/rwshard/examples/sqlmock"
)

// cluster is an rwshard *sql.DB over two sqlmock handles: expectations set
// on primary must run on the primary, those on replica on the replica.
type cluster struct {
	db               *sql.DB
	primary, replica sqlmock.Sqlmock
}

// newCluster builds the mocks and the rwshard *sql.DB over them. When the
// test ends it checks that each mock saw everything it expected.
func newCluster(t *testing.T) *cluster {
	t.Helper()
	c, closeAll, err := openCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.primary.ExpectationsWereMet(); err != nil {
			t.Errorf("primary: %v", err)
		}
		if err := c.replica.ExpectationsWereMet(); err != nil {
			t.Errorf("replica: %v", err)
		}
		closeAll()
	})
	return c
}

func openCluster() (*cluster, func(), error) {
	// QueryMatcherEqual: an expectation names the exact SQL text.
	primaryDB, primary, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	if err != nil {
		return nil, nil, err
	}
	replicaDB, replica, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	if err != nil {
		primaryDB.Close()
		return nil, nil, err
	}
	db, err := rwshard.OpenDB(primaryDB, []*sql.DB{replicaDB})
	if err != nil {
		primaryDB.Close()
		replicaDB.Close()
		return nil, nil, err
	}
	closeAll := func() {
		db.Close() // rwshard leaves the handles it was given open
		primaryDB.Close()
		replicaDB.Close()
	}
	return &cluster{db: db, primary: primary, replica: replica}, closeAll, nil
}

func TestPlaceRunsOnPrimary(t *testing.T) {
	c := newCluster(t)
	c.primary.ExpectExec("INSERT INTO orders (customer, total, status) VALUES (?, ?, 'new')").
		WithArgs("ada", 1050).
		WillReturnResult(sqlmock.NewResult(7, 1))

	id, err := orders.NewStore(c.db).Place(context.Background(), "ada", 1050)
	if err != nil {
		t.Fatal(err)
	}
	if id != 7 {
		t.Errorf("Place: id %d, want 7", id)
	}
}

func TestGetRunsOnReplica(t *testing.T) {
	c := newCluster(t)
	c.replica.ExpectQuery("SELECT id, customer, total, status FROM orders WHERE id = ?").
		WithArgs(7).
		WillReturnRows(sqlmock.NewRows([]string{"id", "customer", "total", "status"}).AddRow(7, "ada", 1050, "new"))

	o, err := orders.NewStore(c.db).Get(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if want := (orders.Order{ID: 7, Customer: "ada", Total: 1050, Status: "new"}); o != want {
		t.Errorf("Get: %+v, want %+v", o, want)
	}
}

func TestGetNotFound(t *testing.T) {
	c := newCluster(t)
	c.replica.ExpectQuery("SELECT id, customer, total, status FROM orders WHERE id = ?").
		WithArgs(8).
		WillReturnRows(sqlmock.NewRows([]string{"id", "customer", "total", "status"}))

	if _, err := orders.NewStore(c.db).Get(context.Background(), 8); !errors.Is(err, orders.ErrNotFound) {
		t.Errorf("Get: %v, want ErrNotFound", err)
	}
}

// Status is a read, but it asks for the primary (hint.Primary): the replica
// mock expects nothing, so a Status served by the replica fails the test.
func TestStatusRunsOnPrimary(t *testing.T) {
	c := newCluster(t)
	c.primary.ExpectQuery("SELECT status FROM orders WHERE id = ?").
		WithArgs(7).
		WillReturnRows(sqlmock.NewRows([]string{"status"}).AddRow("paid"))

	status, err := orders.NewStore(c.db).Status(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if status != "paid" {
		t.Errorf("Status: %q, want paid", status)
	}
}

// Every statement of the transaction runs on the primary, in order.
func TestPayRunsOnPrimary(t *testing.T) {
	c := newCluster(t)
	c.primary.ExpectBegin()
	c.primary.ExpectQuery("SELECT status FROM orders WHERE id = ? FOR UPDATE").
		WithArgs(7).
		WillReturnRows(sqlmock.NewRows([]string{"status"}).AddRow("new"))
	c.primary.ExpectExec("UPDATE orders SET status = 'paid' WHERE id = ?").
		WithArgs(7).
		WillReturnResult(sqlmock.NewResult(0, 1))
	c.primary.ExpectCommit()

	if err := orders.NewStore(c.db).Pay(context.Background(), 7); err != nil {
		t.Fatal(err)
	}
}

func TestPayRollsBackAPaidOrder(t *testing.T) {
	c := newCluster(t)
	c.primary.ExpectBegin()
	c.primary.ExpectQuery("SELECT status FROM orders WHERE id = ? FOR UPDATE").
		WithArgs(7).
		WillReturnRows(sqlmock.NewRows([]string{"status"}).AddRow("paid"))
	c.primary.ExpectRollback()

	if err := orders.NewStore(c.db).Pay(context.Background(), 7); err == nil {
		t.Fatal("Pay of a paid order: no error")
	}
}

// A Store on rwshard over sqlmock handles: each expectation is set on the
// mock of the node where the statement must run.
func ExampleStore() {
	c, closeAll, err := openCluster()
	if err != nil {
		log.Fatal(err)
	}
	defer closeAll()
	c.primary.ExpectExec("INSERT INTO orders (customer, total, status) VALUES (?, ?, 'new')").
		WithArgs("grace", 2000).
		WillReturnResult(sqlmock.NewResult(8, 1))
	c.replica.ExpectQuery("SELECT id, customer, total, status FROM orders WHERE id = ?").
		WithArgs(8).
		WillReturnRows(sqlmock.NewRows([]string{"id", "customer", "total", "status"}).AddRow(8, "grace", 2000, "new"))
	c.primary.ExpectQuery("SELECT status FROM orders WHERE id = ?").
		WithArgs(8).
		WillReturnRows(sqlmock.NewRows([]string{"status"}).AddRow("new"))

	ctx := context.Background()
	s := orders.NewStore(c.db)
	id, err := s.Place(ctx, "grace", 2000)
	if err != nil {
		log.Fatal(err)
	}
	o, err := s.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	status, err := s.Status(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("Place: order %d\n", id)
	fmt.Printf("Get: %s, %d cents, %s\n", o.Customer, o.Total, o.Status)
	fmt.Printf("Status: %s\n", status)
	fmt.Println("primary saw what it expected:", c.primary.ExpectationsWereMet() == nil)
	fmt.Println("replica saw what it expected:", c.replica.ExpectationsWereMet() == nil)
	// Output:
	// Place: order 8
	// Get: grace, 2000 cents, new
	// Status: new
	// primary saw what it expected: true
	// replica saw what it expected: true
}
