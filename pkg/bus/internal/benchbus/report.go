package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// table is a markdown table.
type table struct {
	head []string
	rows [][]string
}

func newTable(head ...string) *table { return &table{head: head} }

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table with a blank line after it.
func (t *table) write(w io.Writer) {
	line := func(cells []string) {
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	line(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---"
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	fmt.Fprintln(w)
}

// ms formats d in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// us formats d in microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

// bytesStr formats a byte count.
func bytesStr(b float64) string {
	switch {
	case b < 1024:
		return fmt.Sprintf("%.0f B", b)
	case b < 1024*1024:
		return fmt.Sprintf("%.1f KiB", b/1024)
	default:
		return fmt.Sprintf("%.1f MiB", b/(1024*1024))
	}
}

// ratio formats a/b, or "–" when b is 0.
func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// count formats a float with one decimal.
func count(f float64) string { return fmt.Sprintf("%.1f", f) }

// count2 formats a float with two decimals.
func count2(f float64) string { return fmt.Sprintf("%.2f", f) }

// errCell formats an error count with the first error.
func errCell(n int, first error) string {
	if n == 0 {
		return "0"
	}
	msg := first.Error()
	if len(msg) > 80 {
		msg = msg[:80] + "…"
	}
	return fmt.Sprintf("%d (%s)", n, strings.ReplaceAll(msg, "|", "/"))
}
