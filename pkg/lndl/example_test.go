package lndl_test

import (
	"errors"
	"fmt"

	"github.com/lionbus/lionbus/pkg/lndl"
)

func ExampleParse() {
	response := "I will look it up.\n" +
		"```lndl\n" +
		"<lvar Report.title t>Latency review</lvar>\n" +
		"<lact search s>web.search(query=\"p99 latency\", limit=3)</lact>\n" +
		"OUT{report: [t], sources: [s], confidence: 0.9, t}\n" +
		"```\n"

	prog, err := lndl.Parse(lndl.Normalize(response))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, lv := range prog.Lvars {
		fmt.Printf("lvar %s: model %s, field %s, content %q\n", lv.Alias, lv.Model, lv.Field, lv.Content)
	}
	for _, la := range prog.Lacts {
		fmt.Printf("lact %s: hint %s, call %s\n", la.Alias, la.Hint, la.Call)
	}
	for _, f := range prog.Out.Fields(prog.DefaultBinding()) {
		switch f.Value.Kind {
		case lndl.ValueList:
			var names []string
			for _, it := range f.Value.List {
				names = append(names, it.Text)
			}
			fmt.Printf("OUT %s: refs %v\n", f.Key, names)
		default:
			fmt.Printf("OUT %s: %s\n", f.Key, f.Value.Text)
		}
	}

	_, err = lndl.Parse("<lvar a b c>x</lvar>")
	var pe *lndl.ParseError
	fmt.Println(errors.As(err, &pe), pe.Line, pe.Column, err)
	// Output:
	// lvar t: model Report, field title, content "Latency review"
	// lact s: hint search, call web.search(query="p99 latency", limit=3)
	// OUT report: refs [t]
	// OUT sources: refs [s]
	// OUT confidence: 0.9
	// OUT title: refs [t]
	// true 1 11 Parse error at line 1, column 11: Expected GT, got ID
}

func ExampleExtract() {
	text := "Thinking...\n```lndl\n<lvar a>x</lvar>\n```\n```python\nprint(1)\n```\n~~~LNDL\nOUT{a}\n~~~\n"
	fmt.Printf("%q\n", lndl.Extract(text))
	// Output:
	// ["<lvar a>x</lvar>\n" "OUT{a}\n"]
}

func ExampleNormalize() {
	text := "{lvar Note.plan p}draft{/lvar}\n" +
		"<lact name=\"search\" q>web.search(query=\"x\")</lact>\n" +
		"<lact r fetch(url=\"u\")</lact>"
	fmt.Println(lndl.Normalize(text))
	// Output:
	// <lvar note.plan p>draft</lvar>
	// <lact search q>web.search(query="x")</lact>
	// <lact r>fetch(url="u")</lact>
}
