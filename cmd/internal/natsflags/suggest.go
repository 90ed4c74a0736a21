package natsflags

import (
	"fmt"
	"slices"
	"strings"
)

// Suggest returns the candidate closest to name when it is close enough to
// be a likely misspelling (an edit distance of at most 2, or a prefix of
// one), else "".
func Suggest(name string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if c == name {
			return c
		}
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if d < bestDist || (d == bestDist && best != "" && c < best) {
			best, bestDist = c, d
		}
	}
	if best == "" && len(name) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(c, name) {
				return c
			}
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// MisspelledEnv returns a warning for every variable of environ (os.Environ's
// form, KEY=VALUE) that starts with [EnvPrefix], names none of flags (flag
// names, as [EnvName] turns them into variables) nor extra (whole variable
// names read otherwise), and is close to one of them (see [Suggest]): a
// likely misspelling, with the variable meant. A variable close to none is
// left alone: it may be another lionbus command's. The warnings are sorted.
func MisspelledEnv(environ, flags, extra []string) []string {
	known := slices.Clone(extra)
	for _, f := range flags {
		known = append(known, EnvName(f))
	}
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, EnvPrefix) || slices.Contains(known, k) {
			continue
		}
		if s := Suggest(k, known); s != "" {
			out = append(out, fmt.Sprintf("environment variable %s is ignored: it names no setting read from the environment (did you mean %s?)", k, s))
		}
	}
	slices.Sort(out)
	return out
}
