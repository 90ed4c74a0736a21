package lndl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Bounds of [ParseCall]. A body beyond one of them is rejected with an
// [InvalidConstructorError] whose reason matches [ErrCallLimit].
const (
	// MaxCallBodyLen is the longest lact body accepted, in bytes.
	MaxCallBodyLen = 1 << 20
	// MaxCallDepth is the deepest nesting of brackets (parentheses,
	// square brackets and braces, the call's own parentheses included).
	MaxCallDepth = 32
	// MaxCallIntDigits is the most decimal digits an integer argument may
	// have (Python's default limit for integer/string conversion).
	MaxCallIntDigits = 4300
)

// ErrCallLimit is matched (errors.Is) by the reason of an
// [InvalidConstructorError] for a body that exceeds one of the bounds
// [MaxCallBodyLen], [MaxCallDepth] or [MaxCallIntDigits].
var ErrCallLimit = errors.New("lndl: lact body exceeds a parser bound")

// Call is a parsed lact body: the function to run and its arguments.
type Call struct {
	// Function is `fn`, or `svc.fn` when the callee is an attribute of a
	// name or of another attribute (`a.b.c.tool()` gives `c.tool`).
	Function string
	// Arguments maps argument names to JSON-compatible values: nil, bool,
	// string, json.Number, []any and map[string]any. Positional arguments
	// are named _pos_0, _pos_1, ...; it is never nil.
	Arguments map[string]any
}

// acceptedKeywords are the Python keywords accepted as argument names,
// kept as written (LNDL-D6).
var acceptedKeywords = map[string]bool{
	"from": true, "import": true, "class": true, "def": true,
	"return": true, "yield": true, "async": true, "await": true,
}

// pythonKeywords are Python's reserved words: never names, and as
// argument names only the ones in acceptedKeywords.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true,
	"assert": true, "async": true, "await": true, "break": true, "class": true,
	"continue": true, "def": true, "del": true, "elif": true, "else": true,
	"except": true, "finally": true, "for": true, "from": true, "global": true,
	"if": true, "import": true, "in": true, "is": true, "lambda": true,
	"nonlocal": true, "not": true, "or": true, "pass": true, "raise": true,
	"return": true, "try": true, "while": true, "with": true, "yield": true,
}

// ParseCall parses a lact body, one Python call expression whose
// arguments are literals, into a [Call]. alias names the lact in the
// error.
//
// The body is read as Python reads an expression: the callee is a name
// or an attribute (`svc.fn`); a receiver that is not a name or attribute
// (`x[0].tool()`, `"s".join()`) is dropped from the function name.
// Arguments are literals: strings in every quoting (raw, triple-quoted,
// implicitly concatenated; `\N{...}` escapes are not supported), integers
// (decimal, 0x, 0o, 0b, underscores, a sign), finite floats, True, False,
// None and true, false, null, lists, tuples (as arrays) and dicts (integer,
// boolean, None and float keys written as JSON writes them). Line breaks,
// trailing commas and comments are allowed. The keywords from, import,
// class, def, return, yield, async and await are accepted as argument
// names (LNDL-D6).
//
// Names, operators, nested calls, f-strings, lambdas, *args, **kwargs
// and leading white space are errors, and so are values JSON cannot hold
// (sets, bytes, complex numbers such as `1+2j`, `...`, non-finite numbers,
// tuple dict keys; LNDL-D12) unless a later duplicate keyword or dict key
// replaces them, as in Python, where the check applies to the final
// arguments. Receivers are parsed with the same small grammar, so a receiver
// using an operator or a comprehension is rejected although Python would
// accept it. Identifiers are not NFKC-normalized.
//
// Every error is an *[InvalidConstructorError] with Alias and Body set;
// its Err says why. Bodies longer than [MaxCallBodyLen], nested deeper
// than [MaxCallDepth] or holding an integer longer than
// [MaxCallIntDigits] decimal digits are rejected (Err matches
// [ErrCallLimit]).
func ParseCall(alias, body string) (Call, error) {
	c, err := parseCall(body)
	if err != nil {
		return Call{}, &InvalidConstructorError{Alias: alias, Body: body, Err: err}
	}
	return c, nil
}

func parseCall(body string) (Call, error) {
	if len(body) > MaxCallBodyLen {
		return Call{}, fmt.Errorf("body of %d bytes exceeds %d bytes: %w", len(body), MaxCallBodyLen, ErrCallLimit)
	}
	if !utf8.ValidString(body) {
		return Call{}, errors.New("body is not valid UTF-8")
	}
	if i := strings.IndexByte(body, 0); i >= 0 {
		return Call{}, newCallError(body, i, false, "source cannot contain null bytes")
	}
	// Python reads \r\n and a lone \r as \n.
	src := body
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	sc := getCallScratch()
	defer sc.release()
	toks, opens, err := lexCall(src, sc.toks[:0], sc.opens)
	sc.toks, sc.opens = toks, opens
	if err != nil {
		return Call{}, err
	}
	if cap(sc.nodes) < len(toks) {
		// A node is made from a token, so the slab rarely grows.
		sc.nodes = make([]callNode, 0, min(len(toks), 1024))
	}
	p := &callParser{src: src, toks: toks, slab: sc.nodes[:0]}
	defer func() { sc.nodes = p.slab }()
	n, err := p.expr()
	if err != nil {
		return Call{}, err
	}
	for p.peek().kind == ctNewline {
		p.i++
	}
	if t := p.peek(); t.kind != ctEOF {
		return Call{}, p.unexpected(t)
	}
	if n.kind != nodeCall {
		return Call{}, newCallError(src, n.pos, false, "not a function call")
	}
	fn, err := functionName(src, n.fn)
	if err != nil {
		return Call{}, err
	}
	// Every value must be a literal, even one a later duplicate replaces;
	// only the values that remain must be representable in JSON.
	path := &argPath{steps: sc.steps[:0]}
	defer func() { sc.steps = path.steps }()
	for i, a := range n.args {
		path.push(argStep{kind: stepPositional, index: i})
		if err := checkLiteral(src, a, path); err != nil {
			return Call{}, err
		}
		path.pop()
	}
	for _, kw := range n.kws {
		path.push(argStep{kind: stepArgument, key: kw.name})
		if err := checkLiteral(src, kw.value, path); err != nil {
			return Call{}, err
		}
		path.pop()
	}
	// The final arguments in first-seen order, each with its last value:
	// found by scanning while few, through an index beyond.
	var finalBuf [8]finalArg
	final := finalBuf[:0]
	var index map[string]int
	set := func(key string, v *callNode) {
		if index != nil {
			if i, ok := index[key]; ok {
				final[i].value = v
				return
			}
			index[key] = len(final)
		} else {
			for i := range final {
				if final[i].key == key {
					final[i].value = v
					return
				}
			}
			if len(final) == finalArgScan {
				index = make(map[string]int, len(n.args)+len(n.kws))
				for i := range final {
					index[final[i].key] = i
				}
				index[key] = len(final)
			}
		}
		final = append(final, finalArg{key, v})
	}
	for i, a := range n.args {
		set("_pos_"+strconv.Itoa(i), a)
	}
	for _, kw := range n.kws {
		set(kw.name, kw.value)
	}
	args := make(map[string]any, len(final))
	for _, fa := range final {
		key := fa.key
		path.push(argStep{kind: stepArgument, key: key})
		v, err := jsonValue(src, fa.value, path)
		if err != nil {
			return Call{}, err
		}
		path.pop()
		args[key] = v
	}
	return Call{Function: fn, Arguments: args}, nil
}

// finalArg is an argument of the final call: its key and its last value.
type finalArg struct {
	key   string
	value *callNode
}

// finalArgScan is how many distinct arguments are found by scanning
// before an index is built.
const finalArgScan = 16

// callScratch is the scratch space of one parse: the tokens and the node
// slab. Parses reuse it through callScratchPool; nothing a parse returns
// refers to it.
type callScratch struct {
	toks  []callTok
	nodes []callNode
	opens []int     // offsets of open brackets, for the lexer
	steps []argStep // the path to the argument being converted
}

// maxPooledCallItems bounds the tokens and nodes a pooled scratch keeps
// (about 90 KB in all); a larger one is left to the garbage collector.
const maxPooledCallItems = 256

var callScratchPool = sync.Pool{New: func() any { return new(callScratch) }}

func getCallScratch() *callScratch { return callScratchPool.Get().(*callScratch) }

// release clears the scratch, so that it keeps no body alive, and pools
// it when it is small enough.
func (sc *callScratch) release() {
	if cap(sc.toks) > maxPooledCallItems || cap(sc.nodes) > maxPooledCallItems ||
		cap(sc.opens) > MaxCallDepth || cap(sc.steps) > maxPooledCallItems {
		return
	}
	clear(sc.toks)
	clear(sc.nodes)
	clear(sc.steps[:cap(sc.steps)])
	sc.toks, sc.nodes, sc.opens, sc.steps = sc.toks[:0], sc.nodes[:0], sc.opens[:0], sc.steps[:0]
	callScratchPool.Put(sc)
}

// functionName names the callee: `fn`, `svc.fn`, or `fn` when the
// receiver is neither a name nor an attribute.
func functionName(src string, fn *callNode) (string, error) {
	switch fn.kind {
	case nodeName:
		return fn.name, nil
	case nodeAttr:
		switch fn.x.kind {
		case nodeName:
			// Written without spaces, the name is a piece of the body.
			x := fn.x
			if end := x.pos + len(x.name) + 1 + len(fn.name); end <= len(src) &&
				src[x.pos:x.pos+len(x.name)] == x.name && src[x.pos+len(x.name)] == '.' &&
				src[end-len(fn.name):end] == fn.name {
				return src[x.pos:end], nil
			}
			return fn.x.name + "." + fn.name, nil
		case nodeAttr:
			return fn.x.name + "." + fn.name, nil
		}
		return fn.name, nil
	}
	return "", newCallError(src, fn.pos, false, "unsupported callee: %s", fn.kind)
}

// nodeKind is the kind of a parsed expression.
type nodeKind int

const (
	nodeConst nodeKind = iota
	nodeName
	nodeAttr
	nodeCall
	nodeSubscript
	nodeList
	nodeTuple
	nodeDict
	nodeSet
	nodeUnary
)

func (k nodeKind) String() string {
	return [...]string{"constant", "name", "attribute", "call", "subscript", "list", "tuple", "dict", "set", "unary operation"}[k]
}

// constKind is the type of a constant.
type constKind int

const (
	constNone constKind = iota
	constBool
	constStr
	constBytes
	constInt
	constFloat
	constComplex
	constEllipsis
)

// callNode is a parsed expression of a lact body.
type callNode struct {
	kind nodeKind
	pos  int
	// nodeConst
	ck    constKind
	b     bool
	s     string // string value; decimal text of an integer
	f     float64
	units []rune // a string holding surrogates before pairing
	// nodeName: the name; nodeAttr: the attribute.
	name string
	// nodeAttr, nodeSubscript, nodeUnary: the operand.
	x  *callNode
	op byte
	// nodeCall
	fn   *callNode
	args []*callNode
	kws  []callKeyword
	// nodeList, nodeTuple, nodeSet: elements; nodeDict: keys and values.
	elts []*callNode
	vals []*callNode
}

type callKeyword struct {
	name  string
	value *callNode
}

// callParser is a recursive-descent parser over the tokens of a body.
// Recursion is bounded by MaxCallDepth, which the lexer enforces on
// brackets.
type callParser struct {
	src  string
	toks []callTok // ending with a ctEOF token
	i    int
	slab []callNode
}

// peek returns the current token; the token list ends with a ctEOF token,
// which peek keeps returning at the end. The token must not be modified.
func (p *callParser) peek() *callTok {
	if p.i < len(p.toks) {
		return &p.toks[p.i]
	}
	return &p.toks[len(p.toks)-1]
}

func (p *callParser) next() *callTok {
	t := p.peek()
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

// node returns a new node holding n, carved from the parser's slab so
// that a body's nodes take a few allocations in all.
func (p *callParser) node(n callNode) *callNode {
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]callNode, 0, min(max(2*cap(p.slab), 4), 256))
	}
	p.slab = append(p.slab, n)
	return &p.slab[len(p.slab)-1]
}

func (p *callParser) isOp(text string) bool {
	t := p.peek()
	return t.kind == ctOp && t.text == text
}

func (p *callParser) unexpected(t *callTok) error {
	switch t.kind {
	case ctEOF:
		return newCallError(p.src, t.pos, false, "unexpected end of body")
	case ctNewline:
		return newCallError(p.src, t.pos, false, "unexpected line break")
	case ctName:
		return newCallError(p.src, t.pos, false, "unexpected name '%s'", t.text)
	case ctNumber:
		return newCallError(p.src, t.pos, false, "unexpected number")
	case ctString:
		return newCallError(p.src, t.pos, false, "unexpected string")
	}
	return newCallError(p.src, t.pos, false, "unexpected '%s'", t.text)
}

func (p *callParser) expect(op string) error {
	if t := p.next(); t.kind != ctOp || t.text != op {
		return p.unexpected(t)
	}
	return nil
}

// expr parses an optional sign and a primary expression, and rejects a
// following operator or keyword (operators and conditional expressions
// are not literals).
func (p *callParser) expr() (*callNode, error) {
	var n *callNode
	if t := p.peek(); t.kind == ctOp && (t.text == "-" || t.text == "+") {
		p.i++
		x, err := p.primary()
		if err != nil {
			return nil, err
		}
		n = p.node(callNode{kind: nodeUnary, pos: t.pos, op: t.text[0], x: x})
	} else {
		var err error
		if n, err = p.primary(); err != nil {
			return nil, err
		}
	}
	t := p.peek()
	if t.kind == ctOp && (t.text == "+" || t.text == "-") && isRealNumber(n) {
		// `1+2j`: Python's literal rules allow a real number plus or
		// minus an imaginary one (a complex, which JSON cannot hold).
		p.i++
		im, err := p.primary()
		if err != nil {
			return nil, err
		}
		if im.kind != nodeConst || im.ck != constComplex {
			return nil, newCallError(p.src, t.pos, false, "operator '%s' is not supported", t.text)
		}
		n = p.node(callNode{kind: nodeConst, pos: n.pos, ck: constComplex})
		t = p.peek()
	}
	switch {
	case t.kind == ctOp && (t.text == "+" || t.text == "-" || t.text == "*" || t.text == "**"):
		return nil, newCallError(p.src, t.pos, false, "operator '%s' is not supported", t.text)
	case t.kind == ctName && pythonKeywords[t.text]:
		return nil, newCallError(p.src, t.pos, false, "keyword '%s' is not supported here", t.text)
	}
	return n, nil
}

// isRealNumber reports whether n is an int or float constant, possibly
// signed.
func isRealNumber(n *callNode) bool {
	if n.kind == nodeUnary {
		n = n.x
	}
	return n.kind == nodeConst && (n.ck == constInt || n.ck == constFloat)
}

// primary parses an atom followed by attribute, call and subscript
// trailers.
func (p *callParser) primary() (*callNode, error) {
	n, err := p.atom()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != ctOp {
			return n, nil
		}
		switch t.text {
		case ".":
			p.i++
			name := p.next()
			if name.kind != ctName || pythonKeywords[name.text] {
				return nil, p.unexpected(name)
			}
			n = p.node(callNode{kind: nodeAttr, pos: t.pos, name: name.text, x: n})
		case "(":
			p.i++
			c, err := p.callArgs(n, t.pos)
			if err != nil {
				return nil, err
			}
			n = c
		case "[":
			p.i++
			if err := p.subscript(); err != nil {
				return nil, err
			}
			n = p.node(callNode{kind: nodeSubscript, pos: t.pos, x: n})
		default:
			return n, nil
		}
	}
}

// subscript parses the inside of `[...]` after a primary (indices and
// slices, which only receivers use) and the closing bracket.
func (p *callParser) subscript() error {
	for !p.isOp("]") {
		if !p.isOp(":") {
			if _, err := p.expr(); err != nil {
				return err
			}
		}
		for p.isOp(":") {
			p.i++
			if !p.isOp(":") && !p.isOp(",") && !p.isOp("]") {
				if _, err := p.expr(); err != nil {
					return err
				}
			}
		}
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	return p.expect("]")
}

// callArgs parses the arguments of a call after its `(`.
func (p *callParser) callArgs(fn *callNode, pos int) (*callNode, error) {
	c := p.node(callNode{kind: nodeCall, pos: pos, fn: fn})
	for !p.isOp(")") {
		t := p.peek()
		if t.kind == ctOp && t.text == "*" {
			return nil, newCallError(p.src, t.pos, false, "*args is not supported")
		}
		if t.kind == ctOp && t.text == "**" {
			return nil, newCallError(p.src, t.pos, false, "**kwargs is not supported")
		}
		if t.kind == ctName && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == ctOp && p.toks[p.i+1].text == "=" {
			if pythonKeywords[t.text] && !acceptedKeywords[t.text] {
				return nil, newCallError(p.src, t.pos, false, "keyword '%s' cannot be an argument name", t.text)
			}
			p.i += 2
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			c.kws = append(c.kws, callKeyword{name: t.text, value: v})
		} else {
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			if len(c.kws) > 0 {
				return nil, newCallError(p.src, t.pos, false, "positional argument follows keyword argument")
			}
			c.args = append(c.args, v)
		}
		if !p.isOp(",") {
			break
		}
		p.i++
	}
	if err := p.expect(")"); err != nil {
		return nil, err
	}
	return c, nil
}

// atom parses a name, a constant or a bracketed display.
func (p *callParser) atom() (*callNode, error) {
	t := p.next()
	switch t.kind {
	case ctName:
		switch t.text {
		case "None":
			return p.node(callNode{kind: nodeConst, pos: t.pos, ck: constNone}), nil
		case "True", "False":
			return p.node(callNode{kind: nodeConst, pos: t.pos, ck: constBool, b: t.text == "True"}), nil
		}
		if pythonKeywords[t.text] {
			return nil, newCallError(p.src, t.pos, false, "keyword '%s' is not supported here", t.text)
		}
		return p.node(callNode{kind: nodeName, pos: t.pos, name: t.text}), nil
	case ctNumber:
		n := p.node(callNode{kind: nodeConst, pos: t.pos})
		switch {
		case t.num.imag:
			n.ck = constComplex
		case t.num.isInt:
			n.ck, n.s = constInt, t.num.text
		default:
			n.ck, n.f = constFloat, t.num.f
		}
		return n, nil
	case ctString:
		return p.strings(t)
	case ctOp:
		switch t.text {
		case "...":
			return p.node(callNode{kind: nodeConst, pos: t.pos, ck: constEllipsis}), nil
		case "(":
			return p.parens(t.pos)
		case "[":
			elts, _, err := p.exprList("]")
			if err != nil {
				return nil, err
			}
			return p.node(callNode{kind: nodeList, pos: t.pos, elts: elts}), nil
		case "{":
			return p.braces(t.pos)
		case "*", "**":
			return nil, newCallError(p.src, t.pos, false, "unpacking is not supported")
		}
	}
	return nil, p.unexpected(t)
}

// strings joins adjacent string literals, starting with first.
func (p *callParser) strings(first *callTok) (*callNode, error) {
	parts := []strLit{first.str}
	for p.peek().kind == ctString {
		parts = append(parts, p.next().str)
	}
	n := p.node(callNode{kind: nodeConst, pos: first.pos, ck: constStr})
	if first.str.bytes {
		n.ck = constBytes
	}
	surrogates := false
	for _, s := range parts {
		if s.bytes != first.str.bytes {
			return nil, newCallError(p.src, first.pos, false, "cannot mix bytes and nonbytes literals")
		}
		surrogates = surrogates || s.units != nil
	}
	if n.ck == constBytes {
		return n, nil
	}
	if !surrogates {
		if len(parts) == 1 {
			n.s = first.str.s
			return n, nil
		}
		var b strings.Builder
		for _, s := range parts {
			b.WriteString(s.s)
		}
		n.s = b.String()
		return n, nil
	}
	var units []rune
	for _, s := range parts {
		if s.units != nil {
			units = append(units, s.units...)
		} else {
			units = append(units, []rune(s.s)...)
		}
	}
	n.units = units
	return n, nil
}

// parens parses a parenthesized expression or a tuple after its `(`.
func (p *callParser) parens(pos int) (*callNode, error) {
	elts, comma, err := p.exprList(")")
	if err != nil {
		return nil, err
	}
	if len(elts) == 1 && !comma {
		return elts[0], nil
	}
	return p.node(callNode{kind: nodeTuple, pos: pos, elts: elts}), nil
}

// exprList parses comma-separated expressions up to and including the
// closing bracket; comma reports whether a comma was seen.
func (p *callParser) exprList(closer string) (elts []*callNode, comma bool, err error) {
	for !p.isOp(closer) {
		e, err := p.expr()
		if err != nil {
			return nil, false, err
		}
		elts = append(elts, e)
		if !p.isOp(",") {
			break
		}
		comma = true
		p.i++
	}
	if err := p.expect(closer); err != nil {
		return nil, false, err
	}
	return elts, comma, nil
}

// braces parses a dict or set display after its `{`.
func (p *callParser) braces(pos int) (*callNode, error) {
	if p.isOp("}") {
		p.i++
		return p.node(callNode{kind: nodeDict, pos: pos}), nil
	}
	first, err := p.expr()
	if err != nil {
		return nil, err
	}
	if !p.isOp(":") {
		elts := []*callNode{first}
		for p.isOp(",") {
			p.i++
			if p.isOp("}") {
				break
			}
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			elts = append(elts, e)
		}
		if err := p.expect("}"); err != nil {
			return nil, err
		}
		return p.node(callNode{kind: nodeSet, pos: pos, elts: elts}), nil
	}
	d := p.node(callNode{kind: nodeDict, pos: pos})
	key := first
	for {
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		d.elts = append(d.elts, key)
		d.vals = append(d.vals, v)
		if !p.isOp(",") {
			break
		}
		p.i++
		if p.isOp("}") {
			break
		}
		if key, err = p.expr(); err != nil {
			return nil, err
		}
	}
	if err := p.expect("}"); err != nil {
		return nil, err
	}
	return d, nil
}

// checkLiteral reports the first part of n that is not a Python literal
// (a name other than true/false/null, a call, an attribute, a sign on
// something other than a number, an unhashable dict key or set element).
func checkLiteral(src string, n *callNode, path *argPath) error {
	switch n.kind {
	case nodeConst:
		return nil
	case nodeUnary:
		if x := n.x; x.kind != nodeConst || (x.ck != constInt && x.ck != constFloat && x.ck != constComplex) {
			return newCallError(src, n.pos, false, "%s: a sign applies only to a number", path.String())
		}
		return nil
	case nodeName:
		switch n.name {
		case "true", "false", "null":
			return nil
		}
		return newCallError(src, n.pos, false, "%s: name '%s' is not a literal", path.String(), n.name)
	case nodeList, nodeTuple, nodeSet:
		for i, e := range n.elts {
			path.push(argStep{kind: stepIndex, index: i})
			if err := checkLiteral(src, e, path); err != nil {
				return err
			}
			if n.kind == nodeSet && !hashable(e) {
				return newCallError(src, e.pos, false, "%s: set element of type %s is not hashable", path.String(), e.kind)
			}
			path.pop()
		}
		return nil
	case nodeDict:
		for i, k := range n.elts {
			if err := checkLiteral(src, k, path); err != nil {
				return err
			}
			if !hashable(k) {
				return newCallError(src, k.pos, false, "%s: dict key of type %s is not hashable", path.String(), k.kind)
			}
			path.push(argStep{kind: stepAnyKey})
			if err := checkLiteral(src, n.vals[i], path); err != nil {
				return err
			}
			path.pop()
		}
		return nil
	}
	return newCallError(src, n.pos, false, "%s: a %s is not a literal", path.String(), n.kind)
}

// hashable reports whether a literal can be a dict key or set element.
func hashable(n *callNode) bool {
	switch n.kind {
	case nodeList, nodeDict, nodeSet:
		return false
	case nodeTuple:
		for _, e := range n.elts {
			if !hashable(e) {
				return false
			}
		}
	}
	return true
}

// notJSON is the reason for a value JSON cannot hold (LNDL-D12).
func notJSON(src string, n *callNode, path *argPath, what string) error {
	return newCallError(src, n.pos, false, "%s: %s is not representable in JSON", path.String(), what)
}

// jsonValue converts a parsed argument to a JSON-compatible value. path
// names the value in errors.
func jsonValue(src string, n *callNode, path *argPath) (any, error) {
	switch n.kind {
	case nodeConst:
		return constValue(src, n, path)
	case nodeUnary:
		return signedNumber(src, n, path)
	case nodeName:
		switch n.name {
		case "true":
			return true, nil
		case "false":
			return false, nil
		case "null":
			return nil, nil
		}
		return nil, newCallError(src, n.pos, false, "%s: name '%s' is not a literal", path.String(), n.name)
	case nodeList, nodeTuple:
		out := make([]any, len(n.elts))
		for i, e := range n.elts {
			path.push(argStep{kind: stepIndex, index: i})
			v, err := jsonValue(src, e, path)
			if err != nil {
				return nil, err
			}
			path.pop()
			out[i] = v
		}
		return out, nil
	case nodeDict:
		return dictValue(src, n, path)
	case nodeSet:
		return nil, notJSON(src, n, path, "value of type set")
	}
	return nil, newCallError(src, n.pos, false, "%s: a %s is not a literal", path.String(), n.kind)
}

func constValue(src string, n *callNode, path *argPath) (any, error) {
	switch n.ck {
	case constNone:
		return nil, nil
	case constBool:
		return n.b, nil
	case constStr:
		if n.units != nil {
			s, ok := pairSurrogates(n.units)
			if !ok {
				return nil, notJSON(src, n, path, "a string with an unpaired surrogate")
			}
			return s, nil
		}
		return n.s, nil
	case constBytes:
		return nil, notJSON(src, n, path, "value of type bytes")
	case constInt:
		return json.Number(n.s), nil
	case constFloat:
		if math.IsInf(n.f, 0) || math.IsNaN(n.f) {
			return nil, notJSON(src, n, path, "non-finite number "+pythonFloatRepr(n.f))
		}
		return json.Number(pythonFloatRepr(n.f)), nil
	case constComplex:
		return nil, notJSON(src, n, path, "value of type complex")
	}
	return nil, notJSON(src, n, path, "value of type ellipsis")
}

// signedNumber applies a unary sign to a number constant; Python's
// literal rules allow nothing else under a sign.
func signedNumber(src string, n *callNode, path *argPath) (any, error) {
	x := n.x
	if x.kind != nodeConst || (x.ck != constInt && x.ck != constFloat && x.ck != constComplex) {
		return nil, newCallError(src, n.pos, false, "%s: a sign applies only to a number", path.String())
	}
	if n.op == '-' {
		neg := *x
		switch x.ck {
		case constInt:
			if x.s != "0" {
				neg.s = "-" + x.s
			}
		case constFloat:
			neg.f = -x.f
		}
		x = &neg
	}
	return constValue(src, x, path)
}

// pairSurrogates combines UTF-16 surrogate pairs of units into code
// points; it fails on an unpaired surrogate.
func pairSurrogates(units []rune) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(units); i++ {
		r := units[i]
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+1 >= len(units) || units[i+1] < 0xDC00 || units[i+1] > 0xDFFF {
				return "", false
			}
			r = 0x10000 + (r-0xD800)<<10 + (units[i+1] - 0xDC00)
			i++
		case r >= 0xDC00 && r <= 0xDFFF:
			return "", false
		}
		b.WriteRune(r)
	}
	return b.String(), true
}

// dictValue converts a dict display. Keys become JSON object keys the way
// Python's json module writes them; keys Python considers equal (1, 1.0
// and True) are one key, keeping the first key's text and the last value,
// and a later key with the same JSON text replaces an earlier one.
func dictValue(src string, n *callNode, path *argPath) (any, error) {
	type entry struct {
		text  string
		value *callNode
	}
	var order []string
	entries := make(map[string]*entry, len(n.elts))
	for i, k := range n.elts {
		id, text, err := dictKey(src, k, path)
		if err != nil {
			return nil, err
		}
		if e, ok := entries[id]; ok {
			e.value = n.vals[i]
			continue
		}
		entries[id] = &entry{text: text, value: n.vals[i]}
		order = append(order, id)
	}
	out := make(map[string]any, len(order))
	for _, id := range order {
		e := entries[id]
		path.push(argStep{kind: stepDictKey, key: e.text})
		v, err := jsonValue(src, e.value, path)
		if err != nil {
			return nil, err
		}
		path.pop()
		out[e.text] = v
	}
	return out, nil
}

// dictKey returns the identity of a dict key (equal for keys Python
// treats as equal) and its JSON text.
func dictKey(src string, k *callNode, path *argPath) (id, text string, err error) {
	if k.kind == nodeName {
		switch k.name {
		case "true", "false":
			k = &callNode{kind: nodeConst, pos: k.pos, ck: constBool, b: k.name == "true"}
		case "null":
			k = &callNode{kind: nodeConst, pos: k.pos, ck: constNone}
		}
	}
	if k.kind == nodeUnary {
		v, err := signedNumber(src, k, path)
		if err != nil {
			return "", "", err
		}
		num := string(v.(json.Number))
		if strings.ContainsAny(num, ".e") {
			f, _ := strconv.ParseFloat(num, 64)
			return numberID(f), num, nil
		}
		return "n:" + num, num, nil
	}
	if k.kind == nodeTuple {
		return "", "", notJSON(src, k, path, "dict key of type tuple")
	}
	if k.kind != nodeConst {
		if _, err := jsonValue(src, k, path); err != nil {
			return "", "", err
		}
		return "", "", newCallError(src, k.pos, false, "%s: dict key of type %s is not hashable", path.String(), k.kind)
	}
	switch k.ck {
	case constNone:
		return "none", "null", nil
	case constBool:
		if k.b {
			return "n:1", "true", nil
		}
		return "n:0", "false", nil
	case constInt:
		return "n:" + k.s, k.s, nil
	case constFloat:
		v, err := constValue(src, k, path)
		if err != nil {
			return "", "", err
		}
		return numberID(k.f), string(v.(json.Number)), nil
	case constStr:
		v, err := constValue(src, k, path)
		if err != nil {
			return "", "", err
		}
		return "s:" + v.(string), v.(string), nil
	}
	_, err = constValue(src, k, path)
	if err == nil {
		err = notJSON(src, k, path, "dict key")
	}
	return "", "", err
}

// numberID is the identity of a finite float key: an integral float is
// the integer it equals.
func numberID(f float64) string {
	if f == math.Trunc(f) {
		i, _ := new(big.Float).SetFloat64(f).Int(nil)
		return "n:" + i.String()
	}
	return "f:" + strconv.FormatFloat(f, 'g', -1, 64)
}

// pythonFloatRepr formats a float the way Python's repr does, so the text
// always reads as a float: `1000.0`, `2.5`, `1e+23`, `1e-05`, `-0.0`.
func pythonFloatRepr(f float64) string {
	var buf [32]byte
	return string(appendPythonFloatRepr(buf[:0], f))
}

// appendPythonFloatRepr appends the text of pythonFloatRepr(f) to dst.
// The shortest digits come from one 'e' formatting; the fixed form is
// laid out from them.
func appendPythonFloatRepr(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var ebuf [32]byte
	e := strconv.AppendFloat(ebuf[:0], f, 'e', -1, 64) // [-]d[.ddd]e±XX
	i := bytes.IndexByte(e, 'e')
	exp := 0
	for _, c := range e[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		exp = -exp
	}
	mant := e[:i]
	if mant[0] == '-' {
		dst = append(dst, '-')
		mant = mant[1:]
	}
	if exp < -4 || exp >= 16 {
		dst = append(dst, mant...)
		dst = append(dst, 'e')
		if exp < 0 {
			dst = append(dst, '-')
			exp = -exp
		} else {
			dst = append(dst, '+')
		}
		if exp < 10 {
			dst = append(dst, '0')
		}
		return strconv.AppendInt(dst, int64(exp), 10)
	}
	// The significant digits, without the point.
	var dbuf [24]byte
	digits := append(dbuf[:0], mant[0])
	if len(mant) > 2 {
		digits = append(digits, mant[2:]...)
	}
	if exp < 0 {
		dst = append(dst, "0."...)
		for range -exp - 1 {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	if len(digits) <= exp+1 {
		dst = append(dst, digits...)
		for range exp + 1 - len(digits) {
			dst = append(dst, '0')
		}
		return append(dst, ".0"...)
	}
	dst = append(dst, digits[:exp+1]...)
	dst = append(dst, '.')
	return append(dst, digits[exp+1:]...)
}

// argPath names the argument value being checked or converted, for
// error messages: `arguments['key'][0]["k"]`. It is a stack of steps,
// formatted only when an error is made.
type argPath struct {
	steps []argStep
}

type argStepKind uint8

const (
	stepArgument   argStepKind = iota // arguments['key']
	stepPositional                    // arguments['_pos_i']
	stepIndex                         // [i]
	stepDictKey                       // ["key"], the key quoted
	stepAnyKey                        // [...], a dict value
)

type argStep struct {
	kind  argStepKind
	key   string
	index int
}

func (p *argPath) push(s argStep) { p.steps = append(p.steps, s) }
func (p *argPath) pop()           { p.steps = p.steps[:len(p.steps)-1] }

// String writes the path.
func (p *argPath) String() string {
	var b strings.Builder
	for _, s := range p.steps {
		switch s.kind {
		case stepArgument:
			b.WriteString("arguments['" + s.key + "']")
		case stepPositional:
			b.WriteString("arguments['_pos_" + strconv.Itoa(s.index) + "']")
		case stepIndex:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case stepDictKey:
			b.WriteString("[" + strconv.Quote(s.key) + "]")
		case stepAnyKey:
			b.WriteString("[...]")
		}
	}
	return b.String()
}
