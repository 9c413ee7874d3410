// Package hint carries explicit routing wishes for one statement: in the
// context (Primary, Replica, Node, MaxLag) or in a SQL comment
// (/* rwshard:primary */, ShardingSphere's
// /* SHARDINGSPHERE_HINT: WRITE_ROUTE_ONLY=true */).
//
// Without a hint the router decides alone. Hints never send a write to a
// replica: Replica only permits a replica for reads, and a write pinned to a
// replica by Node fails instead of running there. The package is pure: no
// I/O, no global state; hints ride in the context under an unexported key.
package hint
