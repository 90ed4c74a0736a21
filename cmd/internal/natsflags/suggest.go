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

// UnknownEnv returns a warning for every variable of environ (os.Environ's
// form, KEY=VALUE) that starts with [EnvPrefix] but names none of flags
// (flag names, as [EnvName] turns them into variables) nor extra (whole
// variable names read otherwise), with the likely intended variable when
// there is one. The warnings are sorted.
func UnknownEnv(environ, flags, extra []string) []string {
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
		w := fmt.Sprintf("environment variable %s is ignored: it names no setting read from the environment", k)
		if s := Suggest(k, known); s != "" {
			w += fmt.Sprintf(" (did you mean %s?)", s)
		}
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}
