package route

// kw identifies the few SQL words the classifier cares about. Everything
// else is kwNone: an identifier or a keyword without meaning for routing.
type kw uint8

const (
	kwNone kw = iota

	// Statement heads that read.
	kwSelect
	kwWith
	kwTable
	kwValues
	kwShow
	kwExplain
	kwDescribe
	kwDesc
	kwAnalyze
	kwHelp

	// Statement heads with effects on the session.
	kwSet
	kwBegin
	kwStart
	kwCommit
	kwRollback
	kwXA
	kwUse
	kwPrepare
	kwLock
	kwCreate
	kwAlter
	kwDrop
	kwCall
	kwHandler
	kwGet

	// Statement heads that write (kind Write, no effect of their own).
	kwInsert
	kwUpdate
	kwDelete
	kwReplace
	kwLoad
	kwRename
	kwTruncate
	kwGrant
	kwRevoke
	kwDo
	kwOptimize
	kwRepair
	kwCheck
	kwChecksum
	kwFlush
	kwKill
	kwSavepoint
	kwRelease
	kwExecute
	kwDeallocate
	kwUnlock
	kwReset
	kwPurge
	kwInstall
	kwUninstall
	kwChange
	kwStop
	kwShutdown
	kwRestart
	kwClone
	kwBinlog
	kwCache
	kwImport
	kwSignal
	kwResignal
	kwBackup

	// Heads of compound statements (stored-program syntax that MariaDB also
	// accepts at top level): Unknown, and their bodies may hold ';'.
	kwDeclare
	kwIf
	kwWhile
	kwLoop
	kwRepeat
	kwCase
	kwFor

	// Words inside statements.
	kwRecursive
	kwAs
	kwCycle
	kwRestrict
	kwStatement
	kwShare
	kwIn
	kwInto
	kwNext
	kwPrevious
	kwValue
	kwSQLCalcFoundRows
	kwWork
	kwTransaction
	kwAnd
	kwNo
	kwChain
	kwTo
	kwTemporary
	kwProcedure
	kwFunction
	kwTrigger
	kwEvent
	kwPackage
	kwWarnings
	kwErrors
	kwCount
	kwProfile
	kwProfiles
	kwSession
	kwLocal
	kwGlobal
	kwPersist
	kwPersistOnly
	kwStatus
	kwExtended
	kwPartitions
	kwFormat
	kwConnection
	kwSchema
	kwDatabase
	kwNoWriteToBinlog
	kwAutocommit
	kwOn
	kwOff
	kwTrue
	kwFalse
	kwNames
	kwCharacter
	kwCharset
	kwPassword
	kwRole
	kwDefault
	kwResource

	// Functions bound to the connection or to the primary's state.
	kwLastInsertID
	kwFoundRows
	kwRowCount
	kwNextval
	kwLastval
	kwCurrval
	kwSetval
	kwGetLock
	kwReleaseLock
	kwReleaseAllLocks
	kwIsUsedLock
	kwIsFreeLock
	kwConnectionID
)

// keywords lists the words lookup knows, upper-case.
var keywords = [...]struct {
	name string
	k    kw
}{
	{"SELECT", kwSelect},
	{"WITH", kwWith},
	{"TABLE", kwTable},
	{"VALUES", kwValues},
	{"SHOW", kwShow},
	{"EXPLAIN", kwExplain},
	{"DESCRIBE", kwDescribe},
	{"DESC", kwDesc},
	{"ANALYZE", kwAnalyze},
	{"HELP", kwHelp},
	{"SET", kwSet},
	{"BEGIN", kwBegin},
	{"START", kwStart},
	{"COMMIT", kwCommit},
	{"ROLLBACK", kwRollback},
	{"XA", kwXA},
	{"USE", kwUse},
	{"PREPARE", kwPrepare},
	{"LOCK", kwLock},
	{"CREATE", kwCreate},
	{"ALTER", kwAlter},
	{"DROP", kwDrop},
	{"CALL", kwCall},
	{"HANDLER", kwHandler},
	{"GET", kwGet},
	{"INSERT", kwInsert},
	{"UPDATE", kwUpdate},
	{"DELETE", kwDelete},
	{"REPLACE", kwReplace},
	{"LOAD", kwLoad},
	{"RENAME", kwRename},
	{"TRUNCATE", kwTruncate},
	{"GRANT", kwGrant},
	{"REVOKE", kwRevoke},
	{"DO", kwDo},
	{"OPTIMIZE", kwOptimize},
	{"REPAIR", kwRepair},
	{"CHECK", kwCheck},
	{"CHECKSUM", kwChecksum},
	{"FLUSH", kwFlush},
	{"KILL", kwKill},
	{"SAVEPOINT", kwSavepoint},
	{"RELEASE", kwRelease},
	{"EXECUTE", kwExecute},
	{"DEALLOCATE", kwDeallocate},
	{"UNLOCK", kwUnlock},
	{"RESET", kwReset},
	{"PURGE", kwPurge},
	{"INSTALL", kwInstall},
	{"UNINSTALL", kwUninstall},
	{"CHANGE", kwChange},
	{"STOP", kwStop},
	{"SHUTDOWN", kwShutdown},
	{"RESTART", kwRestart},
	{"CLONE", kwClone},
	{"BINLOG", kwBinlog},
	{"CACHE", kwCache},
	{"IMPORT", kwImport},
	{"SIGNAL", kwSignal},
	{"RESIGNAL", kwResignal},
	{"BACKUP", kwBackup},
	{"DECLARE", kwDeclare},
	{"IF", kwIf},
	{"WHILE", kwWhile},
	{"LOOP", kwLoop},
	{"REPEAT", kwRepeat},
	{"CASE", kwCase},
	{"FOR", kwFor},
	{"RECURSIVE", kwRecursive},
	{"AS", kwAs},
	{"CYCLE", kwCycle},
	{"RESTRICT", kwRestrict},
	{"STATEMENT", kwStatement},
	{"SHARE", kwShare},
	{"IN", kwIn},
	{"INTO", kwInto},
	{"NEXT", kwNext},
	{"PREVIOUS", kwPrevious},
	{"VALUE", kwValue},
	{"SQL_CALC_FOUND_ROWS", kwSQLCalcFoundRows},
	{"WORK", kwWork},
	{"TRANSACTION", kwTransaction},
	{"AND", kwAnd},
	{"NO", kwNo},
	{"CHAIN", kwChain},
	{"TO", kwTo},
	{"TEMPORARY", kwTemporary},
	{"PROCEDURE", kwProcedure},
	{"FUNCTION", kwFunction},
	{"TRIGGER", kwTrigger},
	{"EVENT", kwEvent},
	{"PACKAGE", kwPackage},
	{"WARNINGS", kwWarnings},
	{"ERRORS", kwErrors},
	{"COUNT", kwCount},
	{"PROFILE", kwProfile},
	{"PROFILES", kwProfiles},
	{"SESSION", kwSession},
	{"LOCAL", kwLocal},
	{"GLOBAL", kwGlobal},
	{"PERSIST", kwPersist},
	{"PERSIST_ONLY", kwPersistOnly},
	{"STATUS", kwStatus},
	{"EXTENDED", kwExtended},
	{"PARTITIONS", kwPartitions},
	{"FORMAT", kwFormat},
	{"CONNECTION", kwConnection},
	{"SCHEMA", kwSchema},
	{"DATABASE", kwDatabase},
	{"NO_WRITE_TO_BINLOG", kwNoWriteToBinlog},
	{"AUTOCOMMIT", kwAutocommit},
	{"ON", kwOn},
	{"OFF", kwOff},
	{"TRUE", kwTrue},
	{"FALSE", kwFalse},
	{"NAMES", kwNames},
	{"CHARACTER", kwCharacter},
	{"CHARSET", kwCharset},
	{"PASSWORD", kwPassword},
	{"ROLE", kwRole},
	{"DEFAULT", kwDefault},
	{"RESOURCE", kwResource},
	{"LAST_INSERT_ID", kwLastInsertID},
	{"FOUND_ROWS", kwFoundRows},
	{"ROW_COUNT", kwRowCount},
	{"NEXTVAL", kwNextval},
	{"LASTVAL", kwLastval},
	{"CURRVAL", kwCurrval},
	{"SETVAL", kwSetval},
	{"GET_LOCK", kwGetLock},
	{"RELEASE_LOCK", kwReleaseLock},
	{"RELEASE_ALL_LOCKS", kwReleaseAllLocks},
	{"IS_USED_LOCK", kwIsUsedLock},
	{"IS_FREE_LOCK", kwIsFreeLock},
	{"CONNECTION_ID", kwConnectionID},
}

// maxKeywordLen is the length of the longest word in keywords.
const maxKeywordLen = 19

// keywordIndex holds keywords by length and first letter, so that lookup
// compares a word with the one to three keywords it could be.
var keywordIndex = func() (idx [maxKeywordLen + 1][26][]int) {
	for i, w := range keywords {
		if len(w.name) > maxKeywordLen {
			panic("router: keyword longer than maxKeywordLen: " + w.name)
		}
		b := &idx[len(w.name)][w.name[0]-'A']
		*b = append(*b, i)
	}
	return idx
}()

// lookup returns the kw of an unquoted word, comparing ASCII
// case-insensitively without allocating.
func lookup(s string) kw {
	if len(s) < 2 || len(s) > maxKeywordLen {
		return kwNone
	}
	c := s[0] | 0x20 // ASCII lower case for letters
	if c < 'a' || c > 'z' {
		return kwNone
	}
	for _, i := range keywordIndex[len(s)][c-'a'] {
		if equalFold(s, keywords[i].name) {
			return keywords[i].k
		}
	}
	return kwNone
}

// equalFold reports whether s equals the upper-case ASCII word w, ignoring
// ASCII case in s. It does not allocate.
func equalFold(s, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}
