package conform

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultSimilarityThreshold is the Jaro-Winkler similarity from which a
// key of the model's JSON is taken for an expected field name
// (docs/decisions.md#reference-a5); requests of parse may set another
// within [MinSimilarityThreshold, 1] (similarity_threshold).
const (
	DefaultSimilarityThreshold = 0.85
	MinSimilarityThreshold     = 0.5
)

// Bounds of the similarity step of matchKeys: names longer than
// maxSimilarKeyRunes (after normalization) and objects with more than
// maxSimilarityPairs key-field pairs are matched exactly and by
// normalized name only.
const (
	maxSimilarKeyRunes = 64
	maxSimilarityPairs = 1 << 14
)

// matchKeys maps keys of a JSON object onto expected field names, and
// returns key → field for the keys it matched:
//
//  1. a key equal to a field is that field;
//  2. with fuzzy, a key equal to a field once both are normalized
//     (normalizeKey: case and separators ignored, so "First-Name",
//     "first_name" and "firstName" are all "firstname") is that field,
//     unless two fields normalize alike;
//  3. with fuzzy, the remaining (key, field) pairs whose normalized names
//     have a Jaro-Winkler similarity of at least threshold are matched,
//     most similar first (ties by key, then field name).
//
// No key is mapped twice and no field receives two keys: a key whose field
// is taken stays unmatched. The result does not depend on the order of
// keys or fields.
func matchKeys(keys, fields []string, fuzzy bool, threshold float64) map[string]string {
	out := map[string]string{}
	taken := map[string]bool{}
	isField := make(map[string]bool, len(fields))
	for _, f := range fields {
		isField[f] = true
	}
	var rest []string
	for _, k := range keys {
		if isField[k] && !taken[k] {
			out[k], taken[k] = k, true
		} else {
			rest = append(rest, k)
		}
	}
	if !fuzzy || len(rest) == 0 || len(taken) == len(isField) {
		return out
	}
	sort.Strings(rest)
	byNorm := map[string][]string{}
	for f := range isField {
		if n := normalizeKey(f); n != "" && !taken[f] {
			byNorm[n] = append(byNorm[n], f)
		}
	}
	var left []string
	for _, k := range rest {
		if fs := byNorm[normalizeKey(k)]; len(fs) == 1 && !taken[fs[0]] {
			out[k], taken[fs[0]] = fs[0], true
		} else {
			left = append(left, k)
		}
	}
	var free []string
	for f := range isField {
		if !taken[f] {
			free = append(free, f)
		}
	}
	if len(left) == 0 || len(free) == 0 || len(left)*len(free) > maxSimilarityPairs {
		return out
	}
	sort.Strings(free)
	type pair struct {
		key, field string
		score      float64
	}
	var pairs []pair
	for _, k := range left {
		nk := normalizeKey(k)
		if nk == "" || utf8.RuneCountInString(nk) > maxSimilarKeyRunes {
			continue
		}
		for _, f := range free {
			nf := normalizeKey(f)
			if nf == "" || utf8.RuneCountInString(nf) > maxSimilarKeyRunes {
				continue
			}
			if s := jaroWinkler(nk, nf); s >= threshold {
				pairs = append(pairs, pair{k, f, s})
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool {
		a, b := pairs[i], pairs[j]
		if a.score != b.score {
			return a.score > b.score
		}
		if a.key != b.key {
			return a.key < b.key
		}
		return a.field < b.field
	})
	for _, p := range pairs {
		if _, done := out[p.key]; !done && !taken[p.field] {
			out[p.key], taken[p.field] = p.field, true
		}
	}
	return out
}

// normalizeKey folds a key for comparison: lower case, and only its letters
// and digits, so that case and separators ("_", "-", " ", ".") and the
// camelCase boundary do not matter.
func normalizeKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// jaroWinkler returns the Jaro-Winkler similarity of a and b, in [0, 1].
func jaroWinkler(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	if len(ra) == 0 && len(rb) == 0 {
		return 1
	}
	if len(ra) == 0 || len(rb) == 0 {
		return 0
	}
	window := max(len(ra), len(rb))/2 - 1
	if window < 0 {
		window = 0
	}
	ma := make([]bool, len(ra))
	mb := make([]bool, len(rb))
	matches := 0
	for i := range ra {
		lo, hi := max(0, i-window), min(len(rb), i+window+1)
		for j := lo; j < hi; j++ {
			if !mb[j] && ra[i] == rb[j] {
				ma[i], mb[j] = true, true
				matches++
				break
			}
		}
	}
	if matches == 0 {
		return 0
	}
	transpositions, j := 0, 0
	for i := range ra {
		if !ma[i] {
			continue
		}
		for !mb[j] {
			j++
		}
		if ra[i] != rb[j] {
			transpositions++
		}
		j++
	}
	m := float64(matches)
	jaro := (m/float64(len(ra)) + m/float64(len(rb)) + (m-float64(transpositions)/2)/m) / 3
	prefix := 0
	for i := 0; i < min(4, len(ra), len(rb)) && ra[i] == rb[i]; i++ {
		prefix++
	}
	return jaro + float64(prefix)*0.1*(1-jaro)
}
