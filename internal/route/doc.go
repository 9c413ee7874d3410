// Package route decides where a statement may run: it classifies SQL text
// (Classify, cached by Classifier) and, from the class, the session state
// and the hints, decides a target with a reason (Decide).
//
// Only rwshard calls it, so it is internal: a program sees its answers
// through Explain, the route log and the stats, and the reasons' names in
// package router.
//
// # Classification
//
// Classify reads the text with a hand-written scanner for the MySQL and
// MariaDB dialect, not a parser: it does not allocate, and a Classifier
// answers a repeated statement from its cache without scanning it again
// (the costs are in docs/routing.md). The scanner
// knows what changes the meaning of a text for routing: strings,
// quoted identifiers, comments, versioned comments (/*!50100 … */ and
// MariaDB's /*M!100100 … */, which are code), optimizer hints (/*+ … */,
// comments), statement separators and parentheses. It then looks at each
// statement's leading words and at a few words anywhere in it (FOR UPDATE,
// INTO, ':=', a bare INSERT/UPDATE/DELETE/REPLACE, session-bound
// functions and variables).
//
// The result is a Class: a Kind (Read, SessionRead, LockingRead, Write or
// Unknown), Effects on the session (Pin, TxBegin, TxEnd, AutocommitOff,
// AutocommitOn), the comment hints of the text merged (see package hint)
// and the number of statements. Only Read may go to a replica; Unknown, the
// zero Kind, routes to the primary like Write. When the scanner is unsure
// the answer is never Read.
//
// Some texts mean different things on different servers or sessions: a
// backslash does not escape under sql_mode NO_BACKSLASH_ESCAPES, "…" quotes
// an identifier under ANSI_QUOTES, a versioned comment is code only on a
// recent enough server (and /*M!…*/ only on MariaDB), and MySQL 9 quotes
// text between $tag$ and $tag$. Classify reads such a text every way it
// can be read and keeps the answer that is safe for all of them; a text
// such as
//
//	SELECT 'a\'; DELETE FROM t; -- '
//
// is therefore Unknown, not Read. Texts without a backslash before a
// quote, versioned comments or $tag$, nearly all, are read once.
//
// The classifier assumes an ASCII-compatible connection character set
// (utf8mb4, utf8mb3, latin1, …): in a multi-byte set whose characters can
// end in the byte of a backslash (GBK, Big5, SJIS) quoted text is cut
// differently.
package route
