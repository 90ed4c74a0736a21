package lndl

import (
	"fmt"
	"strings"
	"testing"
)

// lexAll returns every token of src up to and including EOF.
func lexAll(t *testing.T, src string) []token {
	t.Helper()
	lx := newLexer(src)
	var toks []token
	for i := 0; i <= len(src)+2; i++ {
		var tk token
		lx.next(&tk)
		toks = append(toks, tk)
		if tk.kind == tokEOF {
			return toks
		}
	}
	t.Fatalf("lexer did not reach EOF on %q", src)
	return nil
}

// render writes tokens of src as "KIND(text)@line:col" separated by
// spaces; text is omitted for punctuation.
func render(src string, toks []token) string {
	parts := make([]string, len(toks))
	for i, tk := range toks {
		s := tk.kind.String()
		switch tk.kind {
		case tokID, tokNum, tokStr, tokBody:
			s += fmt.Sprintf("(%q)", tk.text)
		}
		if tk.kind == tokBody && !tk.closed {
			s += "!"
		}
		pos := position(src, startPos, tk.off)
		parts[i] = fmt.Sprintf("%s@%d:%d", s, pos.Line, pos.Column)
	}
	return strings.Join(parts, " ")
}

func TestLexer(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", "EOF@1:1"},
		{"declaration", "<lvar a>b</lvar>",
			`LVAR_OPEN@1:1 ID("a")@1:7 GT@1:8 BODY("b")@1:9 LVAR_CLOSE@1:10 EOF@1:17`},
		{"lines and columns", "x\ny\n\nz",
			`ID("x")@1:1 NEWLINE@1:2 ID("y")@2:0 NEWLINE@2:1 NEWLINE@3:0 ID("z")@4:0 EOF@4:1`},
		{"columns count characters", "é 名前 a",
			`ID("é")@1:1 ID("名前")@1:3 ID("a")@1:6 EOF@1:7`},
		{"body is raw", "<lact a>f(x=\"</lvar>\", y='OUT{')</lact>",
			`LACT_OPEN@1:1 ID("a")@1:7 GT@1:8 BODY("f(x=\"</lvar>\", y='OUT{')")@1:9 LACT_CLOSE@1:33 EOF@1:40`},
		{"body with newlines", "<lvar a>\nx\n</lvar>z",
			`LVAR_OPEN@1:1 ID("a")@1:7 GT@1:8 BODY("\nx\n")@1:9 LVAR_CLOSE@3:0 ID("z")@3:7 EOF@3:8`},
		{"unclosed body runs to the end", "<lvar a>x\ny",
			`LVAR_OPEN@1:1 ID("a")@1:7 GT@1:8 BODY("x\ny")!@1:9 EOF@2:1`},
		{"closer with a space is no closer", "<lvar a>x</lvar >",
			`LVAR_OPEN@1:1 ID("a")@1:7 GT@1:8 BODY("x</lvar >")!@1:9 EOF@1:18`},
		{"upper-case tags are text", "<LVAR a>",
			`ID("LVAR")@1:2 ID("a")@1:7 GT@1:8 EOF@1:9`},
		{"stray closers", "</lvar></lact>",
			`LVAR_CLOSE@1:1 LACT_CLOSE@1:8 EOF@1:15`},
		{"skipped characters vanish", "<lvar a-b>c</lvar>",
			`LVAR_OPEN@1:1 ID("a")@1:7 ID("b")@1:9 GT@1:10 BODY("c")@1:11 LVAR_CLOSE@1:12 EOF@1:19`},
		{"OUT opener", "OUT{}", `OUT_OPEN@1:1 OUT_CLOSE@1:5 EOF@1:6`},
		{"OUT with spaces and tabs", "OUT \t {}", `OUT_OPEN@1:1 OUT_CLOSE@1:8 EOF@1:9`},
		{"OUT with newline is no opener", "OUT\n{",
			`ID("OUT")@1:1 NEWLINE@1:4 EOF@2:1`},
		{"lower-case out", "out{}", `ID("out")@1:1 OUT_CLOSE@1:5 EOF@1:6`},
		{"OUTPUT is an identifier", "OUTPUT {", `ID("OUTPUT")@1:1 EOF@1:9`},
		{"OUT inside an identifier", "xOUT{", `ID("xOUT")@1:1 EOF@1:6`},
		{"OUT after a number", "1OUT{", `NUM("1")@1:1 OUT_OPEN@1:2 EOF@1:6`},
		{"strings only in OUT", `"a" OUT{"b" 'c'} "d"`,
			`ID("a")@1:2 OUT_OPEN@1:5 STR("b")@1:9 STR("c")@1:13 OUT_CLOSE@1:16 ID("d")@1:19 EOF@1:21`},
		{"string escapes", `OUT{"a\n\t\r\\\"\q\'"}`,
			`OUT_OPEN@1:1 STR("a\n\t\r\\\"q'")@1:5 OUT_CLOSE@1:22 EOF@1:23`},
		{"unterminated string", `OUT{'abc}`, `OUT_OPEN@1:1 STR("abc}")@1:5 EOF@1:10`},
		{"backslash at the end", `OUT{'a\`, `OUT_OPEN@1:1 STR("a")@1:5 EOF@1:8`},
		{"string across lines", "OUT{'a\nb' c}",
			`OUT_OPEN@1:1 STR("a\nb")@1:5 ID("c")@2:3 OUT_CLOSE@2:4 EOF@2:5`},
		{"numbers", "OUT{1 2.5 1e10 1.5e-3 2E+5 1e 1e+ 0x10 1.2.3 -4 - 5}",
			`OUT_OPEN@1:1 NUM("1")@1:5 NUM("2.5")@1:7 NUM("1e10")@1:11 NUM("1.5e-3")@1:16 NUM("2E+5")@1:23 ` +
				`NUM("1")@1:28 ID("e")@1:29 NUM("1")@1:31 ID("e")@1:32 NUM("0")@1:35 ID("x10")@1:36 ` +
				`NUM("1.2.3")@1:40 NUM("-4")@1:46 NUM("5")@1:51 OUT_CLOSE@1:52 EOF@1:53`},
		{"minus outside OUT", "-4", `NUM("4")@1:2 EOF@1:3`},
		{"unicode digits", "OUT{٣}", `OUT_OPEN@1:1 NUM("٣")@1:5 OUT_CLOSE@1:6 EOF@1:7`},
		{"other digits start numbers", "²a m²", `NUM("²")@1:1 ID("a")@1:2 ID("m²")@1:4 EOF@1:6`},
		{"punctuation", ".,:[]()>", `DOT@1:1 COMMA@1:2 COLON@1:3 LBRACKET@1:4 RBRACKET@1:5 LPAREN@1:6 RPAREN@1:7 GT@1:8 EOF@1:9`},
		{"carriage return is white space", "a\r\nb", `ID("a")@1:1 NEWLINE@1:3 ID("b")@2:0 EOF@2:1`},
		{"nbsp and emoji are skipped", "a\u00a0🚀b", `ID("a")@1:1 ID("b")@1:4 EOF@1:5`},
		{"tag text without a space", "<lvarx a>", `LVAR_OPEN@1:1 ID("x")@1:6 ID("a")@1:8 GT@1:9 BODY("")!@1:10 EOF@1:10`},
		{"greater-than outside a head", "a > b", `ID("a")@1:1 GT@1:3 ID("b")@1:5 EOF@1:6`},
		{"lact body ends at lact closer", "<lact a>x</lvar>y</lact>",
			`LACT_OPEN@1:1 ID("a")@1:7 GT@1:8 BODY("x</lvar>y")@1:9 LACT_CLOSE@1:18 EOF@1:25`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(tt.src, lexAll(t, tt.src)); got != tt.want {
				t.Errorf("lex(%q)\n got %s\nwant %s", tt.src, got, tt.want)
			}
		})
	}
}

func TestLexerInvalidUTF8(t *testing.T) {
	// Invalid bytes are skipped characters, one column each.
	got := render("a\xff\xfeb", lexAll(t, "a\xff\xfeb"))
	if want := `ID("a")@1:1 ID("b")@1:4 EOF@1:5`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestTokKindNames(t *testing.T) {
	want := []string{"EOF", "LVAR_OPEN", "LVAR_CLOSE", "LACT_OPEN", "LACT_CLOSE", "OUT_OPEN",
		"OUT_CLOSE", "ID", "NUM", "STR", "DOT", "COMMA", "COLON", "LBRACKET", "RBRACKET",
		"LPAREN", "RPAREN", "GT", "NEWLINE", "BODY"}
	for i, w := range want {
		if got := tokKind(i).String(); got != w {
			t.Errorf("tokKind(%d) = %s, want %s", i, got, w)
		}
	}
	if got := tokKind(200).String(); got != "UNKNOWN" {
		t.Errorf("out of range kind = %s", got)
	}
}

func TestPosition(t *testing.T) {
	src := "ab\ncdé\n\nfgh 名前\nx"
	p := &parser{lx: newLexer(src), cur: startPos}
	// In order, out of order and repeated offsets all agree with a recount.
	offs := []int{0, 1, 2, 3, 5, 8, 9, 10, 14, len(src) - 1, len(src), 4, 0, len(src), 7}
	for _, off := range offs {
		line, col := naivePosition(src, off)
		got := p.posAt(off)
		if got.Offset != off || got.Line != line || got.Column != col {
			t.Errorf("posAt(%d) = %+v, want line %d column %d", off, got, line, col)
		}
		if one := position(src, startPos, off); one != got {
			t.Errorf("position(%d) = %+v, posAt = %+v", off, one, got)
		}
	}
}
