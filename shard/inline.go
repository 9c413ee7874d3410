package shard

import (
	"math"
	"strconv"
	"strings"
)

// Inline expressions are the subset of ShardingSphere's Groovy inline
// expressions that sharding configurations use. Text outside ${…} (or
// $->{…}) is literal; inside is code:
//
//	0..3  0..<4           an integer range (3..0 counts down)
//	['a', 'b']  [0, 2]    a list of strings or integers
//	order_id % 4          integer arithmetic: + - * / % and unary minus,
//	                      parentheses, integer literals, and one variable
//	'x' + 1               + joins strings when either side is a string
//
// / is integer division truncating toward zero and % the remainder with
// the sign of the dividend, as Java's long arithmetic has them (Groovy's
// / on integers yields a decimal, which no table name uses). Method
// calls, properties, closures and GString interpolation are not
// supported and are reported where they appear.
//
// Ranges and lists (only as the whole of a ${…}) expand: a template with
// several of them expands to their Cartesian product, the first varying
// slowest. A variable is bound to the sharding value when an INLINE
// algorithm evaluates the template.

// maxInlineExpansion bounds the number of names one expression expands
// to, and maxInlineDepth the nesting of its code.
const (
	maxInlineExpansion = 1 << 16
	maxInlineDepth     = 100
)

// ExprError reports an inline expression that cannot be parsed, expanded
// or evaluated.
type ExprError struct {
	Expr   string // the expression
	Offset int    // byte offset in Expr where the fault is
	Reason string
}

func (e *ExprError) Error() string {
	return "rwshard: shard: inline expression " + strconv.Quote(e.Expr) + ": " + e.Reason +
		" at offset " + strconv.Itoa(e.Offset)
}

// ExpandDataNodes expands a ShardingSphere actual-data-nodes expression:
// a comma-separated list of inline expressions, each naming
// data_source.table, such as
//
//	ds_${0..1}.t_order_${0..3}       ds_0.t_order_0, ds_0.t_order_1, …, ds_1.t_order_3
//	ds_${['a','b']}.t_${1..2}        ds_a.t_1, ds_a.t_2, ds_b.t_1, ds_b.t_2
//	ds_0.t_user, ds_1.t_user
//
// in the order written. A name without a dot is a table whose data
// source the caller supplies (DataSource is empty). Repeated nodes,
// empty names, names with white space or more than one dot are errors.
func ExpandDataNodes(expr string) ([]DataNode, error) {
	var nodes []DataNode
	seen := make(map[DataNode]struct{})
	err := expandInline(expr, func(s string, off int) error {
		var n DataNode
		switch i := strings.IndexByte(s, '.'); {
		case i < 0:
			n.Table = s
		case strings.IndexByte(s[i+1:], '.') >= 0:
			return &ExprError{Expr: expr, Offset: off, Reason: strconv.Quote(s) + " has more than one dot (want data_source.table)"}
		default:
			n.DataSource, n.Table = s[:i], s[i+1:]
			if n.DataSource == "" {
				return &ExprError{Expr: expr, Offset: off, Reason: strconv.Quote(s) + " has no data source before the dot"}
			}
		}
		if n.Table == "" {
			return &ExprError{Expr: expr, Offset: off, Reason: strconv.Quote(s) + " has no table name"}
		}
		if strings.ContainsAny(s, " \t\r\n") {
			return &ExprError{Expr: expr, Offset: off, Reason: strconv.Quote(s) + " contains white space"}
		}
		if _, dup := seen[n]; dup {
			return &ExprError{Expr: expr, Offset: off, Reason: "data node " + n.String() + " repeats"}
		}
		seen[n] = struct{}{}
		nodes = append(nodes, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return nodes, nil
}

// expandInline expands a comma-separated list of inline expressions,
// calling emit with each name and the offset of the item it came from.
func expandInline(expr string, emit func(name string, off int) error) error {
	items, err := splitInlineList(expr)
	if err != nil {
		return err
	}
	total := 0
	for _, it := range items {
		tmpl, err := parseInlineTemplate(expr, it.off, it.text)
		if err != nil {
			return err
		}
		// Each part's values; a literal part has one.
		values := make([][]string, len(tmpl.parts))
		count := 1
		for i, part := range tmpl.parts {
			if part.code == nil {
				values[i] = []string{part.lit}
				continue
			}
			vs, err := part.code.expand(expr)
			if err != nil {
				return err
			}
			if len(vs) == 0 {
				return &ExprError{Expr: expr, Offset: part.code.off, Reason: "expands to nothing"}
			}
			values[i] = vs
			if count > maxInlineExpansion/len(vs) {
				count = maxInlineExpansion + 1
			} else {
				count *= len(vs)
			}
		}
		if total += count; total > maxInlineExpansion {
			return &ExprError{Expr: expr, Offset: it.off, Reason: "expands to more than " + strconv.Itoa(maxInlineExpansion) + " names"}
		}
		// Odometer over the parts, the last one turning fastest.
		idx := make([]int, len(values))
		var b strings.Builder
		for {
			b.Reset()
			for i, vs := range values {
				b.WriteString(vs[idx[i]])
			}
			if err := emit(b.String(), it.off); err != nil {
				return err
			}
			i := len(idx) - 1
			for ; i >= 0; i-- {
				if idx[i]++; idx[i] < len(values[i]) {
					break
				}
				idx[i] = 0
			}
			if i < 0 {
				break
			}
		}
	}
	return nil
}

type inlineItem struct {
	text string
	off  int // of text in the whole expression
}

// splitInlineList splits expr at the commas outside ${…}, trimming white
// space around each item.
func splitInlineList(expr string) ([]inlineItem, error) {
	var items []inlineItem
	add := func(start, end int) error {
		s := expr[start:end]
		lead := len(s) - len(strings.TrimLeft(s, " \t\r\n"))
		s = strings.TrimSpace(s)
		if s == "" {
			return &ExprError{Expr: expr, Offset: start, Reason: "empty item"}
		}
		items = append(items, inlineItem{text: s, off: start + lead})
		return nil
	}
	start := 0
	for i := 0; i < len(expr); {
		if open, code := inlineOpen(expr, i); open {
			end, err := inlineClose(expr, i, code)
			if err != nil {
				return nil, err
			}
			i = end + 1
			continue
		}
		if expr[i] == ',' {
			if err := add(start, i); err != nil {
				return nil, err
			}
			start = i + 1
		}
		i++
	}
	if err := add(start, len(expr)); err != nil {
		return nil, err
	}
	return items, nil
}

// inlineOpen reports whether a ${ or $->{ starts at s[i], and where its
// code starts.
func inlineOpen(s string, i int) (bool, int) {
	if s[i] != '$' {
		return false, 0
	}
	if strings.HasPrefix(s[i+1:], "{") {
		return true, i + 2
	}
	if strings.HasPrefix(s[i+1:], "->{") {
		return true, i + 4
	}
	return false, 0
}

// inlineClose returns the offset of the } that closes the ${ at s[open]
// whose code starts at s[code], skipping quoted text and nested braces.
func inlineClose(s string, open, code int) (int, error) {
	depth := 0
	var quote byte
	for j := code; j < len(s); j++ {
		c := s[j]
		switch {
		case quote != 0:
			if c == '\\' {
				j++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			if depth == 0 {
				return j, nil
			}
			depth--
		}
	}
	return 0, &ExprError{Expr: s, Offset: open, Reason: "unterminated " + s[open:code]}
}

// inlineTemplate is one inline expression: literal text and code parts.
type inlineTemplate struct {
	parts []inlinePart
}

type inlinePart struct {
	lit  string
	code *inlineNode // nil for literal text
}

// parseInlineTemplate parses text, found at offset base of the whole
// expression expr (for messages).
func parseInlineTemplate(expr string, base int, text string) (*inlineTemplate, error) {
	t := &inlineTemplate{}
	lit := 0
	for i := 0; i < len(text); {
		open, code := inlineOpen(text, i)
		if !open {
			i++
			continue
		}
		if lit < i {
			t.parts = append(t.parts, inlinePart{lit: text[lit:i]})
		}
		end, err := inlineClose(text, i, code)
		if err != nil {
			return nil, &ExprError{Expr: expr, Offset: base + i, Reason: err.(*ExprError).Reason}
		}
		p := &inlineParser{expr: expr, src: text[code:end], base: base + code, open: base + i}
		n, err := p.parse()
		if err != nil {
			return nil, err
		}
		t.parts = append(t.parts, inlinePart{code: n})
		i = end + 1
		lit = i
	}
	if lit < len(text) {
		t.parts = append(t.parts, inlinePart{lit: text[lit:]})
	}
	return t, nil
}

// inlineNode is a node of the code of a ${…}.
type inlineNode struct {
	kind byte // 'i' integer, 's' string, 'v' variable, '-' negation, 'b' binary, 'r' range, 'l' list
	op   byte // of a binary node: + - * / %
	excl bool // of a range: ..< (upper bound excluded)
	i    int64
	s    string // string literal, or variable name
	kids []*inlineNode
	off  int // in the whole expression
}

type inlineParser struct {
	expr  string // the whole expression, for messages
	src   string // the code
	base  int    // offset of src in expr
	open  int    // offset in expr of the $ that opens the code
	pos   int
	depth int
}

func (p *inlineParser) errAt(pos int, reason string) error {
	return &ExprError{Expr: p.expr, Offset: p.base + pos, Reason: reason}
}

func (p *inlineParser) parse() (*inlineNode, error) {
	p.skipSpace()
	if p.pos == len(p.src) {
		return nil, &ExprError{Expr: p.expr, Offset: p.open, Reason: "empty ${}"}
	}
	n, err := p.element()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return nil, p.errAt(p.pos, "unexpected "+strconv.Quote(p.src[p.pos:p.pos+1]))
	}
	if err := p.checkNesting(n, true); err != nil {
		return nil, err
	}
	return n, nil
}

// checkNesting allows a range or a list only as the whole code, and only
// scalars in a list.
func (p *inlineParser) checkNesting(n *inlineNode, root bool) error {
	if (n.kind == 'r' || n.kind == 'l') && !root {
		return &ExprError{Expr: p.expr, Offset: n.off, Reason: "a range or list must be the whole ${} code"}
	}
	if n.kind == 'i' && n.op == 'O' {
		return &ExprError{Expr: p.expr, Offset: n.off, Reason: "integer out of range"}
	}
	for _, k := range n.kids {
		if err := p.checkNesting(k, false); err != nil {
			return err
		}
	}
	return nil
}

func (p *inlineParser) skipSpace() {
	for p.pos < len(p.src) && strings.IndexByte(" \t\r\n", p.src[p.pos]) >= 0 {
		p.pos++
	}
}

// peek returns the next operator token ("..<", "..", or one character)
// without consuming it; "" at the end.
func (p *inlineParser) peek() string {
	p.skipSpace()
	s := p.src[p.pos:]
	switch {
	case s == "":
		return ""
	case strings.HasPrefix(s, "..<"):
		return "..<"
	case strings.HasPrefix(s, ".."):
		return ".."
	}
	return s[:1]
}

func (p *inlineParser) enter() error {
	if p.depth++; p.depth > maxInlineDepth {
		return p.errAt(p.pos, "nested too deeply")
	}
	return nil
}

// element := additive [ (".." | "..<") additive ]
func (p *inlineParser) element() (*inlineNode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	start := p.pos
	lo, err := p.additive()
	if err != nil {
		return nil, err
	}
	op := p.peek()
	if op != ".." && op != "..<" {
		return lo, nil
	}
	p.pos += len(op)
	hi, err := p.additive()
	if err != nil {
		return nil, err
	}
	return &inlineNode{kind: 'r', excl: op == "..<", kids: []*inlineNode{lo, hi}, off: p.base + start}, nil
}

// additive := multiplicative { ("+" | "-") multiplicative }
func (p *inlineParser) additive() (*inlineNode, error) {
	return p.binary("+-", p.multiplicative)
}

// multiplicative := unary { ("*" | "/" | "%") unary }
func (p *inlineParser) multiplicative() (*inlineNode, error) {
	return p.binary("*/%", p.unary)
}

// binary parses operand { op operand }, op one of the one-character
// operators in ops, grouping from the left.
func (p *inlineParser) binary(ops string, operand func() (*inlineNode, error)) (*inlineNode, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		if len(op) != 1 || strings.IndexByte(ops, op[0]) < 0 {
			return l, nil
		}
		off := p.pos
		p.pos++
		r, err := operand()
		if err != nil {
			return nil, err
		}
		l = &inlineNode{kind: 'b', op: op[0], kids: []*inlineNode{l, r}, off: p.base + off}
	}
}

// unary := ("-" | "+") unary | primary
func (p *inlineParser) unary() (*inlineNode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	switch p.peek() {
	case "-":
		off := p.pos
		p.pos++
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		if x.kind == 'i' { // a negative literal, so -9223372036854775808 reads
			x.i, x.off, x.op = -x.i, p.base+off, 0
			return x, nil
		}
		return &inlineNode{kind: '-', kids: []*inlineNode{x}, off: p.base + off}, nil
	case "+":
		p.pos++
		return p.unary()
	}
	return p.primary()
}

// primary := integer | string | name | "(" element ")" | "[" [ element { "," element } [","] ] "]"
func (p *inlineParser) primary() (*inlineNode, error) {
	p.skipSpace()
	if p.pos == len(p.src) {
		return nil, p.errAt(p.pos, "unexpected end of ${} code")
	}
	start := p.pos
	c := p.src[p.pos]
	switch {
	case asciiDigit(c):
		return p.integer()
	case c == '\'' || c == '"':
		return p.str()
	case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		for p.pos < len(p.src) && (p.src[p.pos] == '_' || asciiDigit(p.src[p.pos]) ||
			'a' <= p.src[p.pos]|0x20 && p.src[p.pos]|0x20 <= 'z') {
			p.pos++
		}
		name := p.src[start:p.pos]
		if next := p.peek(); next == "(" || next == "." {
			return nil, p.errAt(p.pos, "method calls and properties are not supported ("+name+next+")")
		}
		return &inlineNode{kind: 'v', s: name, off: p.base + start}, nil
	case c == '(':
		p.pos++
		n, err := p.element()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, p.errAt(p.pos, "missing )")
		}
		p.pos++
		return n, nil
	case c == '[':
		p.pos++
		n := &inlineNode{kind: 'l', off: p.base + start}
		for p.peek() != "]" {
			if p.pos == len(p.src) {
				return nil, p.errAt(p.pos, "missing ]")
			}
			e, err := p.element()
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, e)
			if p.peek() == "," {
				p.pos++
			} else if p.peek() != "]" {
				return nil, p.errAt(p.pos, "want , or ] in list")
			}
		}
		p.pos++
		return n, nil
	case c == '.':
		return nil, p.errAt(p.pos, "method calls and properties are not supported")
	}
	return nil, p.errAt(p.pos, "unexpected "+strconv.Quote(p.src[p.pos:p.pos+1]))
}

func (p *inlineParser) integer() (*inlineNode, error) {
	start := p.pos
	var v uint64
	for p.pos < len(p.src) && asciiDigit(p.src[p.pos]) {
		d := uint64(p.src[p.pos] - '0')
		if v > (1<<63-d)/10 {
			return nil, p.errAt(start, "integer out of range")
		}
		v = v*10 + d
		p.pos++
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'L' || p.src[p.pos] == 'l') {
		p.pos++ // a Groovy long literal
	}
	n := &inlineNode{kind: 'i', i: int64(v), off: p.base + start}
	if v == 1<<63 {
		n.op = 'O' // only valid negated: unary minus clears the mark
	}
	return n, nil
}

func (p *inlineParser) str() (*inlineNode, error) {
	start := p.pos
	quote := p.src[p.pos]
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			return nil, p.errAt(start, "unterminated string")
		}
		c := p.src[p.pos]
		switch {
		case c == quote:
			p.pos++
			return &inlineNode{kind: 's', s: b.String(), off: p.base + start}, nil
		case c == '\\':
			if p.pos+1 >= len(p.src) {
				return nil, p.errAt(start, "unterminated string")
			}
			e := p.src[p.pos+1]
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\', '\'', '"', '$':
				b.WriteByte(e)
			default:
				return nil, p.errAt(p.pos, "unknown escape \\"+string(e))
			}
			p.pos += 2
		case c == '$' && quote == '"':
			return nil, p.errAt(p.pos, "interpolation in a \"string\" is not supported")
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// inlineVal is the value of scalar code: an integer or a string. A
// string from the bound sharding value that spells an integer (num) is
// that integer in arithmetic.
type inlineVal struct {
	str bool
	num bool
	s   string
	i   int64
}

func (v inlineVal) appendTo(b []byte) []byte {
	if v.str {
		return append(b, v.s...)
	}
	return strconv.AppendInt(b, v.i, 10)
}

func (v inlineVal) text() string {
	if v.str {
		return v.s
	}
	return strconv.FormatInt(v.i, 10)
}

// inlineBinding binds the variable of an INLINE expression to a value.
type inlineBinding struct {
	name  string
	value inlineVal
	set   bool
}

// expand returns the names code stands for, with no variable bound.
func (n *inlineNode) expand(expr string) ([]string, error) {
	switch n.kind {
	case 'r':
		lo, err := n.kids[0].eval(expr, inlineBinding{})
		if err != nil {
			return nil, err
		}
		hi, err := n.kids[1].eval(expr, inlineBinding{})
		if err != nil {
			return nil, err
		}
		if lo.str || hi.str {
			return nil, &ExprError{Expr: expr, Offset: n.off, Reason: "range bounds must be integers"}
		}
		step := int64(1)
		if hi.i < lo.i {
			step = -1
		}
		if n.excl {
			if lo.i == hi.i {
				return []string{}, nil
			}
			hi.i -= step // Groovy: 3..<0 is 3, 2, 1
		}
		span := uint64(hi.i) - uint64(lo.i)
		if step < 0 {
			span = uint64(lo.i) - uint64(hi.i)
		}
		if span >= maxInlineExpansion {
			return nil, &ExprError{Expr: expr, Offset: n.off, Reason: "range has more than " + strconv.Itoa(maxInlineExpansion) + " values"}
		}
		var out []string
		for x := lo.i; ; x += step {
			out = append(out, strconv.FormatInt(x, 10))
			if x == hi.i {
				return out, nil
			}
		}
	case 'l':
		out := make([]string, 0, len(n.kids))
		for _, k := range n.kids {
			v, err := k.eval(expr, inlineBinding{})
			if err != nil {
				return nil, err
			}
			out = append(out, v.text())
		}
		return out, nil
	}
	v, err := n.eval(expr, inlineBinding{})
	if err != nil {
		return nil, err
	}
	return []string{v.text()}, nil
}

// eval computes scalar code.
func (n *inlineNode) eval(expr string, b inlineBinding) (inlineVal, error) {
	switch n.kind {
	case 'i':
		return inlineVal{i: n.i}, nil
	case 's':
		return inlineVal{str: true, s: n.s}, nil
	case 'v':
		if !b.set || b.name != n.s {
			return inlineVal{}, &ExprError{Expr: expr, Offset: n.off, Reason: "variable " + n.s + " has no value here"}
		}
		return b.value, nil
	case '-':
		x, err := n.kids[0].eval(expr, b)
		if err != nil {
			return x, err
		}
		if x.str && !x.num {
			return inlineVal{}, &ExprError{Expr: expr, Offset: n.off, Reason: "cannot negate string " + strconv.Quote(x.s)}
		}
		return inlineVal{i: -x.i}, nil
	case 'b':
		l, err := n.kids[0].eval(expr, b)
		if err != nil {
			return l, err
		}
		r, err := n.kids[1].eval(expr, b)
		if err != nil {
			return r, err
		}
		if n.op == '+' && (l.str && !l.num || r.str && !r.num) {
			return inlineVal{str: true, s: l.text() + r.text()}, nil
		}
		for _, x := range [2]inlineVal{l, r} {
			if x.str && !x.num {
				return inlineVal{}, &ExprError{Expr: expr, Offset: n.off, Reason: "operator " + string(n.op) + " wants integers, not " + strconv.Quote(x.s)}
			}
		}
		switch n.op {
		case '+':
			return inlineVal{i: l.i + r.i}, nil
		case '-':
			return inlineVal{i: l.i - r.i}, nil
		case '*':
			return inlineVal{i: l.i * r.i}, nil
		}
		if r.i == 0 {
			return inlineVal{}, &ExprError{Expr: expr, Offset: n.off, Reason: "division by zero"}
		}
		if l.i == math.MinInt64 && r.i == -1 { // Java wraps; Go would too, but be explicit
			if n.op == '/' {
				return inlineVal{i: math.MinInt64}, nil
			}
			return inlineVal{i: 0}, nil
		}
		if n.op == '/' {
			return inlineVal{i: l.i / r.i}, nil
		}
		return inlineVal{i: l.i % r.i}, nil
	}
	return inlineVal{}, &ExprError{Expr: expr, Offset: n.off, Reason: "a range or list cannot be evaluated to one name"}
}

// vars adds the names of the variables of n to names.
func (n *inlineNode) vars(names []string) []string {
	if n.kind == 'v' && !containsString(names, n.s) {
		names = append(names, n.s)
	}
	for _, k := range n.kids {
		names = k.vars(names)
	}
	return names
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
