package shard

import (
	"errors"
	"strconv"
	"strings"
)

// inlineAlgorithm is INLINE, ShardingSphere's InlineShardingAlgorithm:
// algorithm-expression, an inline expression such as
// t_order_${order_id % 4}, is evaluated with its one variable bound to
// the sharding value, and names the target. The variable is the sharding
// column; ShardingColumn reports it.
//
// The value may be an integer (of any Go kind, within int64), or a string
// or []byte: used whole (ds_${region}) it is its text; in arithmetic it
// must spell an integer. A range goes to every target when
// allow-range-query-with-inline-sharding is true and is an error
// otherwise, as in ShardingSphere.
type inlineAlgorithm struct {
	expr       string
	tmpl       *inlineTemplate
	column     string // the variable; empty for a constant expression
	allowRange bool
}

func newInlineAlgorithm(m map[string]string) (Algorithm, error) {
	p := algoProps{typ: "INLINE", m: m}
	const key = "algorithm-expression"
	expr, err := p.required(key)
	if err != nil {
		return nil, err
	}
	tmpl, err := parseInlineTemplate(expr, 0, expr)
	if err != nil {
		e := err.(*ExprError)
		return nil, p.errorf(key, expr, "%s at offset %d", e.Reason, e.Offset)
	}
	var vars []string
	for _, part := range tmpl.parts {
		if part.code == nil {
			continue
		}
		if part.code.kind == 'r' || part.code.kind == 'l' {
			return nil, p.errorf(key, expr, "a range or list at offset %d names several targets; "+
				"INLINE must name one (ranges and lists belong in actual-data-nodes)", part.code.off)
		}
		vars = part.code.vars(vars)
	}
	if len(vars) > 1 {
		return nil, p.errorf(key, expr, "uses %s; INLINE shards on one column", strings.Join(vars, " and "))
	}
	allow, err := p.optBoolProp("allow-range-query-with-inline-sharding", false)
	if err != nil {
		return nil, err
	}
	a := &inlineAlgorithm{expr: expr, tmpl: tmpl, allowRange: allow}
	if len(vars) == 1 {
		a.column = vars[0]
	}
	return a, nil
}

// ShardingColumn returns the variable of the expression: the sharding
// column it expects (empty for a constant expression).
func (a *inlineAlgorithm) ShardingColumn() string { return a.column }

func (a *inlineAlgorithm) String() string { return "INLINE(" + a.expr + ")" }

func (a *inlineAlgorithm) Shard(targets []string, v Value) (string, error) {
	b := inlineBinding{name: a.column, set: true}
	switch x := v.(type) {
	case string:
		b.value = inlineVal{str: true, s: x}
		b.value.i, b.value.num = int64Of(v)
	case []byte:
		b.value = inlineVal{str: true, s: string(x)}
		b.value.i, b.value.num = int64Of(v)
	default:
		i, ok := int64Of(v)
		if !ok {
			return "", valueError(a.name(), v, "is not an integer within int64, a string or []byte")
		}
		b.value.i = i
	}
	var buf [128]byte
	name := buf[:0]
	for _, part := range a.tmpl.parts {
		if part.code == nil {
			name = append(name, part.lit...)
			continue
		}
		x, err := part.code.eval(a.expr, b)
		if err != nil {
			e := err.(*ExprError)
			return "", valueError(a.name(), v, "cannot be used: "+e.Reason+" at offset "+strconv.Itoa(e.Offset))
		}
		name = x.appendTo(name)
	}
	for _, t := range targets {
		if t == string(name) {
			return t, nil
		}
	}
	return "", &targetError{msg: "rwshard: shard: " + a.name() + ": value " + describeValue(v) +
		" names " + strconv.Quote(string(name)) + ", not among " + describeTargets(targets)}
}

func (a *inlineAlgorithm) ShardRange(targets []string, _ Range) ([]string, error) {
	if a.allowRange {
		return targets, nil
	}
	col := a.column
	if col == "" {
		col = "its column"
	}
	return nil, errors.New("rwshard: shard: " + a.name() + ": a range query on " + col +
		" is not supported by an inline sharding algorithm; set allow-range-query-with-inline-sharding=true " +
		"to send it to every target")
}

func (a *inlineAlgorithm) name() string { return "INLINE " + a.expr }
