package router

// Reason says why a statement went where it went. Reasons are what
// Explain, route logs and metrics show.
type Reason uint8

const (
	ReasonUnknown          Reason = iota // unclassifiable statement: primary
	ReasonWrite                          // DML, DDL, SET, transaction control, …
	ReasonLockingRead                    // SELECT … FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE
	ReasonSessionRead                    // LAST_INSERT_ID(), FOUND_ROWS(), lock functions, …
	ReasonInTransaction                  // inside a transaction: its connection
	ReasonSessionPinned                  // session state was changed: its connection
	ReasonHintPrimary                    // hint.Primary or /* rwshard:primary */
	ReasonHintNode                       // hint.Node or /* rwshard:node=… */
	ReasonReplica                        // plain read, balanced over replicas
	ReasonReadYourWrites                 // read after a write in the session: primary
	ReasonNoHealthyReplica               // no replica qualified: fell back to the primary
	ReasonMaxLag                         // healthy replicas, none within the hint's lag bound: primary
	ReasonStarting                       // replicas not probed yet (the connector just opened): primary
	ReasonStoredFunction                 // a read calling a stored function that may write: primary
	ReasonPrimaryAway                    // a read for the primary while it is away: the most advanced replica
	ReasonTempTable                      // names a temporary table: the connection that has it
	// NumReasons is the number of reasons, for arrays of counters.
	NumReasons
)

var reasonNames = [NumReasons]string{
	ReasonUnknown:          "unknown",
	ReasonWrite:            "write",
	ReasonLockingRead:      "locking-read",
	ReasonSessionRead:      "session-read",
	ReasonInTransaction:    "in-transaction",
	ReasonSessionPinned:    "session-pinned",
	ReasonHintPrimary:      "hint-primary",
	ReasonHintNode:         "hint-node",
	ReasonReplica:          "replica",
	ReasonReadYourWrites:   "read-your-writes",
	ReasonNoHealthyReplica: "no-healthy-replica",
	ReasonMaxLag:           "max-lag",
	ReasonStarting:         "starting",
	ReasonStoredFunction:   "stored-function",
	ReasonPrimaryAway:      "primary-away",
	ReasonTempTable:        "temporary-table",
}

// String returns the reason's name, e.g. "locking-read".
func (r Reason) String() string {
	if r < NumReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons lists every reason, for metrics that want all series up front.
func Reasons() []Reason {
	out := make([]Reason, NumReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}
