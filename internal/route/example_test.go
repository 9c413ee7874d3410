package route_test

import (
	"fmt"

	"github.com/rwshard/rwshard/internal/route"
)

func ExampleClassify() {
	for _, sql := range []string{
		"SELECT id, name FROM users WHERE id = ?",
		"SELECT * FROM orders WHERE id = 7 FOR UPDATE",
		"SELECT LAST_INSERT_ID()",
		"INSERT INTO orders (total) VALUES (?) RETURNING id",
		"SET autocommit = 0",
		"START TRANSACTION READ ONLY",
		"/* rwshard:replica, max_lag=500ms */ SELECT COUNT(*) FROM orders",
		"SELECT 1; DELETE FROM sessions",
	} {
		c, err := route.Classify(sql)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%-13s pin=%-5t txbegin=%-5t autocommit-off=%-5t hint=%s/%s  %s\n",
			c.Kind, c.Effect.Has(route.Pin), c.Effect.Has(route.TxBegin),
			c.Effect.Has(route.AutocommitOff), c.Hint.Route, c.Hint.MaxLag, sql)
	}
	// Output:
	// read          pin=false txbegin=false autocommit-off=false hint=default/0s  SELECT id, name FROM users WHERE id = ?
	// locking-read  pin=false txbegin=false autocommit-off=false hint=default/0s  SELECT * FROM orders WHERE id = 7 FOR UPDATE
	// session-read  pin=false txbegin=false autocommit-off=false hint=default/0s  SELECT LAST_INSERT_ID()
	// write         pin=false txbegin=false autocommit-off=false hint=default/0s  INSERT INTO orders (total) VALUES (?) RETURNING id
	// write         pin=true  txbegin=false autocommit-off=true  hint=default/0s  SET autocommit = 0
	// write         pin=false txbegin=true  autocommit-off=false hint=default/0s  START TRANSACTION READ ONLY
	// read          pin=false txbegin=false autocommit-off=false hint=replica/500ms  /* rwshard:replica, max_lag=500ms */ SELECT COUNT(*) FROM orders
	// write         pin=false txbegin=false autocommit-off=false hint=default/0s  SELECT 1; DELETE FROM sessions
}

func ExampleClassifier() {
	c := route.NewClassifier(0)
	for range 3 {
		class, _ := c.Classify("SELECT * FROM users WHERE id = ?") // lexed once, then cached
		fmt.Println(class.Kind, class.Statements)
	}
	fmt.Println(c.Len())
	// Output:
	// read 1
	// read 1
	// read 1
	// 1
}
