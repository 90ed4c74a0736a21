package lndl

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"no fences", "plain", nil},
		{"backtick block", "```lndl\nA\n```", []string{"A\n"}},
		{"upper-case language", "~~~LnDL\nA\n~~~\n", []string{"A\n"}},
		{"closer at the end without newline", "x\n```lndl\nA\n```", []string{"A\n"}},
		{"opener on the last line", "```lndl", nil},
		{"opener then end", "```lndl\n", nil},
		{"unclosed opener, later block found", "```lndl\nA\n~~~lndl\nB\n~~~", []string{"B\n"}},
		{"fence line inside a non-lndl block is content", "```go\n```lndl\n```\nB\n```", nil},
		{"tilde closes tilde only", "~~~lndl\nA\n```\nB\n~~~", []string{"A\n```\nB\n"}},
		{"four tildes are no closer", "~~~lndl\nA\n~~~~\n~~~", []string{"A\n~~~~\n"}},
		{"closer with tab", "```lndl\nA\n```\t\n", []string{"A\n"}},
		{"CRLF opener", "```lndl\r\nA\n```", []string{"A\n"}},
		{"lone CR after the language", "```lndl\rx\nA\n```", nil},
		{"language with plus and minus is not lndl", "```c++\nA\n```\n```lndl\nB\n```", []string{"B\n"}},
		{"empty language word then lndl", "```\nA\n```\n```lndl\nB\n```", []string{"B\n"}},
		{"unicode language word", "```ñandú\nA\n```\n```lndl\nB\n```", []string{"B\n"}},
		{"three blocks", "```lndl\n1\n```\n```lndl\n2\n```\n```lndl\n3\n```", []string{"1\n", "2\n", "3\n"}},
		{"CRLF converted inside the body", "```lndl\r\na\r\nb\r\n```", []string{"a\nb\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Extract(tt.text); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Extract(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestExtractManyUnclosedOpeners checks that openers without closers do
// not each rescan the rest of the text: the result is right, and the
// benchmarks show the cost stays linear.
func TestExtractManyUnclosedOpeners(t *testing.T) {
	text := strings.Repeat("```lndl\nx\n", 20000) + "~~~lndl\nlast\n~~~\n"
	got := Extract(text)
	if len(got) != 1 || got[0] != "last\n" {
		t.Fatalf("Extract = %d blocks, first %q", len(got), got[0])
	}
}

func TestNormalizeRepairs(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"missing gt with newline whitespace", "<lact\na\nf(x=1)\n</lact>", "<lact a>f(x=1)</lact>"},
		{"missing gt keeps inner head whitespace, then re-joined", "<lact a\tb f(x)</lact>", "<lact a b>f(x)</lact>"},
		{"missing gt needs an ASCII name start", "<lact é f(x)</lact>", "<lact é f(x)</lact>"},
		{"missing gt with digit name start", "<lact 1a f(x)</lact>", "<lact 1a f(x)</lact>"},
		{"missing gt requires its closer", "<lact a f(x)</lvar>", "<lact a f(x)</lvar>"},
		{"missing gt, two repairs", "<lact a f()</lact><lact b g()</lact>", "<lact a>f()</lact><lact b>g()</lact>"},
		{"curly without a closing brace", "{lvar a", "{lvar a"},
		{"curly with newline head", "{lact\nx}f(){/lact}", "<lact x>f()</lact>"},
		{"curly closer inside a curly head", "{lvar a{/lvar}b", "<lvar a{/lvar>b"},
		{"lvar without gt untouched", "<lvar a b", "<lvar a b"},
		{"head re-joined", "<lvar  a \n b >x</lvar>", "<lvar a b>x</lvar>"},
		{"empty name attribute", "<lvar name=\"\" a>x</lvar>", "<lvar a>x</lvar>"},
		{"last name attribute wins", "<lvar name='a' name='b' c>x</lvar>", "<lvar b c>x</lvar>"},
		{"xname is not name", "<lvar xname=\"q\" a>x</lvar>", "<lvar a>x</lvar>"},
		{"attribute after a hyphen", "<lvar a-name=\"q\">x</lvar>", "<lvar q a->x</lvar>"},
		{"Note with newline", "<lvar\nNote.x a>v</lvar>", "<lvar note.x a>v</lvar>"},
		{"Note without gt", "<lact  Note.x", "<lact note.x"},
		{"CRLF left to Extract", "<lvar a>x</lvar>\r\n", "<lvar a>x</lvar>\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NormalizeBlock(tt.text); got != tt.want {
				t.Errorf("NormalizeBlock(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestNormalizeConvertsCRLFOnce(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<lvar a>x</lvar>\r\n", "<lvar a>x</lvar>\n"},
		{"a\r\r\nb", "a\r\nb"},
		{"```lndl\n```\r\r\n", "```lndl\n```\r\n"},
		{"```lndl\r\nA\r\r\n```\r\n", "A\r\n"},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeBlockDoesNotExtract(t *testing.T) {
	// LNDL-D10: a fence inside an already extracted block is content.
	block := "<lvar a>x</lvar>\n```lndl\nOUT{a}\n```\n"
	if got := NormalizeBlock(block); got != block {
		t.Errorf("NormalizeBlock extracted: %q", got)
	}
	if got := Normalize(block); got != "OUT{a}\n" {
		t.Errorf("Normalize = %q, want the inner block", got)
	}
}

func TestSplitPyLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a"}},
		{"a\n\nb", []string{"a", "", "b"}},
		{"a\r\nb\rc", []string{"a", "b", "c"}},
		{"a\vb\fc\x1cd\x1de\x1ef\u0085g\u2028h\u2029i", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}},
		{"a\x1fb", []string{"a\x1fb"}},
	}
	for _, tt := range tests {
		if got := slices.Collect(pyLines(tt.in)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("pyLines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTextClasses(t *testing.T) {
	for _, r := range []rune{' ', '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x2028, 0x3000} {
		if !isLNDLSpace(r) {
			t.Errorf("isLNDLSpace(%U) = false", r)
		}
	}
	for _, r := range []rune{'a', 0x200b, 0, '_'} {
		if isLNDLSpace(r) {
			t.Errorf("isLNDLSpace(%U) = true", r)
		}
	}
	if got := trimLNDLSpace("\u3000\x1f a b\u00a0\n"); got != "a b" {
		t.Errorf("trimLNDLSpace = %q", got)
	}
	for _, tt := range []struct {
		r           rune
		start, part bool
		digitValue  int
	}{
		{'a', true, true, -1},
		{'_', true, true, -1},
		{'7', false, true, 7},
		{'é', true, true, -1},
		{'名', true, true, -1},
		{'٣', false, true, 3},
		{'７', false, true, 7},
		{'²', false, true, -1},
		{'①', false, true, -1},
		{'-', false, false, -1},
	} {
		if got := isIdentStart(tt.r); got != tt.start {
			t.Errorf("isIdentStart(%q) = %v", tt.r, got)
		}
		if got := isIdentPart(tt.r); got != tt.part {
			t.Errorf("isIdentPart(%q) = %v", tt.r, got)
		}
		if got := decimalDigitValue(tt.r); got != tt.digitValue {
			t.Errorf("decimalDigitValue(%q) = %d, want %d", tt.r, got, tt.digitValue)
		}
	}
}
