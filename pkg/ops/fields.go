package ops

import "strings"

// fieldMatchThreshold is the Jaro-Winkler similarity above which a key of
// the model's JSON is taken for an expected field
// (docs/decisions.md#reference-a5).
const fieldMatchThreshold = 0.85

// matchFields maps the first JSON object found in text onto the expected
// field names: exact keys first, then each leftover key to the most similar
// remaining field (case-insensitive Jaro-Winkler >= fieldMatchThreshold).
// Only expected fields that were found are returned; {} when text holds no
// JSON object.
func matchFields(text string, fields []string) map[string]any {
	out := map[string]any{}
	cands, err := recoverJSON(text)
	if err != nil {
		return out
	}
	var obj map[string]any
	for _, c := range cands {
		if m, ok := c.(map[string]any); ok {
			obj = m
			break
		}
	}
	if obj == nil {
		return out
	}
	remaining := map[string]bool{}
	for _, f := range fields {
		if v, ok := obj[f]; ok {
			out[f] = v
		} else {
			remaining[f] = true
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		if _, exact := out[k]; !exact {
			keys = append(keys, k)
		}
	}
	sortStrings(keys)
	for _, k := range keys {
		best, bestScore := "", 0.0
		for _, f := range fields {
			if !remaining[f] {
				continue
			}
			s := jaroWinkler(strings.ToLower(k), strings.ToLower(f))
			if s > bestScore || (s == bestScore && f < best) {
				best, bestScore = f, s
			}
		}
		if best != "" && bestScore >= fieldMatchThreshold {
			out[best] = obj[k]
			delete(remaining, best)
		}
	}
	return out
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
