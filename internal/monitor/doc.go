// Package monitor watches the nodes of a primary/replica cluster for rwshard:
// which node is up, which is the writable primary, how far each replica
// lags, and what has happened worth telling an operator (the events of
// package health).
//
// Only rwshard calls it, so it is internal: a program sees what it learns
// through the Connector (Health, Stats, Explain) and the events. It does
// no I/O of its own. The root package supplies a ProbeFunc that
// reads one node over one connection; this package owns the schedule, the
// state built from the readings, the events and the retry budget, and is
// tested without a database.
//
// # Probes
//
// A Monitor probes every node on Options.Interval (default 1s), each probe
// bounded by Options.Timeout (default 500ms) through its context. A probe
// returns a Reading: @@read_only; whether the node has replica status
// (SHOW REPLICA STATUS, or SHOW SLAVE STATUS on older servers, returned a
// row), and if so whether its IO and SQL threads run and its
// Seconds_Behind_Master; its GTID position (@@gtid_binlog_pos on a MariaDB
// primary, @@gtid_slave_pos on a MariaDB replica, @@gtid_executed on
// MySQL); and the newest pt-heartbeat row, when a heartbeat table is
// configured.
//
// Start probes every node once before it returns, so that roles and lag
// are known from the first statement, then runs one loop per node. Kick asks
// for a probe of every node now, honoured at most once per tenth of an
// interval. Close stops every goroutine and waits for them; Start and Close
// may each be called more than once.
//
// # Up and down
//
// A probe that fails takes its node down (NodeDown, with the error and its
// MySQL error number); the next one that answers brings it back (NodeUp).
// Real traffic counts too: Failure records a connection-class error of a
// statement, and FailAfter of them in a row (default 3) take the node down
// and kick the probes; Node.Success resets the count. Only a probe brings a
// node back, so a Monitor that is not running (before Start, after Close)
// ignores Failure.
//
// # Lag and the data horizon
//
// Every answered probe of the primary records a sample: the primary's GTID
// position and the time the probe was sent. The last 120 samples are kept.
// A replica's position is compared with them, oldest first: the replica has
// everything the primary had binlogged at the newest sample its position
// contains, so its data horizon (Node.DataAsOf) is that sample's time; and
// it lags (Node.Lag) by the age of the oldest sample it does not contain.
// This works on an idle primary and on a delayed replica, where
// Seconds_Behind_Master reads 0.
//
// Seconds_Behind_Master and the heartbeat (the time since the newest
// pt-heartbeat row; Options.Beat can write that row on the primary every
// interval) can only raise the estimate, never lower it. Without GTIDs they
// are the estimate, and the data horizon is the probe time less the lag and
// a second (Seconds_Behind_Master counts whole seconds).
//
// GTIDSet compares positions in either flavor. For MariaDB only the highest
// sequence number per replication domain matters: within a domain
// transactions apply in order whatever server id wrote them, so positions
// compare across a switchover. For MySQL a set contains another when it
// covers every interval of every source UUID; gaps count.
//
// A replica whose IO or SQL thread has stopped is fenced, whatever its
// other figures say: its lag reads as the largest duration, never 0, and its
// data horizon is unknown. An IO thread that is reconnecting (the primary
// is away) is not a fence by itself: the replica has what the primary had
// when last reached, and the samples say how old that is. A replica whose lag exceeds Options.MaxLag is
// fenced too (Fenced, with the lag in the event's Detail) until it is back
// within the limit (Unfenced). A fenced or down node takes no reads; the
// router decides what to do when no replica qualifies.
//
// # Roles
//
// The Monitor follows the topology the database's tooling sets; it never
// changes it. A node is writable when it has read_only=OFF and no replica
// status. Exactly one writable node is the primary: if it is not the node
// taken as primary so far, the Monitor switches to it (SwitchoverFollowed)
// and forgets the old primary's samples. No writable node means no usable
// primary: writes wait for one. Two or more writable nodes are a split
// brain (SplitBrain): rwshard refuses to guess, and Primary reports no
// usable primary until it is resolved. ReadOnly records that the primary
// rejected a write as read-only (MySQL errors 1290, 1836): it is not
// writable from that moment, before any probe, and the probes are kicked to
// find the new primary.
//
// When writes lose their primary (it is down, read-only, or in a split
// brain) the Monitor raises PrimaryLost, and PrimaryFound when they have
// one again. Changed returns a channel closed at the next change of
// primary, primary health or split-brain state, for the writes that wait
// for a primary.
//
// # Events
//
// Events go to Options.Observer, a health.Observer, called from one
// goroutine in order. Repeats of the same kind, node and error
// code within Options.Window (default 10s) are folded: the first is
// delivered at once with Count 1; the others are counted, and at the end of
// the window one summary is delivered with Count set to the number of
// repeats and a Detail saying so. A slow observer delays later events,
// never a statement: when the queue (256 events) is full, events are
// dropped and counted. Emit raises an event from outside the Monitor (a
// read that fell back to the primary, a read retried), folded the same
// way.
//
// # Retry budget
//
// A Budget bounds retries to a share of recent requests, so that an outage
// cannot multiply the load on the nodes that are left: every request
// deposits Ratio of a token, every retry withdraws one, the balance is
// capped at Max (10 + 100×Ratio from NewBudget), and at least MinPerSecond
// retries per second are allowed, so a quiet service can still retry.
// Counts reports the retries made and refused.
//
// # Galera
//
// With Options.Galera the nodes are one Galera cluster: every probe's
// Reading carries the node's wsrep state (Reading.Galera). A node out of
// the Primary component or not ready is down; one desynced, a donor
// (unless GaleraOptions.Donor), joining or rejecting queries is fenced and
// no writer candidate; one whose receive queue is above MaxRecvQueue is
// fenced for reads only. The node taken as primary is the writer: the
// serving node first in GaleraOptions.Priority, else the one with the
// lowest wsrep_local_index, which every node's view numbers alike, so that
// monitors in different processes choose the same node; NoFailback keeps
// it while it serves. Every serving node being writable is no split brain.
package monitor
