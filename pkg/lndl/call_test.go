package lndl

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseCall_values(t *testing.T) {
	tests := []struct {
		name string
		body string
		fn   string
		args string // the arguments as JSON
	}{
		{"raw string", `fn(s=r"a\nb", t=R'\d+')`, "fn", `{"s": "a\\nb", "t": "\\d+"}`},
		{"raw keeps escaped quote", `fn(s=r"a\"b")`, "fn", `{"s": "a\\\"b"}`},
		{"unicode prefix", `fn(s=u"x", t=U'y')`, "fn", `{"s": "x", "t": "y"}`},
		{"triple single quotes", `fn(s='''a'b"c''')`, "fn", `{"s": "a'b\"c"}`},
		{"triple with newline", "fn(s='''a\nb''')", "fn", `{"s": "a\nb"}`},
		{"hex octal unicode escapes", `fn(s="a\x41\101\u00e9\U0001F680\0")`, "fn", `{"s": "aAAé🚀\u0000"}`},
		{"control escapes", `fn(s="\a\b\f\v\r")`, "fn", `{"s": "\u0007\b\f\u000b\r"}`},
		{"surrogate pair", `fn(s="\ud83d\ude80")`, "fn", `{"s": "🚀"}`},
		{"surrogate pair across literals", `fn(s="\ud83d" "\ude80")`, "fn", `{"s": "🚀"}`},
		{"line continuation in string", "fn(s=\"a\\\nb\")", "fn", `{"s": "ab"}`},
		{"unknown escape kept", `fn(s="\q\é")`, "fn", `{"s": "\\q\\é"}`},
		{"three-way concatenation", `fn(s="a" 'b' """c""")`, "fn", `{"s": "abc"}`},
		{"concatenation across lines", "fn(s=\"a\"\n    \"b\")", "fn", `{"s": "ab"}`},
		{"carriage returns read as newlines", "fn(s=\"\"\"a\r\nb\rc\"\"\")", "fn", `{"s": "a\nb\nc"}`},
		{"floats", `fn(a=1_000.5, b=.5, c=1., d=1e1_0, e=1e-400, f=00.5)`, "fn", `{"a": 1000.5, "b": 0.5, "c": 1.0, "d": 1e10, "e": 0.0, "f": 0.5}`},
		{"prefixed integers", `fn(a=0x_1F, b=-0o17, c=+0b1, d=0XfF)`, "fn", `{"a": 31, "b": -15, "c": 1, "d": 255}`},
		{"zeros", `fn(a=00, b=-0, c=0_0)`, "fn", `{"a": 0, "b": 0, "c": 0}`},
		{"big integer", `fn(n=-123456789012345678901234567890)`, "fn", `{"n": -123456789012345678901234567890}`},
		{"sign on parenthesized number", `fn(a=-(1), b=+(2.5))`, "fn", `{"a": -1, "b": 2.5}`},
		{"tuples", `fn(a=(1,), b=(), c=((1)), d=(1, (2, 3)))`, "fn", `{"a": [1], "b": [], "c": 1, "d": [1, [2, 3]]}`},
		{"equal keys merge", `fn(m={1: "a", True: "b", 1.0: "c"})`, "fn", `{"m": {"1": "c"}}`},
		{"scalar keys", `fn(m={1.5: 1, None: 2, False: 3, -2: 4, true: 5, null: 6})`, "fn", `{"m": {"1.5": 1, "null": 6, "false": 3, "-2": 4, "true": 5}}`},
		{"same JSON key", `fn(m={1: "a", "1": "b"})`, "fn", `{"m": {"1": "b"}}`},
		{"empty dict and list", `fn(m={}, l=[])`, "fn", `{"m": {}, "l": []}`},
		{"trailing commas", `fn(l=[1,], d={"a": 1,}, s=(1,),)`, "fn", `{"l": [1], "d": {"a": 1}, "s": [1]}`},
		{"parenthesized callee", `(fn)(x=1)`, "fn", `{"x": 1}`},
		{"parenthesized call", `(svc.fn(x=1))`, "svc.fn", `{"x": 1}`},
		{"space before parenthesis", `fn (x=1)`, "fn", `{"x": 1}`},
		{"spaces around dots", `a . b . fn()`, "b.fn", `{}`},
		{"comments and blank lines", "# lead\n\nfn(  # first\n  x=1,  # one\n)  # tail\n# end\n", "fn", `{"x": 1}`},
		{"explicit line joining", "fn(x=1,\\\n y=2)", "fn", `{"x": 1, "y": 2}`},
		{"call receiver", `f(x=1).g(y=2)`, "g", `{"y": 2}`},
		{"slice receiver", `x[1:2, ::3].fn(a=1)`, "fn", `{"a": 1}`},
		{"constant receiver", `True.fn()`, "fn", `{}`},
		{"unicode names", `größe(wert=1, 名前="x")`, "größe", `{"wert": 1, "名前": "x"}`},
		{"soft keywords are names", `match(type=1, case=2, _=3)`, "match", `{"type": 1, "case": 2, "_": 3}`},
		{"positional then keywords", "fn(\n1,\n'b',\n_pos_1=5,\n)", "fn", `{"_pos_0": 1, "_pos_1": 5}`},
		{"nested containers", `fn(x=[1, [2, {"k": (3, None)}]])`, "fn", `{"x": [1, [2, {"k": [3, null]}]]}`},
		{"form feed before callee", "\ffn()", "fn", `{}`},
		{"continuation before the callee", "\\\nfn()", "fn", `{}`},
		{"replaced keyword value need not be JSON", `fn(x=1e400, x={1, 2}, x=1+2j, x=1)`, "fn", `{"x": 1}`},
		{"replaced positional need not be JSON", `fn(b"raw", _pos_0="text")`, "fn", `{"_pos_0": "text"}`},
		{"replaced dict value need not be JSON", `fn(m={1: ..., True: "\ud800", 1.0: 2})`, "fn", `{"m": {"1": 2}}`},
		{"complex receiver", `(1+2j).conjugate()`, "conjugate", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCall("a", tt.body)
			if err != nil {
				t.Fatalf("ParseCall(%q): %v", tt.body, err)
			}
			if got.Function != tt.fn {
				t.Errorf("function %q, want %q", got.Function, tt.fn)
			}
			var want any
			dec := json.NewDecoder(strings.NewReader(tt.args))
			dec.UseNumber()
			if err := dec.Decode(&want); err != nil {
				t.Fatalf("bad test JSON: %v", err)
			}
			if d := jsonDiff(got.Arguments, want); d != "" {
				t.Errorf("ParseCall(%q) arguments: %s", tt.body, d)
			}
		})
	}
}

func TestParseCall_numberText(t *testing.T) {
	tests := []struct {
		lit, want string
	}{
		{"1E3", "1000.0"},
		{"2.5", "2.5"},
		{"-3e-2", "-0.03"},
		{"1e16", "1e+16"},
		{"1.5e16", "1.5e+16"},
		{"123456789012345.0", "123456789012345.0"},
		{"1e-5", "1e-05"},
		{"0.0001", "0.0001"},
		{"-0.0", "-0.0"},
		{"1e-400", "0.0"},
		{"1e23", "1e+23"},
		{"0x10", "16"},
		{"-0", "0"},
		{"007.5", "7.5"},
	}
	for _, tt := range tests {
		t.Run(tt.lit, func(t *testing.T) {
			got, err := ParseCall("a", "fn(x="+tt.lit+")")
			if err != nil {
				t.Fatal(err)
			}
			n, ok := got.Arguments["x"].(json.Number)
			if !ok || string(n) != tt.want {
				t.Errorf("%s: got %#v, want json.Number(%q)", tt.lit, got.Arguments["x"], tt.want)
			}
		})
	}
}

func TestParseCall_errors(t *testing.T) {
	long := strings.Repeat("7", MaxCallIntDigits)
	tests := []struct {
		name  string
		body  string
		limit bool
	}{
		{"f-string without fields", `fn(x=f"a")`, false},
		{"raw f-string", `fn(x=Rf"a")`, false},
		{"raw bytes", `fn(x=rb"a")`, false},
		{"bytes concatenation", `fn(x=b"a" b"b")`, false},
		{"mixed bytes and str", `fn(x="a" b"b")`, false},
		{"non-ASCII bytes", `fn(x=b"é")`, false},
		{"named escape", `fn(x="\N{EM DASH}")`, false},
		{"lone surrogate", `fn(x="\ud800")`, false},
		{"reversed surrogates", `fn(x="\ude80\ud83d")`, false},
		{"truncated hex escape", `fn(x="\x4")`, false},
		{"truncated unicode escape", `fn(x="\u12")`, false},
		{"code point too large", `fn(x="\U00110000")`, false},
		{"unterminated", `fn(x='abc)`, false},
		{"newline in short string", "fn(x='a\nb')", false},
		{"unterminated triple", `fn(x="""abc")`, false},
		{"leading zero", `fn(x=01)`, false},
		{"double underscore", `fn(x=1__0)`, false},
		{"trailing underscore", `fn(x=1_)`, false},
		{"empty hex", `fn(x=0x)`, false},
		{"bad hex digit", `fn(x=0x1g)`, false},
		{"bad octal digit", `fn(x=0o8)`, false},
		{"empty exponent", `fn(x=1e)`, false},
		{"attribute of a float", `fn(x=1.real)`, false},
		{"imaginary", `fn(x=1j)`, false},
		{"complex sum", `fn(x=-1.5+2j)`, false},
		{"complex difference", `fn(x=1-2J)`, false},
		{"sum of reals", `fn(x=1+2)`, false},
		{"signed imaginary part", `fn(x=1+-2j)`, false},
		{"complex plus more", `fn(x=1+2j+3)`, false},
		{"replaced name still not a literal", `fn(x=y, x=1)`, false},
		{"replaced call still not a literal", `fn(m={1: f(), 1: 2})`, false},
		{"unhashable key", `fn(m={[1]: 1, 1: 2})`, false},
		{"unhashable set element", `fn(s={1, [2]}, s=1)`, false},
		{"continuation at the end", "fn()\\\n", false},
		{"negative imaginary", `fn(x=-1J)`, false},
		{"double sign", `fn(x=--1)`, false},
		{"signed bool", `fn(x=-True)`, false},
		{"signed string", `fn(x=-"a")`, false},
		{"inversion", `fn(x=~1)`, false},
		{"set", `fn(x={1, 2})`, false},
		{"list key", `fn(x={[1]: 2})`, false},
		{"tuple key", `fn(x={(1,): 2})`, false},
		{"non-finite key", `fn(x={1e999: 2})`, false},
		{"attribute value", `fn(x=a.b)`, false},
		{"subscript value", `fn(x=a[0])`, false},
		{"name inside list", `fn(x=[1, y])`, false},
		{"conditional", `fn(x=1 if y else 2)`, false},
		{"comprehension", `fn(x=[i for i in y])`, false},
		{"positional after keyword", `fn(x=1, 2)`, false},
		{"True as argument name", `fn(True=1)`, false},
		{"None as argument name", `fn(None=1)`, false},
		{"lambda as argument name", `fn(lambda=1)`, false},
		{"accepted keyword as value", `fn(x=from)`, false},
		{"accepted keyword as positional", `fn(class)`, false},
		{"keyword callee", `from(x=1)`, false},
		{"keyword attribute", `a.class(x=1)`, false},
		{"comparison", `fn(x==1)`, false},
		{"walrus", `fn(x:=1)`, false},
		{"augmented assignment", `fn(x+=1)`, false},
		{"indented second line", "fn(x=1)\n  fn()", false},
		{"constant callee", `None(x=1)`, false},
		{"string callee", `"s"(x=1)`, false},
		{"subscript callee", `fns["a"](x=1)`, false},
		{"attribute result", `fn(x=1).y`, false},
		{"extra parenthesis", `fn(x=1))`, false},
		{"mismatched brackets", `fn(x=[1)`, false},
		{"unclosed", `fn(x=[1]`, false},
		{"backslash at the end", `fn(x=1)\`, false},
		{"double comma", `fn(x=1,,)`, false},
		{"lone comma", `fn(,)`, false},
		{"tuple at the top", `fn(), 1`, false},
		{"null byte", "fn(x=\"\x00\")", false},
		{"invalid UTF-8", "fn(x=\"\xff\")", false},
		{"non-breaking space", "fn(x=\u00a01)", false},
		{"keyword with space before paren", "fn(x=1 2)", false},
		{"double star in dict", `fn(x={**d})`, false},
		{"empty body", ``, false},
		{"only a comment", `# nothing`, false},
		{"depth over the bound", "fn(" + strings.Repeat("[", MaxCallDepth) + strings.Repeat("]", MaxCallDepth) + ")", true},
		{"body over the bound", "fn(x=\"" + strings.Repeat("a", MaxCallBodyLen) + "\")", true},
		{"integer over the bound", "fn(x=" + long + "7)", true},
		{"hex integer over the bound", "fn(x=0x" + strings.Repeat("f", 3600) + ")", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCall("step", tt.body)
			if err == nil {
				t.Fatalf("ParseCall(%q) = %+v, want an error", tt.body, got)
			}
			var ice *InvalidConstructorError
			if !errors.As(err, &ice) {
				t.Fatalf("error %T %v is not an *InvalidConstructorError", err, err)
			}
			if ice.Alias != "step" || ice.Body != tt.body || ice.Err == nil {
				t.Errorf("error fields: alias %q, body match %v, reason %v", ice.Alias, ice.Body == tt.body, ice.Err)
			}
			if !errors.Is(err, ErrLNDL) {
				t.Errorf("error %v is not an ErrLNDL", err)
			}
			prefix := "lact 'step' body is not a parseable function call: '"
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("message %q lacks prefix %q", err.Error(), prefix)
			}
			if got := errors.Is(err, ErrCallLimit); got != tt.limit {
				t.Errorf("errors.Is(err, ErrCallLimit) = %v, want %v (%v)", got, tt.limit, ice.Err)
			}
		})
	}
}

func TestParseCall_bounds(t *testing.T) {
	deepest := "fn(" + strings.Repeat("[", MaxCallDepth-1) + strings.Repeat("]", MaxCallDepth-1) + ")"
	if _, err := ParseCall("a", deepest); err != nil {
		t.Errorf("nesting of exactly %d brackets: %v", MaxCallDepth, err)
	}
	longest := strings.Repeat("9", MaxCallIntDigits)
	got, err := ParseCall("a", "fn(x=-"+longest+")")
	if err != nil {
		t.Fatalf("integer of %d digits: %v", MaxCallIntDigits, err)
	}
	if n := got.Arguments["x"].(json.Number); string(n) != "-"+longest {
		t.Errorf("integer of %d digits not exact", MaxCallIntDigits)
	}
	body := "fn(x=\"" + strings.Repeat("a", MaxCallBodyLen-8) + "\")"
	if len(body) != MaxCallBodyLen {
		t.Fatalf("test body is %d bytes", len(body))
	}
	if _, err := ParseCall("a", body); err != nil {
		t.Errorf("body of exactly %d bytes: %v", MaxCallBodyLen, err)
	}
}

func TestParseCall_errorPosition(t *testing.T) {
	_, err := ParseCall("a", "fn(\n  x=1,\n  y=z)")
	var ice *InvalidConstructorError
	if !errors.As(err, &ice) {
		t.Fatalf("got %v", err)
	}
	if want := "line 3, column 5: arguments['y']: name 'z' is not a literal"; ice.Err.Error() != want {
		t.Errorf("reason %q, want %q", ice.Err.Error(), want)
	}
}

func TestParseCall_argumentsNeverNil(t *testing.T) {
	got, err := ParseCall("a", "refresh()")
	if err != nil {
		t.Fatal(err)
	}
	if got.Arguments == nil {
		t.Fatal("Arguments is nil")
	}
	raw, _ := json.Marshal(got.Arguments)
	if string(raw) != "{}" {
		t.Errorf("arguments marshal to %s", raw)
	}
}
