package ops

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
)

// MaxExtractBytes bounds the text JSON is extracted from.
const MaxExtractBytes = 10 << 20

// ErrNoJSON is returned by extractJSON when the text holds no JSON object or
// array.
var ErrNoJSON = errors.New("no JSON object or array found in the text")

var fenceRE = regexp.MustCompile("(?s)```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```")

// extractJSON returns the JSON objects and arrays found in text, in order of
// preference: the whole text, then each ``` (or ```json) fenced block. Each
// candidate is parsed strictly first, then after light repairs (see
// repairJSON).
func extractJSON(text string) ([]any, error) {
	if len(text) > MaxExtractBytes {
		return nil, errors.New("text too large to extract JSON from")
	}
	var out []any
	if v, ok := parseLenient(text); ok {
		out = append(out, v)
	}
	for _, m := range fenceRE.FindAllStringSubmatch(text, -1) {
		if v, ok := parseLenient(m[1]); ok {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, ErrNoJSON
	}
	return out, nil
}

// parseLenient parses s as a JSON object or array, repairing it if needed.
func parseLenient(s string) (any, bool) {
	s = strings.TrimSpace(s)
	if s == "" || (s[0] != '{' && s[0] != '[') {
		return nil, false
	}
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		return v, true
	}
	if json.Unmarshal([]byte(repairJSON(s)), &v) == nil {
		return v, true
	}
	return nil, false
}

// repairJSON fixes the common slips of model-written JSON: single-quoted
// strings become double-quoted, bare object keys are quoted, trailing commas
// are dropped, and missing closing brackets are appended.
func repairJSON(s string) string {
	var b strings.Builder
	var stack []byte
	inStr := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch {
			case c == '\\' && i+1 < len(s):
				if quote == '\'' && s[i+1] == '\'' {
					b.WriteByte('\'')
				} else {
					b.WriteByte(c)
					b.WriteByte(s[i+1])
				}
				i++
			case c == quote:
				b.WriteByte('"')
				inStr = false
			case c == '"' && quote == '\'':
				b.WriteString(`\"`)
			default:
				b.WriteByte(c)
			}
			continue
		}
		switch {
		case c == '"' || c == '\'':
			inStr, quote = true, c
			b.WriteByte('"')
		case c == '{' || c == '[':
			stack = append(stack, c)
			b.WriteByte(c)
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			b.WriteByte(c)
		case c == ',':
			j := i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
			b.WriteByte(c)
		case isIdentStart(c) && len(stack) > 0 && stack[len(stack)-1] == '{' && prevSignificant(b.String()) != ':':
			j := i
			for j < len(s) && isIdentPart(s[j]) {
				j++
			}
			k := j
			for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			if k < len(s) && s[k] == ':' {
				b.WriteByte('"')
				b.WriteString(s[i:j])
				b.WriteByte('"')
			} else {
				b.WriteString(s[i:j])
			}
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	if inStr {
		b.WriteByte('"')
	}
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i] == '{' {
			b.WriteByte('}')
		} else {
			b.WriteByte(']')
		}
	}
	return b.String()
}

func prevSignificant(s string) byte {
	for i := len(s) - 1; i >= 0; i-- {
		if strings.IndexByte(" \t\r\n", s[i]) < 0 {
			return s[i]
		}
	}
	return 0
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9') || c == '-'
}
