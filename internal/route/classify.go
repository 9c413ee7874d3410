package route

import (
	"slices"
	"strings"
)

// Classify classifies a SQL text, which may hold several statements
// separated by ';'. It is pure and does not cache; Classifier caches it.
//
// The answer is Read only when every statement is provably a plain,
// non-locking read without a session-bound function. Anything the scanner
// cannot account for is Unknown, which routes to the primary like Write.
//
// A malformed comment hint (see hint.Parse) makes Classify return the
// hint's error; the returned Class is still the classification of the
// text, so a caller may report it, but it must not run the statement.
//
// The rules, statement by statement:
//
//   - Read: SELECT, (SELECT …), UNION/INTERSECT/EXCEPT of those, WITH …
//     SELECT, VALUES, TABLE t, SHOW, DESCRIBE/DESC/EXPLAIN of a table or of
//     a read, MariaDB ANALYZE SELECT, HELP.
//   - LockingRead: a read with FOR UPDATE, FOR SHARE or LOCK IN SHARE MODE
//     anywhere in it.
//   - Write: a read with INTO, with ':=' (also Pin), with a bare INSERT,
//     UPDATE, DELETE or REPLACE keyword (INSERT(…) and REPLACE(…) are string
//     functions), with SETVAL, or a WITH whose main statement is not a
//     read; every DML, DDL and administrative statement.
//   - SessionRead: a read that calls LAST_INSERT_ID, FOUND_ROWS, ROW_COUNT,
//     CONNECTION_ID, NEXTVAL, LASTVAL, CURRVAL, NEXT/PREVIOUS VALUE FOR,
//     GET_LOCK (also Lock), RELEASE_LOCK, RELEASE_ALL_LOCKS (also Unlock), IS_USED_LOCK,
//     IS_FREE_LOCK, uses SQL_CALC_FOUND_ROWS, or reads a connection-bound
//     variable (see connectionBound); SHOW WARNINGS, SHOW ERRORS, SHOW
//     COUNT(*) …, SHOW PROFILE(S), SHOW STATUS without GLOBAL, SHOW SESSION
//     …, SHOW LOCAL …, EXPLAIN FOR CONNECTION, MariaDB SHOW EXPLAIN/ANALYZE
//     FOR; and SHOW of the server itself (see serverShows): MASTER, BINLOG,
//     REPLICA/SLAVE STATUS, [FULL] PROCESSLIST, GLOBAL …, VARIABLES,
//     ENGINE(S), PLUGINS, GRANTS, … SHOW of schema objects (TABLES,
//     COLUMNS, CREATE …, TABLE STATUS, INDEX) stays a Read.
//   - Unknown: anything else, and any statement the scanner finds
//     malformed (an unterminated string or comment).
//
// Effects: SET (Pin, and AutocommitOff/On for the session's autocommit),
// USE, LOCK, PREPARE, EXECUTE, CALL, HANDLER, GET DIAGNOSTICS, FLUSH,
// BACKUP, SELECT … INTO @var and ':=' pin; GET_LOCK is Lock, RELEASE_LOCK
// and RELEASE_ALL_LOCKS Unlock, CREATE/DROP TEMPORARY TABLE TempTable;
// BEGIN [WORK], START
// TRANSACTION, XA START/BEGIN begin a transaction; COMMIT and ROLLBACK
// without AND CHAIN or TO, XA COMMIT/ROLLBACK end it. MariaDB's SET
// STATEMENT … FOR s is classified as s.
//
// Several statements: the Kind is Read when all are; otherwise it is the
// Kind of the first statement that is not. Effects are the union, except
// that after a statement whose extent is uncertain (a stored-program
// definition or compound statement, whose body may hold ';', or an Unknown
// statement) the effects that release the session (TxEnd, AutocommitOn)
// are dropped: they may belong to a body that does not run now.
func Classify(sql string) (Class, error) {
	var r pass
	r.lex.reset(sql, reading{}, true)
	r.run()
	c := Class{Kind: r.kind, Effect: r.eff, Hint: r.lex.hint, Statements: r.n, Functions: r.funcs}
	err := r.lex.hintErr
	if l := &r.lex; l.sawBackslashQuote || l.sawBackslashDQuote || l.nvkeys > 0 || l.vkeysOverflow || l.sawMaria || l.sawDollar {
		interpretations(sql, &r.lex, &c)
	}
	return c, err
}

// holdEffects are the effects that keep the session on the primary; they
// are safe to report when unsure. The others release it.
const holdEffects = Pin | TxBegin | AutocommitOff

// held is e when unsure of it: the effects that keep the session, with
// state that lives on one server connection (a lock, a temporary table)
// pinning it.
func held(e Effect) Effect {
	if e&(Lock|TempTable) != 0 {
		e |= Pin
	}
	return e & holdEffects
}

// interpretations re-reads the text under the other sql_modes, servers
// and server versions that would cut it differently (see lex.go) and makes
// c safe for all of them: a Read becomes Unknown if any other reading runs
// something that is not a plain read, and the effects that hold the
// session are added. In each reading only the statements before the first
// malformed one count: the server stops there.
//
// The readings are: each quoting mode the text needs (default, and
// NO_BACKSLASH_ESCAPES and ANSI_QUOTES when a backslash precedes a quote),
// times each subset of the distinct versioned-comment versions that
// execute (at most 2^maxVersionKeys), times each server the text needs:
// MariaDB; MySQL when it has a /*M! comment; MySQL 9 when it has $tag$.
func interpretations(sql string, first *lexer, c *Class) {
	var modes [3]quoteMode
	nm := 1 // modes[0] is quoteDefault
	if first.sawBackslashQuote || first.sawBackslashDQuote {
		modes[nm] = quoteNoBackslash
		nm++
	}
	if first.sawBackslashDQuote {
		modes[nm] = quoteANSI
		nm++
	}
	var servers [3]reading
	ns := 1 // servers[0] is MariaDB
	if first.sawMaria {
		servers[ns] = reading{mysql: true}
		ns++
	}
	if first.sawDollar {
		servers[ns] = reading{mysql: true, dollar: true}
		ns++
	}
	unsure := first.vkeysOverflow
	var p pass
	for _, server := range servers[:ns] {
		for _, q := range modes[:nm] {
			for mask := 0; mask < 1<<first.nvkeys; mask++ {
				rd := reading{quotes: q, skipMask: uint8(mask), mysql: server.mysql, dollar: server.dollar}
				if rd == (reading{}) {
					continue // the first reading
				}
				if c.Kind != Read && c.Effect&holdEffects == holdEffects {
					return // no other reading can change the answer
				}
				p = pass{}
				p.lex.reset(sql, rd, false)
				p.lex.vkeys, p.lex.nvkeys = first.vkeys, first.nvkeys
				p.run()
				// A reading that meets what the enumeration did not plan
				// for (a new version key, a /*M! comment or $tag$ without
				// a server that reads them, a backslash-quote that needs a
				// mode not enumerated) is not covered.
				l := &p.lex
				if l.vkeyNovel || l.sawMaria && !first.sawMaria || l.sawDollar && !first.sawDollar ||
					(l.sawBackslashQuote || l.sawBackslashDQuote) && nm < 2 ||
					l.sawBackslashDQuote && nm < 3 {
					unsure = true
				}
				if p.okN > 0 && (p.okKind != Read || p.okEff != 0) {
					unsure = true
					c.Effect |= held(p.okEff)
				}
			}
		}
	}
	if unsure && c.Kind == Read {
		c.Kind = Unknown
	}
}

// pass classifies a whole text under one reading.
type pass struct {
	lex lexer
	st  stmt

	// Result over all statements.
	kind    Kind
	eff     Effect
	n       int
	allRead bool
	funcs   []string // stored functions called (see functions.go)
	// uncertain: a statement whose extent is doubtful was seen; effects
	// that release the session are dropped from then on.
	uncertain bool

	// Result over the statements before the first malformed one: what a
	// server stopping at the error would have run.
	failed bool
	okKind Kind
	okEff  Effect
	okN    int
}

func (r *pass) run() {
	r.allRead = true
	r.st.reset()
	src := r.lex.src
	for {
		t := r.lex.next()
		if r.lex.takeBad() {
			r.st.bad = true
		}
		switch {
		case t.kind == tkEOF:
			r.endStatement()
			if !r.failed {
				r.okKind, r.okEff, r.okN = r.kind, r.eff, r.n
			}
			if r.n == 0 {
				r.kind = Unknown
			}
			return
		case t.kind == tkSemi && r.st.depth == 0:
			r.endStatement()
			r.lex.endStatement()
		default:
			r.st.feed(src, t)
		}
	}
}

// endStatement folds the current statement into the result.
func (r *pass) endStatement() {
	s := &r.st
	if s.ntok == 0 && !s.bad {
		return // empty statement
	}
	if s.bad && !r.failed {
		r.failed = true
		r.okKind, r.okEff, r.okN = r.kind, r.eff, r.n
		if r.n == 0 {
			r.okKind = Unknown
		}
	}
	k, e := s.finish(r.lex.src)
	if r.uncertain {
		e = held(e)
	}
	for _, f := range s.funcs {
		if !slices.Contains(r.funcs, f) {
			r.funcs = append(r.funcs, f)
		}
	}
	r.n++
	r.eff |= e
	if r.allRead {
		r.kind = k
		r.allRead = k == Read
	}
	if s.compound || k == Unknown {
		r.uncertain = true
	}
	s.reset()
}

// serverShows are the SHOW statements that describe the server that
// answers rather than the schema: replication and binlog positions,
// threads, status and variables, engines, plugins, grants. A replica's
// answer would be about the replica.
var serverShows = []string{"MASTER", "BINLOG", "BINARY", "SLAVE", "REPLICA", "REPLICAS", "RELAYLOG", "ALL",
	"PROCESSLIST", "VARIABLES", "ENGINE", "ENGINES", "INNODB", "PLUGINS", "MUTEX", "OPEN", "GRANTS",
	"PRIVILEGES", "USER_STATISTICS", "CLIENT_STATISTICS", "INDEX_STATISTICS", "TABLE_STATISTICS",
	"QUERY_RESPONSE_TIME", "WSREP_MEMBERSHIP", "WSREP_STATUS"}

func serverShow(word string) bool {
	for _, w := range serverShows {
		if equalFold(word, w) {
			return true
		}
	}
	return false
}

// phase is where a statement's head analysis stands.
type phase uint8

const (
	phStart          phase = iota // expecting the first word of a statement, after optional '('
	phBody                        // the head is decided; only flags remain
	phShow                        // after SHOW
	phShowFull                    // after SHOW FULL
	phExplain                     // after EXPLAIN/DESCRIBE/DESC (and options)
	phAnalyze                     // after ANALYZE (and options)
	phFormat                      // after FORMAT in EXPLAIN/ANALYZE: '=' expected
	phFormatValue                 // after FORMAT =
	phExplainFor                  // after EXPLAIN … FOR
	phExplainSchema               // after EXPLAIN … FOR SCHEMA|DATABASE
	phExplainInto                 // after EXPLAIN … INTO
	phSet                         // after SET
	phSetAssign                   // in the assignment list of SET
	phSetStatement                // after SET STATEMENT: until FOR
	phBegin                       // after BEGIN
	phBeginWork                   // after BEGIN WORK
	phStartWord                   // after START
	phEnd                         // after COMMIT/ROLLBACK
	phXA                          // after XA
	phCreate                      // after CREATE/ALTER: look for TEMPORARY and routine words
	phDrop                        // after DROP
	phWithName                    // WITH: expecting a CTE name
	phWithColumns                 // after a CTE name: '(' or AS
	phWithColumnsEnd              // in a CTE column list
	phWithAs                      // after the column list: AS
	phWithBodyStart               // after AS: '('
	phWithBody                    // in a CTE body
	phWithAfter                   // after a CTE body: ',' or CYCLE or the main statement
	phWithCycle                   // in MariaDB's CYCLE … RESTRICT
)

// Sub-states of phEnd.
const (
	endWork    = iota // expecting WORK, AND, NO, RELEASE, TO or the end
	endAnd            // after AND
	endAndNo          // after AND NO
	endNo             // after NO (expecting RELEASE)
	endRelease        // after RELEASE
)

// Sub-states of an assignment in phSetAssign.
const (
	asgTarget = iota // scope words and the variable
	asgOp            // '=' or ':='
	asgValue         // the value
)

// stmt is the streaming state of one statement: a head analysis (phase)
// plus flags that any token at any depth can raise.
type stmt struct {
	ph    phase
	ntok  int
	depth int // parentheses
	base  int // depth of the construct the phase tracks (WITH, SET)
	aux   int // per-phase counter or sub-state

	kind     Kind
	eff      Effect
	readForm bool // the head is a read: flags below may change its kind
	compound bool // may contain bodies with ';' (routines, compound statements)
	endTx    bool // COMMIT/ROLLBACK: TxEnd unless chain
	chain    bool // COMMIT/ROLLBACK … AND CHAIN, ROLLBACK … TO: no TxEnd
	bad      bool // malformed (lexer) or unexpected: Unknown

	// Flags from anywhere in the statement.
	fWrite, fLock, fSession, fPin bool
	funcs                         []string // stored functions called: name( of a non-built-in
	pendCall                      token    // previous token: a word or quoted name ('(' makes it a call)
	pendQualified                 bool     // … after a '.': schema.function

	// Look-behind and pending decisions about the previous tokens.
	prev1, prev2 kw // keywords of the two previous tokens (kwNone for others)
	afterDot     bool
	pendDML      bool // previous token: INSERT or REPLACE, a function if '(' follows
	pendInto     bool // previous token: INTO, a user variable follows for SELECT … INTO @v
	pendFn       kw   // previous token: a session-bound function name

	// SET: the assignment being read.
	asg       int
	scopeWord kw    // GLOBAL, PERSIST, PERSIST_ONLY, SESSION, LOCAL before the variable
	sawGlobal bool  // a global or persist scope appeared earlier in the SET
	acTarget  bool  // the variable is autocommit
	acGlobal  bool  // … in global or persist scope
	acValues  int   // number of value tokens
	acValue   token // the first of them
}

func (s *stmt) reset() { *s = stmt{} }

// feed processes one token of the statement.
func (s *stmt) feed(src string, t token) {
	s.ntok++
	text := src[t.start:t.end]
	raw := kwNone // the word's keyword, even after '.'
	if t.kind == tkWord {
		raw = lookup(text)
	}
	k := raw // as a keyword: after '.', a word is a name (t.update)
	if s.afterDot {
		k = kwNone
	}

	switch t.kind {
	case tkLParen:
		s.depth++
	case tkRParen:
		if s.depth > 0 {
			s.depth--
		}
	case tkSemi:
		// Only a ';' inside parentheses reaches feed. The server ends the
		// statement there with a syntax error; vitess, for one, would
		// run what follows. Either way it is not a read.
		s.bad = true
	}

	s.flags(src, t, k, raw)

	switch s.ph {
	case phBody:
	case phStart:
		s.start(t, k)
	case phShow:
		s.ph = phBody
		switch k {
		case kwWarnings, kwErrors, kwCount, kwProfile, kwProfiles, kwStatus,
			kwSession, kwLocal, kwExplain, kwAnalyze, kwGlobal:
			s.kind = SessionRead
		default:
			if t.kind == tkWord && serverShow(src[t.start:t.end]) {
				s.kind = SessionRead // the state of the server that answers: the primary's is meant
			} else if t.kind == tkWord && equalFold(src[t.start:t.end], "FULL") {
				s.ph = phShowFull
			}
		}
	case phShowFull:
		s.ph = phBody
		if t.kind == tkWord && equalFold(src[t.start:t.end], "PROCESSLIST") {
			s.kind = SessionRead
		}
	case phExplain, phAnalyze:
		s.explain(t, k)
	case phFormat:
		switch {
		case t.kind == tkEq:
			s.ph = phFormatValue
		case phase(s.aux) == phExplain:
			s.kind, s.ph = Read, phBody // DESCRIBE format …: a table named format
		default:
			s.kind, s.ph = Unknown, phBody
		}
	case phFormatValue:
		s.ph = phase(s.aux)
	case phExplainFor:
		switch k {
		case kwConnection:
			s.kind, s.ph = SessionRead, phBody
		case kwSchema, kwDatabase:
			s.ph = phExplainSchema
		default:
			s.kind, s.ph = Unknown, phBody
		}
	case phExplainSchema, phExplainInto:
		s.ph = phExplain
	case phSet:
		s.set(src, t, k)
	case phSetAssign:
		s.assign(src, t, k)
	case phSetStatement:
		if k == kwFor && s.depth == s.base {
			s.ph = phStart
		}
	case phBegin:
		if k == kwWork {
			s.ph = phBeginWork
		} else {
			// BEGIN NOT ATOMIC, a labelled block: a compound statement.
			s.compound, s.ph = true, phBody
		}
	case phBeginWork:
		s.kind, s.ph = Unknown, phBody
	case phStartWord:
		if k == kwTransaction {
			s.eff |= TxBegin
		}
		s.ph = phBody
	case phEnd:
		s.end(k)
	case phXA:
		switch k {
		case kwStart, kwBegin:
			s.eff |= TxBegin
		case kwCommit, kwRollback:
			s.eff |= TxEnd
		}
		s.ph = phBody
	case phCreate:
		switch {
		case s.depth > s.base || s.aux >= 12:
			s.ph = phBody
		case k == kwTemporary:
			s.eff |= TempTable
		case k == kwProcedure || k == kwFunction || k == kwTrigger || k == kwEvent || k == kwPackage:
			s.compound = true
		}
		s.aux++
	case phDrop:
		if k == kwTemporary {
			s.eff |= TempTable
		}
		s.ph = phBody
	default:
		s.with(t, k)
	}

	s.prev2, s.prev1 = s.prev1, k
	s.afterDot = t.kind == tkDot
}

// flags raises the flags that any token, at any depth, can raise.
func (s *stmt) flags(src string, t token, k, raw kw) {
	isParen := t.kind == tkLParen
	if s.pendDML {
		s.pendDML = false
		if !isParen {
			s.fWrite = true // a bare INSERT/REPLACE: a statement, not a function
		}
	}
	if s.pendInto {
		s.pendInto = false
		if t.kind == tkUserVar {
			s.fPin = true // SELECT … INTO @v sets a user variable
		}
	}
	if s.pendFn != kwNone {
		if isParen {
			switch s.pendFn {
			case kwSetval:
				s.fWrite = true
			case kwGetLock:
				s.fSession, s.eff = true, s.eff|Lock
			case kwReleaseLock, kwReleaseAllLocks:
				s.fSession, s.eff = true, s.eff|Unlock
			default:
				s.fSession = true
			}
		}
		s.pendFn = kwNone
	}

	if p := s.pendCall; p.kind != tkEOF {
		s.pendCall = token{}
		if isParen {
			name := src[p.start:p.end]
			if p.kind == tkQuoted {
				name = strings.Trim(name, "`\"")
			}
			if p.kind == tkQuoted || s.pendQualified || storedFunction(name) {
				if name = strings.ToLower(name); !slices.Contains(s.funcs, name) {
					s.funcs = append(s.funcs, name)
				}
			}
		}
	}
	// A name before '(' that is no call: a CTE's (WITH r (n) AS …) or a
	// derived table's alias (… AS x (a, b)).
	if (t.kind == tkWord || t.kind == tkQuoted) && s.ph != phWithName && s.prev1 != kwAs {
		s.pendCall, s.pendQualified = t, s.afterDot
	}

	switch t.kind {
	case tkAssign:
		s.fWrite, s.fPin = true, true
		return
	case tkSysVar:
		if connectionBound(src[t.start:t.end]) {
			s.fSession = true
		}
		return
	case tkWord:
	default:
		return
	}

	switch raw {
	case kwLastInsertID, kwFoundRows, kwRowCount, kwSetval, kwGetLock, kwReleaseLock,
		kwReleaseAllLocks, kwIsUsedLock, kwIsFreeLock, kwConnectionID:
		s.pendFn = raw
	case kwNextval, kwLastval, kwCurrval:
		s.pendFn = raw
		if s.afterDot {
			s.fSession = true // MariaDB sql_mode=ORACLE: seq.nextval
		}
	}

	switch k {
	case kwInsert, kwReplace:
		s.pendDML = true
	case kwUpdate:
		if s.prev1 == kwFor {
			s.fLock = true
		} else {
			s.fWrite = true
		}
	case kwDelete:
		s.fWrite = true
	case kwShare:
		if s.prev1 == kwFor || s.prev1 == kwIn && s.prev2 == kwLock {
			s.fLock = true
		}
	case kwInto:
		s.fWrite, s.pendInto = true, true
	case kwSQLCalcFoundRows:
		s.fSession = true
	case kwFor:
		if s.prev1 == kwValue && (s.prev2 == kwNext || s.prev2 == kwPrevious) {
			s.fSession = true
		}
	}
}

// start handles the first word of a statement (phStart).
func (s *stmt) start(t token, k kw) {
	if t.kind == tkLParen {
		s.aux = 1 // a parenthesized statement: only a query may follow
		return
	}
	s.ph = phBody
	switch k {
	case kwSelect, kwTable, kwValues:
		s.kind, s.readForm = Read, true
		return
	case kwWith:
		s.kind, s.readForm = Read, true
		s.ph, s.base = phWithName, s.depth
		return
	}
	if s.aux == 1 || t.kind != tkWord {
		s.kind = Unknown
		return
	}
	switch k {
	case kwShow:
		s.kind, s.readForm, s.ph = Read, true, phShow
	case kwExplain, kwDescribe, kwDesc:
		s.readForm, s.ph, s.aux = true, phExplain, 0
	case kwAnalyze:
		s.readForm, s.ph, s.aux = true, phAnalyze, 0
	case kwHelp:
		s.kind, s.readForm = Read, true
	case kwSet:
		s.kind, s.eff, s.ph, s.base = Write, s.eff|Pin, phSet, s.depth
	case kwBegin:
		s.kind, s.ph = Write, phBegin
	case kwStart:
		s.kind, s.ph = Write, phStartWord
	case kwCommit, kwRollback:
		s.kind, s.ph, s.aux, s.endTx = Write, phEnd, endWork, true
	case kwXA:
		s.kind, s.ph = Write, phXA
	case kwUse, kwPrepare, kwLock, kwCall, kwHandler, kwGet, kwExecute, kwFlush, kwBackup:
		// They change state that belongs to the session: the current
		// database, prepared statements, locks the session holds (LOCK
		// TABLES, FLUSH TABLES … WITH READ LOCK, BACKUP LOCK), open
		// handlers, user variables (CALL's OUT parameters, GET
		// DIAGNOSTICS), or run SQL of their own (CALL, EXECUTE IMMEDIATE).
		s.kind, s.eff = Write, s.eff|Pin
	case kwCreate, kwAlter:
		s.kind, s.ph, s.base, s.aux = Write, phCreate, s.depth, 0
	case kwDrop:
		s.kind, s.ph = Write, phDrop
	case kwInsert, kwUpdate, kwDelete, kwReplace, kwLoad, kwRename, kwTruncate,
		kwGrant, kwRevoke, kwDo, kwOptimize, kwRepair, kwCheck, kwChecksum,
		kwKill, kwSavepoint, kwRelease, kwDeallocate, kwUnlock, kwReset,
		kwPurge, kwInstall, kwUninstall, kwChange, kwStop, kwShutdown, kwRestart,
		kwClone, kwBinlog, kwCache, kwImport, kwSignal, kwResignal:
		s.kind = Write
	case kwDeclare, kwIf, kwWhile, kwLoop, kwRepeat, kwCase, kwFor:
		s.kind, s.compound = Unknown, true
	default:
		s.kind = Unknown
	}
}

// explain handles the words after EXPLAIN/DESCRIBE/DESC and after ANALYZE.
// s.aux counts the options seen, for "DESCRIBE extended": a table.
func (s *stmt) explain(t token, k kw) {
	analyze := s.ph == phAnalyze
	switch k {
	case kwExtended, kwPartitions, kwAnalyze:
		if !analyze {
			s.aux++
			return
		}
	case kwFormat:
		s.aux, s.ph = int(s.ph), phFormat
		return
	case kwFor:
		if !analyze {
			s.ph = phExplainFor
			return
		}
	case kwInto:
		if !analyze {
			s.ph = phExplainInto
			return
		}
	case kwTable, kwNoWriteToBinlog, kwLocal:
		if analyze {
			s.kind, s.readForm, s.ph = Write, false, phBody // ANALYZE TABLE
			return
		}
	}
	switch {
	case t.kind == tkLParen || k == kwSelect || k == kwWith || k == kwValues || k == kwTable ||
		k == kwInsert || k == kwUpdate || k == kwDelete || k == kwReplace:
		s.ph, s.aux = phStart, 0
		s.start(t, k)
	case !analyze && (t.kind == tkWord || t.kind == tkQuoted):
		s.kind, s.ph = Read, phBody // DESCRIBE t [column]
	default:
		s.kind, s.ph = Unknown, phBody
	}
}

// set handles the word after SET.
func (s *stmt) set(src string, t token, k kw) {
	switch k {
	case kwStatement:
		// MariaDB SET STATEMENT v=x[, …] FOR s: classified as s, no pin.
		s.kind, s.eff, s.ph = Unknown, s.eff&^Pin, phSetStatement
	case kwTransaction, kwNames, kwCharacter, kwCharset, kwPassword, kwRole, kwDefault, kwResource:
		s.ph = phBody
	default:
		s.ph, s.asg = phSetAssign, asgTarget
		s.assign(src, t, k)
	}
}

// assign follows the assignment list of SET, one assignment at a time, to
// find the session's autocommit.
func (s *stmt) assign(src string, t token, k kw) {
	if t.kind == tkComma && s.depth == s.base {
		s.endAssign(src)
		return
	}
	switch s.asg {
	case asgTarget:
		switch {
		case k == kwGlobal || k == kwPersist || k == kwPersistOnly || k == kwSession || k == kwLocal:
			s.scopeWord = k
			if k != kwSession && k != kwLocal {
				s.sawGlobal = true
			}
			return
		case k == kwAutocommit:
			s.acTarget = true
			s.acGlobal = s.scopeWord == kwGlobal || s.scopeWord == kwPersist || s.scopeWord == kwPersistOnly
		case t.kind == tkSysVar:
			scope, name := splitSysVar(src[t.start:t.end])
			global := scope == kwGlobal || scope == kwPersist || scope == kwPersistOnly
			if global {
				s.sawGlobal = true
			}
			if equalFold(name, "AUTOCOMMIT") {
				s.acTarget, s.acGlobal = true, global
			}
		}
		s.asg = asgOp
	case asgOp:
		if t.kind == tkEq || t.kind == tkAssign {
			s.asg = asgValue
		}
	case asgValue:
		if s.acValues == 0 {
			s.acValue = t
		}
		s.acValues++
	}
}

// endAssign records the effect of the assignment just read. Setting the
// session's autocommit to anything but a literal ON/1/TRUE is reported as
// AutocommitOff, the answer that keeps the session on the primary; ON is
// reported only when no GLOBAL/PERSIST scope in the statement could make
// the assignment global.
func (s *stmt) endAssign(src string) {
	if s.acTarget && !s.acGlobal {
		if s.acValues == 1 && autocommitOn(src, s.acValue) {
			if !s.sawGlobal {
				s.eff = s.eff&^AutocommitOff | AutocommitOn
			}
		} else {
			s.eff = s.eff&^AutocommitOn | AutocommitOff
		}
	}
	if s.scopeWord == kwGlobal || s.scopeWord == kwPersist || s.scopeWord == kwPersistOnly {
		s.sawGlobal = true
	}
	s.asg, s.scopeWord, s.acTarget, s.acGlobal, s.acValues = asgTarget, kwNone, false, false, 0
}

// autocommitOn reports whether the value token turns autocommit on.
func autocommitOn(src string, t token) bool {
	text := src[t.start:t.end]
	switch t.kind {
	case tkNumber:
		return text == "1"
	case tkWord:
		k := lookup(text)
		return k == kwOn || k == kwTrue
	case tkString:
		if len(text) >= 2 && (text[0] == '\'' || text[0] == '"') {
			v := text[1 : len(text)-1]
			return v == "1" || equalFold(v, "ON") || equalFold(v, "TRUE")
		}
	}
	return false
}

// splitSysVar splits @@scope.name into its scope keyword (kwNone when
// absent or unknown) and name.
func splitSysVar(text string) (kw, string) {
	name := text[2:]
	for i := 0; i < len(name); i++ {
		if name[i] == '.' {
			return lookup(name[:i]), name[i+1:]
		}
	}
	return kwNone, name
}

// connectionBound reports whether reading the system variable @@… gives
// an answer that belongs to the connection (or its last statement), so
// that a replica connection would answer something else:
//
//   - last_insert_id, identity, insert_id, last_gtid (MariaDB),
//     warning_count, error_count, in_transaction (MariaDB),
//     pseudo_thread_id, gtid_next and gtid_owned (MySQL);
//   - the variables a logical connection sets on its primary connection
//     only (see PrimaryOnlySet: foreign_key_checks, the isolation level,
//     …), which its replica connections do not have.
//
// @@session.x and @@local.x read as @@x: both give the session's value,
// and the session variables a logical connection sets without pinning
// (time_zone, sql_mode, …) are applied to its replica connections too. A
// quoted name (@@`x`) is treated as connection-bound. Other variables
// (@@server_id, @@read_only, @@version, @@global.*, …) are node settings
// and are safe to read on a replica: there they describe the replica,
// which is what routing a read there means.
func connectionBound(text string) bool {
	scope, name := splitSysVar(text)
	switch scope {
	case kwGlobal, kwPersist, kwPersistOnly:
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '`' || name[i] == '.' {
			return true
		}
	}
	for _, v := range [...]string{"LAST_INSERT_ID", "IDENTITY", "INSERT_ID", "LAST_GTID",
		"WARNING_COUNT", "ERROR_COUNT", "IN_TRANSACTION", "PSEUDO_THREAD_ID", "GTID_NEXT", "GTID_OWNED"} {
		if equalFold(name, v) {
			return true
		}
	}
	return primaryOnlyVars[strings.ToLower(name)]
}

// end follows the words after COMMIT/ROLLBACK:
// [WORK] [AND [NO] CHAIN] [[NO] RELEASE] or ROLLBACK [WORK] TO ….
func (s *stmt) end(k kw) {
	switch s.aux {
	case endWork:
		switch k {
		case kwWork:
			return
		case kwAnd:
			s.aux = endAnd
			return
		case kwNo:
			s.aux = endNo
			return
		case kwRelease:
			s.aux = endRelease
			return
		case kwTo:
			s.chain, s.ph = true, phBody // ROLLBACK TO SAVEPOINT: the transaction goes on
			return
		}
	case endAnd:
		switch k {
		case kwNo:
			s.aux = endAndNo
			return
		case kwChain:
			s.chain, s.aux = true, endWork // AND CHAIN: a new transaction starts at once
			return
		}
	case endAndNo:
		if k == kwChain {
			s.aux = endWork
			return
		}
	case endNo:
		if k == kwRelease {
			s.aux = endRelease
			return
		}
	}
	s.kind, s.chain, s.ph = Unknown, true, phBody
}

// with follows a WITH clause at depth s.base to find its main statement:
// WITH [RECURSIVE] name [(columns)] AS (body) [CYCLE … RESTRICT] [, …] main.
func (s *stmt) with(t token, k kw) {
	switch s.ph {
	case phWithName:
		if k == kwRecursive && s.aux == 0 {
			s.aux = 1
			return
		}
		s.aux = 1
		if t.kind == tkWord || t.kind == tkQuoted {
			s.ph = phWithColumns
			return
		}
	case phWithColumns:
		if t.kind == tkLParen {
			s.ph = phWithColumnsEnd
			return
		}
		if k == kwAs {
			s.ph = phWithBodyStart
			return
		}
	case phWithColumnsEnd:
		if t.kind == tkRParen && s.depth == s.base {
			s.ph = phWithAs
		}
		return
	case phWithAs:
		if k == kwAs {
			s.ph = phWithBodyStart
			return
		}
	case phWithBodyStart:
		if t.kind == tkLParen {
			s.ph = phWithBody
			return
		}
	case phWithBody:
		if t.kind == tkRParen && s.depth == s.base {
			s.ph = phWithAfter
		}
		return
	case phWithAfter:
		switch {
		case t.kind == tkComma:
			s.ph = phWithName
			return
		case k == kwCycle:
			s.ph = phWithCycle
			return
		case t.kind == tkLParen || k == kwSelect || k == kwTable || k == kwValues:
			s.ph = phBody // the main statement is a query
			return
		case k == kwUpdate || k == kwDelete || k == kwInsert || k == kwReplace:
			s.kind, s.readForm, s.ph = Write, false, phBody
			return
		}
	case phWithCycle:
		if k == kwRestrict && s.depth == s.base {
			s.ph = phWithAfter
		}
		return
	}
	s.kind, s.readForm, s.ph = Unknown, false, phBody
}

// finish decides the statement at its end.
func (s *stmt) finish(src string) (Kind, Effect) {
	switch s.ph {
	case phStart, phShow, phShowFull, phAnalyze, phFormatValue, phExplainFor, phExplainSchema, phExplainInto, phSetStatement:
		s.kind = Unknown // the statement stops where more is required
	case phExplain:
		if s.aux > 0 {
			s.kind = Read // DESCRIBE extended: a table named like an option
		} else {
			s.kind = Unknown
		}
	case phFormat:
		if phase(s.aux) == phExplain {
			s.kind = Read // DESCRIBE format
		} else {
			s.kind = Unknown
		}
	case phSetAssign:
		s.endAssign(src)
	case phBegin, phBeginWork:
		if s.kind == Write {
			s.eff |= TxBegin
		}
	case phEnd:
		if s.aux != endWork && s.aux != endRelease {
			s.kind, s.chain = Unknown, true
		}
	case phWithName, phWithColumns, phWithColumnsEnd, phWithAs, phWithBodyStart, phWithBody, phWithAfter, phWithCycle:
		s.kind = Unknown
	}
	if s.pendDML {
		s.fWrite = true // a bare INSERT/REPLACE ends the statement
	}
	k, e := s.kind, s.eff
	if s.endTx && !s.chain {
		e |= TxEnd
	}
	if s.readForm && (k == Read || k == SessionRead) {
		switch {
		case s.fWrite:
			k = Write
		case s.fLock:
			k = LockingRead
		case s.fSession:
			k = SessionRead
		}
	}
	if s.fPin {
		e |= Pin
	}
	if s.bad {
		return Unknown, 0
	}
	return k, e
}
