// Package health names what rwshard's health checks tell a program: an
// Event of one EventKind (a node down or back up, a replica fenced for its
// lag or unfenced, the primary lost or found, a switchover followed, a
// split brain, a read that fell back to the primary or was retried, a
// transaction replayed or timed out, …), delivered to the Observer set in
// rwshard.Config.Observer. The kinds' names
// are also the keys of rwshard.Stats.Events and the labels of the metrics
// module's event counter.
//
// The probes, lag estimates and roles behind the events are rwshard's own
// (docs/failover.md describes them); a program reads their state through
// the Connector (Health, Stats, Explain), and this package holds only the
// events' vocabulary.
//
// # Delivery
//
// An Observer is called from one goroutine, in order. Repeats of the same
// kind, node and error code within ten seconds are folded: the first is
// delivered at once with Count 1; the others are counted, and at the end of
// the window one summary is delivered with Count set to the number of
// repeats and a Detail saying so. A slow observer delays later events,
// never a statement: when the queue is full, events are dropped.
package health
