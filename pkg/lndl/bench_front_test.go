package lndl

import (
	"fmt"
	"strings"
	"testing"
)

// realisticResponse builds a model response of about size bytes: prose,
// then a ```lndl block with lvars, lacts with calls and an OUT block, as a
// model following the system prompt writes them. It is deterministic.
func realisticResponse(size int) string {
	var b strings.Builder
	b.Grow(size + 1024)
	b.WriteString("Let me work through the request step by step. The report needs a title, ")
	b.WriteString("a summary and the findings, each backed by a source I still have to fetch.\n\n")
	for b.Len() < size/4 {
		b.WriteString("I considered the architecture, the deployment constraints and the failure modes; ")
		b.WriteString("each finding below is stated once and referenced from OUT{} by its alias.\n")
	}
	b.WriteString("\n```lndl\n")
	b.WriteString("<lvar Report.title t>Service latency review, Q3</lvar>\n")
	b.WriteString("<lvar note.plan p>Fetch sources first, then commit the findings.</lvar>\n")
	var findings, sources []string
	for i := 0; b.Len() < size-200; i++ {
		fmt.Fprintf(&b, "<lvar Finding.text f%d>The p99 latency of endpoint %d rose by %d%% after the cache change; "+
			"\"hot\" keys are evicted too early.</lvar>\n", i, i, 10+i%37)
		fmt.Fprintf(&b, "<lact Finding.source s%d>web.search(query=\"latency regression %d\", limit=5, filters={\"site\": \"status.example.com\"})</lact>\n", i, i)
		findings = append(findings, fmt.Sprintf("f%d", i))
		sources = append(sources, fmt.Sprintf("s%d", i))
	}
	b.WriteString("OUT{\n  report: [t],\n  findings: [")
	for i := range findings {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "[%s, %s]", findings[i], sources[i])
	}
	b.WriteString("],\n  confidence: 0.92,\n  reviewed: true,\n  tags: [\"latency\", \"cache\", 3]\n}\n```\n")
	b.WriteString("\nThat is my answer for this round.\n")
	return b.String()
}

var benchSizes = []struct {
	name string
	size int
}{{"1KB", 1 << 10}, {"10KB", 10 << 10}, {"100KB", 100 << 10}}

func BenchmarkExtract(b *testing.B) {
	for _, s := range benchSizes {
		text := realisticResponse(s.size)
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if len(Extract(text)) != 1 {
					b.Fatal("no block")
				}
			}
		})
	}
}

func BenchmarkNormalize(b *testing.B) {
	for _, s := range benchSizes {
		text := realisticResponse(s.size)
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if Normalize(text) == "" {
					b.Fatal("empty")
				}
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, s := range benchSizes {
		text := Normalize(realisticResponse(s.size))
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFrontEnd is the front end of a round: extract, join,
// normalize without extracting again, parse and merge OUT.
func BenchmarkFrontEnd(b *testing.B) {
	for _, s := range benchSizes {
		text := realisticResponse(s.size)
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				blocks := Extract(text)
				prog, err := Parse(NormalizeBlock(strings.Join(blocks, "\n\n")))
				if err != nil {
					b.Fatal(err)
				}
				if len(prog.Out.Fields(prog.DefaultBinding())) == 0 {
					b.Fatal("no fields")
				}
			}
		})
	}
}

// BenchmarkParseHostile measures inputs built to defeat naive scanning:
// many unclosed tags, many openers without closers, deep brackets.
func BenchmarkParseHostile(b *testing.B) {
	cases := []struct{ name, text string }{
		{"unclosed-fences", strings.Repeat("```lndl\nx\n", 10000)},
		{"curly-no-brace", strings.Repeat("{lvar a ", 10000)},
		{"lact-no-closer", strings.Repeat("<lact a f(x) ", 10000)},
		{"heads-one-gt", strings.Repeat("<lvar a", 10000) + ">"},
		{"out-shortcuts", "OUT{" + strings.Repeat("a.b.c, ", 9000) + "}"},
		{"dotted-name", "OUT{k: [" + strings.Repeat("a.", 50000) + "]}"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				n := Normalize(c.text)
				_, _ = Parse(n)
			}
		})
	}
}
