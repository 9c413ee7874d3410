package route

import (
	"strings"

	"github.com/rwshard/rwshard/hint"
)

// This file holds the scanner: a hand-written, allocation-free lexer for
// the MySQL/MariaDB dialect. It only cuts the text into tokens; it does not
// parse. What matters for routing is that it finds the same token
// boundaries as the server: where strings, identifiers and comments start
// and end, which comments are code, and where statements end.
//
// A few things change those boundaries depending on the server and the
// session, which the classifier cannot see from the text:
//
//   - sql_mode NO_BACKSLASH_ESCAPES: a backslash no longer escapes in
//     '…' and "…";
//   - sql_mode ANSI_QUOTES: "…" quotes an identifier, in which a backslash
//     never escapes;
//   - the server version: a versioned comment /*!NNNNN … */ is code on a
//     server at least that recent and a comment on an older one; /*M!…*/ is
//     code only on MariaDB;
//   - MySQL 9 quotes text between $tag$ and $tag$ (dollar quoting); for
//     older servers and MariaDB, $ starts an identifier.
//
// The lexer records what it saw of these (a backslash before a quote of the
// same kind, the distinct version keys) so that Classify can re-run the
// text under the other readings and keep the answer that is safe under all
// of them (see interpretations in classify.go).

// tokKind is the kind of a token.
type tokKind uint8

const (
	tkEOF     tokKind = iota
	tkWord            // unquoted identifier or keyword
	tkQuoted          // `quoted identifier` (or "…" under ANSI_QUOTES)
	tkString          // '…', "…", x'…', b'…' (introducers _cs and N are words)
	tkNumber          // 12, 1.5e3, .5 (the dot is its own token)
	tkUserVar         // @name, @'name', @`name`
	tkSysVar          // @@name, @@session.name
	tkParam           // ?
	tkAssign          // :=
	tkLParen          // (
	tkRParen          // )
	tkComma           // ,
	tkDot             // .
	tkSemi            // ;
	tkEq              // =
	tkOp              // any other operator or punctuation
)

// token is a slice of the source: src[start:end].
type token struct {
	kind       tokKind
	start, end int
}

// quoteMode says how quoted text is scanned.
type quoteMode uint8

const (
	// quoteDefault: a backslash escapes the next byte in '…' and "…"
	// (MySQL's default sql_mode).
	quoteDefault quoteMode = iota
	// quoteNoBackslash: NO_BACKSLASH_ESCAPES; only doubled quotes escape.
	quoteNoBackslash
	// quoteANSI: ANSI_QUOTES; "…" is an identifier without backslash
	// escapes, '…' keeps them.
	quoteANSI
)

// maxVersionKeys bounds the distinct versioned-comment keys whose
// combinations Classify enumerates (2^4 readings at most).
const maxVersionKeys = 4

// lexer scans one SQL text. The zero value is not ready: see reset.
type lexer struct {
	src string
	pos int

	quotes quoteMode
	// skipMask: bit i set means versioned comments with key vkeys[i] are
	// comments in this reading (the server is older, or is MySQL for /*M!).
	skipMask uint8
	// discover: record version keys as they are met (first reading).
	discover bool
	// mysql: read as MySQL does, for which /*M!…*/ is an ordinary comment;
	// otherwise as MariaDB. dollar: read as MySQL 9, with dollar quoting.
	mysql, dollar bool

	inVersioned bool // inside an executed /*!…*/: its closing */ ends it

	// bad is set when the token just returned, or a comment before it, is
	// malformed: unterminated string, identifier or comment, a NUL byte.
	// The server rejects the statement; the caller takes and clears it.
	bad bool

	// What was seen that other readings could cut differently.
	sawBackslashQuote  bool // \' inside '…' (or @'…')
	sawBackslashDQuote bool // \" inside "…"
	vkeys              [maxVersionKeys]uint32
	nvkeys             int
	vkeysOverflow      bool // more distinct version keys than maxVersionKeys
	vkeyNovel          bool // a later reading met a key the first did not
	sawMaria           bool // a /*M!…*/ comment was met
	sawDollar          bool // a token started with $tag$
	// sawNestedVersioned: a versioned comment inside the code of another
	// (the servers read it as a versioned comment again; vitess, used as
	// the fuzz oracle, as a plain comment).
	sawNestedVersioned bool

	// Comment hints (first reading only).
	parseHints bool
	hint       hint.Hint
	hintErr    error
}

// reading says how a lexer reads a text; the zero value is the first
// reading: default quoting, every versioned comment executed, MariaDB.
type reading struct {
	quotes   quoteMode
	skipMask uint8
	mysql    bool
	dollar   bool
}

func (l *lexer) reset(src string, r reading, first bool) {
	*l = lexer{src: src, quotes: r.quotes, skipMask: r.skipMask, mysql: r.mysql, dollar: r.dollar,
		discover: first, parseHints: first}
}

// endStatement is called at a statement boundary (a top-level ';'): like
// the server, which lexes each statement afresh, an open versioned comment
// does not carry over.
func (l *lexer) endStatement() { l.inVersioned = false }

// takeBad returns and clears the malformed flag.
func (l *lexer) takeBad() bool {
	b := l.bad
	l.bad = false
	return b
}

// Byte classes.
const (
	clSpace = 1 << iota
	clIdent // may appear in an unquoted identifier
	clDigit
)

// byteClass maps a byte to its classes. MySQL's whitespace is space, \t,
// \n, \v, \f, \r; an unquoted identifier holds letters, digits, '_', '$'
// and the bytes of multi-byte characters.
var byteClass = func() (t [256]uint8) {
	for _, c := range []byte(" \t\n\v\f\r") {
		t[c] = clSpace
	}
	for c := 0x80; c < 0x100; c++ {
		t[c] = clIdent
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = clIdent, clIdent
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = clIdent | clDigit
	}
	t['_'], t['$'] = clIdent, clIdent
	return t
}()

func isSpace(c byte) bool     { return byteClass[c]&clSpace != 0 }
func isIdentChar(c byte) bool { return byteClass[c]&clIdent != 0 }
func isDigit(c byte) bool     { return byteClass[c]&clDigit != 0 }

func isHexDigit(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// next returns the next token, skipping whitespace and comments.
func (l *lexer) next() token {
	src := l.src
	for {
		for l.pos < len(src) && isSpace(src[l.pos]) {
			l.pos++
		}
		if l.pos >= len(src) {
			if l.inVersioned {
				// An executed versioned comment left open: the server
				// reports a syntax error.
				l.inVersioned = false
				l.bad = true
			}
			return token{kind: tkEOF, start: len(src), end: len(src)}
		}
		start := l.pos
		c := src[start]
		switch {
		case c == '#':
			l.lineComment(start + 1)
			continue
		case c == '-' && start+1 < len(src) && src[start+1] == '-' &&
			(start+2 == len(src) || src[start+2] <= ' ' || src[start+2] == 0x7f):
			// "-- " needs a space or control byte (or the end) after the
			// second dash; "--1" is minus minus one.
			l.lineComment(start + 2)
			continue
		case c == '/' && start+1 < len(src) && src[start+1] == '*':
			l.blockComment()
			continue
		case c == '*' && l.inVersioned && start+1 < len(src) && src[start+1] == '/':
			l.inVersioned = false
			l.pos += 2
			continue
		case c == '\'':
			return l.quoted(tkString, '\'', l.quotes != quoteNoBackslash)
		case c == '"':
			if l.quotes == quoteANSI {
				return l.quoted(tkQuoted, '"', false)
			}
			return l.quoted(tkString, '"', l.quotes == quoteDefault)
		case c == '`':
			return l.quoted(tkQuoted, '`', false)
		case c == '@':
			return l.variable()
		case isDigit(c):
			return l.number()
		case isIdentChar(c):
			return l.word()
		case c == 0:
			// A NUL byte outside quotes ends the server's input early
			// and is a syntax error.
			l.bad = true
			l.pos++
			return token{kind: tkOp, start: start, end: l.pos}
		}
		l.pos++
		kind := tkOp
		switch c {
		case '(':
			kind = tkLParen
		case ')':
			kind = tkRParen
		case ',':
			kind = tkComma
		case '.':
			kind = tkDot
		case ';':
			kind = tkSemi
		case '=':
			kind = tkEq
		case '?':
			kind = tkParam
		case ':':
			if l.pos < len(src) && src[l.pos] == '=' {
				l.pos++
				kind = tkAssign
			}
		}
		return token{kind: kind, start: start, end: l.pos}
	}
}

// lineComment skips a '#' or '-- ' comment whose text starts at body. The
// server ends it at a newline, or at a NUL byte, which is then a syntax
// error.
func (l *lexer) lineComment(body int) {
	src := l.src
	i := body
	for i < len(src) && src[i] != '\n' && src[i] != 0 {
		i++
	}
	l.comment(src[body:i])
	if i < len(src) && src[i] == 0 {
		l.bad = true
		i++
	}
	l.pos = i
}

// blockComment handles "/*" at l.pos: a plain comment, an optimizer hint
// /*+ … */ (a comment), or a versioned comment /*!NNNNN … */ or
// /*M!NNNNNN … */, which is code in the readings where it executes. This
// follows the servers' lexers (consume_comment in sql_lex.cc):
//
//   - a plain comment ends at the first "*/", even inside the code of a
//     versioned comment;
//   - a versioned comment that does not execute is skipped, and may hold
//     one level of nested comment: /*!99999 a /* b */ c */ is one comment;
//   - one that executes is code up to the "*/" token that closes it;
//   - MySQL knows no /*M!: for it that is a plain comment.
func (l *lexer) blockComment() {
	src := l.src
	p := l.pos + 2
	versioned, maria := false, false
	if p < len(src) && src[p] == '!' {
		versioned, p = true, p+1
	} else if p+1 < len(src) && src[p] == 'M' && src[p+1] == '!' {
		versioned, maria, p = true, true, p+2
	}
	if !versioned {
		hintable := !(p < len(src) && src[p] == '+')
		l.skipComment(p, 0, hintable)
		return
	}
	if l.inVersioned {
		l.sawNestedVersioned = true
	}
	if maria {
		l.sawMaria = true
		if l.mysql {
			l.skipComment(p, 0, false)
			return
		}
	}
	// A 5-digit version (MariaDB also reads a sixth digit); with fewer
	// digits there is no version and the digits are code.
	n := 0
	for n < 6 && p+n < len(src) && isDigit(src[p+n]) {
		n++
	}
	var v uint32
	if n >= 5 {
		for _, d := range src[p : p+n] {
			v = v*10 + uint32(d-'0')
		}
		p += n
	}
	key := v << 1
	if maria {
		key |= 1
	}
	if l.executes(key) {
		l.inVersioned = true
		l.pos = p
		return
	}
	l.skipComment(p, 1, false)
}

// skipComment skips to the "*/" that ends the comment whose text starts
// at body, allowing nest levels of nested comments; an unterminated
// comment is a syntax error.
func (l *lexer) skipComment(body, nest int, hintable bool) {
	end, ok := commentEnd(l.src, body, nest)
	if !ok {
		l.bad = true
		l.pos = len(l.src)
		return
	}
	if hintable {
		l.comment(l.src[body : end-2])
	}
	l.pos = end
}

// commentEnd returns the offset just past the "*/" that ends a comment
// whose text starts at i, allowing nest levels of nested comments.
func commentEnd(src string, i, nest int) (int, bool) {
	for i+1 < len(src) {
		switch {
		case src[i] == '*' && src[i+1] == '/':
			return i + 2, true
		case nest > 0 && src[i] == '/' && src[i+1] == '*':
			j, ok := commentEnd(src, i+2, nest-1)
			if !ok {
				return len(src), false
			}
			i = j
		default:
			i++
		}
	}
	return len(src), false
}

// executes reports whether the versioned comment with the given key is
// code in this reading, recording new keys in the first reading.
func (l *lexer) executes(key uint32) bool {
	for i := 0; i < l.nvkeys; i++ {
		if l.vkeys[i] == key {
			return l.skipMask&(1<<i) == 0
		}
	}
	if l.discover {
		if l.nvkeys < maxVersionKeys {
			l.vkeys[l.nvkeys] = key
			l.nvkeys++
		} else {
			l.vkeysOverflow = true
		}
	} else {
		l.vkeyNovel = true
	}
	return true
}

// comment passes the text of a comment to the hint parser.
func (l *lexer) comment(body string) {
	if !l.parseHints {
		return
	}
	h, ok, err := hint.Parse(body)
	if err != nil {
		if l.hintErr == nil {
			l.hintErr = err
		}
		return
	}
	if ok {
		l.hint = hint.Merge(l.hint, h)
	}
}

// quoted scans text quoted by q starting at l.pos. A doubled quote stands
// for the quote; with esc, a backslash escapes the next byte.
func (l *lexer) quoted(kind tokKind, q byte, esc bool) token {
	start := l.pos
	l.pos = l.skipQuoted(start, q, esc)
	return token{kind: kind, start: start, end: l.pos}
}

// skipQuoted returns the offset just past the quoted text opening at i.
func (l *lexer) skipQuoted(i int, q byte, esc bool) int {
	src := l.src
	for i++; i < len(src); i++ {
		c := src[i]
		if c == '\\' && esc {
			i++
			if i < len(src) && src[i] == q {
				// Here the readings with and without backslash escapes
				// end the string at different places.
				if q == '\'' {
					l.sawBackslashQuote = true
				} else {
					l.sawBackslashDQuote = true
				}
			}
			continue
		}
		if c == q {
			if i+1 < len(src) && src[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	l.bad = true
	return len(src)
}

// variable scans @name, @'name', @"name", @`name`, @@name and
// @@scope.name.
func (l *lexer) variable() token {
	src := l.src
	start := l.pos
	i := start + 1
	kind := tkUserVar
	if i < len(src) && src[i] == '@' {
		kind = tkSysVar
		i++
	}
	for i < len(src) {
		c := src[i]
		switch {
		case isIdentChar(c) || c == '.':
			i++
			continue
		case c == '`':
			i = l.skipQuoted(i, '`', false)
			continue
		case (c == '\'' || c == '"') && kind == tkUserVar && i == start+1:
			esc := l.quotes == quoteDefault || (c == '\'' && l.quotes == quoteANSI)
			i = l.skipQuoted(i, c, esc)
		}
		break
	}
	l.pos = i
	return token{kind: kind, start: start, end: i}
}

// number scans a numeric literal, or an identifier that starts with
// digits (1abc, 0x1F: the same extent either way).
func (l *lexer) number() token {
	src := l.src
	start := l.pos
	i := start
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	decimal := start > 0 && src[start-1] == '.'
	if i < len(src) && src[i] == '.' {
		decimal = true
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		j := i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < len(src) && isDigit(src[j]) {
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			l.pos = j
			return token{kind: tkNumber, start: start, end: j}
		}
		if decimal {
			// After digits and a point, MySQL's lexer takes "e" and a
			// sign without digits as a broken number and goes on from
			// the byte after them: "1.5e-- 1" is "- 1", not a comment.
			// An integer's "1e" is an identifier, as here.
			l.bad = true
		}
	}
	kind := tkNumber
	for i < len(src) && isIdentChar(src[i]) {
		kind = tkWord
		i++
	}
	l.pos = i
	return token{kind: kind, start: start, end: i}
}

// word scans an unquoted identifier or keyword, a hex or bit literal
// x'…' / b'…', or in MySQL 9 a dollar-quoted string.
func (l *lexer) word() token {
	src := l.src
	start := l.pos
	if src[start] == '$' {
		if t, ok := l.dollarQuoted(); ok {
			return t
		}
	}
	i := start + 1
	if i < len(src) && src[i] == '\'' {
		switch src[start] {
		case 'x', 'X':
			return l.bitsLiteral(isHexDigit)
		case 'b', 'B':
			return l.bitsLiteral(func(c byte) bool { return c == '0' || c == '1' })
		}
	}
	for i < len(src) && isIdentChar(src[i]) {
		i++
	}
	l.pos = i
	return token{kind: tkWord, start: start, end: i}
}

// bitsLiteral scans x'…' or b'…' at l.pos. There are no escapes inside;
// a byte that is not a digit of the base is a syntax error.
func (l *lexer) bitsLiteral(digit func(byte) bool) token {
	src := l.src
	start := l.pos
	i := start + 2
	for i < len(src) && src[i] != '\'' {
		if !digit(src[i]) {
			l.bad = true
		}
		i++
	}
	if i == len(src) {
		l.bad = true
		l.pos = i
	} else {
		l.pos = i + 1
	}
	return token{kind: tkString, start: start, end: l.pos}
}

// dollarQuoted scans a MySQL 9 dollar-quoted string $tag$…$tag$ at l.pos,
// where tag is a possibly empty run of identifier bytes other than $. It
// reports false, scanning nothing, when the text there is not one, or in
// readings without dollar quoting. An unterminated one is a syntax error.
func (l *lexer) dollarQuoted() (token, bool) {
	src := l.src
	start := l.pos
	j := start + 1
	for j < len(src) && src[j] != '$' && isIdentChar(src[j]) {
		j++
	}
	if j == len(src) || src[j] != '$' {
		return token{}, false
	}
	l.sawDollar = true
	if !l.dollar {
		return token{}, false
	}
	tag := src[start : j+1]
	end := len(src)
	if k := strings.Index(src[j+1:], tag); k >= 0 {
		end = j + 1 + k + len(tag)
	} else {
		l.bad = true
	}
	l.pos = end
	return token{kind: tkString, start: start, end: end}, true
}
