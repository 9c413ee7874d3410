package rwshard_test

import (
	"database/sql"
	"fmt"
	"log"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/rwshard/rwshard"
)

// OpenDB routes over existing pools; here two go-sqlmock handles stand in
// for a primary and a replica. The read goes to the replica, the write to
// the primary.
func ExampleOpenDB() {
	primary, primaryMock, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	if err != nil {
		log.Fatal(err)
	}
	defer primary.Close()
	replica, replicaMock, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	if err != nil {
		log.Fatal(err)
	}
	defer replica.Close()

	replicaMock.ExpectQuery("SELECT name FROM users WHERE id = ?").WithArgs(1).
		WillReturnRows(sqlmock.NewRows([]string{"name"}).AddRow("ada"))
	primaryMock.ExpectExec("INSERT INTO users (name) VALUES (?)").WithArgs("grace").
		WillReturnResult(sqlmock.NewResult(2, 1))

	db, err := rwshard.OpenDB(primary, []*sql.DB{replica})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close() // closes rwshard, not the handles given to it

	var name string
	if err := db.QueryRow("SELECT name FROM users WHERE id = ?", 1).Scan(&name); err != nil {
		log.Fatal(err)
	}
	res, err := db.Exec("INSERT INTO users (name) VALUES (?)", "grace")
	if err != nil {
		log.Fatal(err)
	}
	id, _ := res.LastInsertId()

	fmt.Printf("SELECT read %q on the replica: %v\n", name, replicaMock.ExpectationsWereMet() == nil)
	fmt.Printf("INSERT got id %d on the primary: %v\n", id, primaryMock.ExpectationsWereMet() == nil)
	// Output:
	// SELECT read "ada" on the replica: true
	// INSERT got id 2 on the primary: true
}
