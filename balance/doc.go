// Package balance picks the node that serves a read, among the candidates
// the router considers healthy and consistent enough.
//
// It is a pure core: no I/O, no goroutines, no dependency beyond the
// standard library. The router (package rwshard) measures the nodes, decides
// which of them may serve a given read, and asks a Policy to choose.
//
// # Candidates
//
// For each read the router builds a []Candidate, one per read candidate, in
// the configuration order (the replicas, and the primary when it takes
// reads). A Candidate is a snapshot: its Name, whether it is Usable for this
// read (false when the node is down, fenced for replication lag, or excluded
// by the consistency rules), its InFlight statement count, and its Latency,
// an EWMA of recent statement durations (0 when not known yet). Keep one
// EWMA per node, Observe each statement's duration, and copy Value into the
// candidate.
//
// # Policies
//
// A Policy returns the index of a usable candidate, or -1 when it picks
// none; the router then applies its fallback rule (read from the primary,
// or fail) and counts it. The built-in policies, by the name ByName and the
// DSN key rwshard.balance take:
//
//	round_robin      RoundRobin     usable candidates in turn, exactly even
//	random           Random         uniform among the usable candidates
//	weighted         Weighted       smooth weighted round robin by node name
//	least_in_flight  LeastInFlight  fewest statements in flight, ties rotated
//	latency          Latency        power of two choices on latency × (in-flight+1)
//
// All of them are safe for concurrent use, never return an unusable index,
// and do not allocate in Pick.
//
// # Binding
//
// A policy that needs to know the node names before use implements Binder.
// The driver calls Bind once at configuration time with the names of all
// read candidates, in the order it will pass them to Pick, and treats an
// error as a configuration error. Weighted uses it to reject a weight whose
// key names no candidate, and a candidate without a weight, rather than
// silently sending reads elsewhere.
//
// # Writing a policy
//
// Any type with a Pick method is a Policy, and PolicyFunc adapts a plain
// function. A custom policy must:
//
//   - return the index of a candidate with Usable set, or -1 (always -1
//     when none is usable);
//   - be safe for concurrent use: Pick runs on every read, from every
//     goroutine using the *sql.DB; keep state in atomics or under a mutex;
//   - neither modify nor retain cands: the slice is reused after Pick returns;
//   - be quick and, ideally, not allocate: it is on the path of every read.
//
// Implement Binder as well if the policy must check node names up front.
// For example, a policy that keeps reads on the replica in the caller's
// zone when it can, and otherwise takes the first usable node:
//
//	local := balance.PolicyFunc(func(cands []balance.Candidate) int {
//		first := -1
//		for i, c := range cands {
//			if !c.Usable {
//				continue
//			}
//			if c.Name == "replica-eu1" {
//				return i
//			}
//			if first < 0 {
//				first = i
//			}
//		}
//		return first
//	})
package balance
