// Package docs holds lionbus's documentation; its test checks that the
// relative links of the README and of every page here resolve.
package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// pages are the markdown files whose links are checked, relative to this
// directory.
func pages(t *testing.T) []string {
	t.Helper()
	ps, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(ps, "../README.md", "../deploy/README.md")
}

// link is an inline markdown link or image: [text](target) or
// [text](target "title").
var link = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// inlineCode is a code span.
var inlineCode = regexp.MustCompile("`[^`]*`")

// linkInHeading is a link in a heading, whose text the anchor keeps.
var linkInHeading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// heading is an ATX heading.
var heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// line is a line of a markdown file and its number, from 1.
type line struct {
	n    int
	text string
}

// prose returns the lines of a markdown file outside fenced code blocks.
func prose(text string) []line {
	var out []line
	fence := ""
	for i, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
		case fence == "":
			out = append(out, line{i + 1, l})
		}
	}
	return out
}

// slug is the anchor GitHub gives a heading: lower case, inline code
// marks and punctuation other than '-' and '_' dropped, spaces as '-'.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a markdown file's headings, a repeated
// heading's with GitHub's -1, -2, ... suffixes.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range prose(text) {
		m := heading.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		// Links in a heading count by their text.
		h := linkInHeading.ReplaceAllString(m[1], "$1")
		s := slug(h)
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestRelativeLinks fails on a relative link of README.md, deploy/README.md
// or docs/*.md that names a file or directory that does not exist, or an
// anchor that no heading of the markdown page it points at has.
func TestRelativeLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := cache[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		cache[path] = anchors(string(b))
		return cache[path], nil
	}
	checked := 0
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range prose(string(b)) {
			// Inline code may show link syntax without being a link.
			text := inlineCode.ReplaceAllString(l.text, "")
			for _, m := range link.FindAllStringSubmatch(text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s (line %d): link %q: no such file or directory", page, l.n, target)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				a, err := anchorsOf(path)
				if err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
				if !a[anchor] {
					t.Errorf("%s (line %d): link %q: %s has no heading with anchor #%s", page, l.n, target, path, anchor)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link pattern is broken")
	}
}

// TestSlug pins the anchors GitHub gives headings of the kinds these
// pages use.
func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"Names: subjects, streams and buckets", "names-subjects-streams-and-buckets"},
		{"Replies elsewhere (`replyto`)", "replies-elsewhere-replyto"},
		{"branch.create", "branchcreate"},
		{"chat_and_record", "chat_and_record"},
		{"Seams of `pkg/ops`", "seams-of-pkgops"},
		{"op.NAME", "opname"},
		{"Restarts, and a stream or bucket lost", "restarts-and-a-stream-or-bucket-lost"},
	}
	for _, tt := range tests {
		if got := slug(tt.heading); got != tt.want {
			t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}
