// Package router names why rwshard sent a statement where it went: a
// Reason (write, locking-read, in-transaction, hint-primary,
// read-your-writes, no-healthy-replica, replica, …). Reasons are what
// rwshard.Plan.Reason (Explain), the keys of rwshard.Stats.Routes, the
// route log and the metrics module's route counter show.
//
// How a statement is classified and routed is described in
// docs/routing.md; the classifier and the routing decision are rwshard's
// own, and a program asks them through Explain, which returns the plan a
// statement would get without running it.
package router
