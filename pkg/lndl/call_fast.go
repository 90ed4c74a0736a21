package lndl

import "encoding/json"

// fastCallArgs is the most keyword arguments fastCall reads; a call with
// more goes to the full parser.
const fastCallArgs = 8

// fastCallDigits is the most digits of an integer fastCall reads.
const fastCallDigits = 18

// fastCall parses the most common shape of lact body without the lexer
// and the node tree: `fn(...)` or `svc.fn(...)` whose arguments are all
// keywords, separated by ", " or ",", with values that are plain quoted
// strings (printable ASCII, no backslash) or decimal integers without
// sign, leading zero or underscore, and nothing after the ')'. ok is false
// for anything else, including every error, which the full parser then
// reads: fastCall gives the same Call as parseCall whenever ok is true
// (FuzzParseCall checks it).
func fastCall(body string) (c Call, ok bool) {
	if len(body) > MaxCallBodyLen {
		return Call{}, false
	}
	i := fastIdent(body, 0)
	if i == 0 || isPythonKeyword(body[:i]) {
		return Call{}, false
	}
	if i < len(body) && body[i] == '.' {
		j := fastIdent(body, i+1)
		if j == i+1 || isPythonKeyword(body[i+1:j]) {
			return Call{}, false
		}
		i = j
	}
	fn := body[:i]
	if i >= len(body) || body[i] != '(' {
		return Call{}, false
	}
	i++
	var keys [fastCallArgs]string
	var vals [fastCallArgs]any
	n := 0
	for {
		if i >= len(body) {
			return Call{}, false
		}
		if body[i] == ')' {
			if i+1 != len(body) {
				return Call{}, false
			}
			break
		}
		if n == fastCallArgs {
			return Call{}, false
		}
		j := fastIdent(body, i)
		if j == i || j >= len(body) || body[j] != '=' || isPythonKeyword(body[i:j]) {
			return Call{}, false
		}
		key := body[i:j]
		for k := 0; k < n; k++ {
			if keys[k] == key {
				return Call{}, false
			}
		}
		i = j + 1
		if i >= len(body) {
			return Call{}, false
		}
		switch q := body[i]; {
		case q == '"' || q == '\'':
			j = i + 1
			for j < len(body) && body[j] != q {
				if b := body[j]; b < 0x20 || b > 0x7e || b == '\\' {
					return Call{}, false
				}
				j++
			}
			if j >= len(body) {
				return Call{}, false
			}
			vals[n] = body[i+1 : j]
			j++
		case q >= '1' && q <= '9' || q == '0':
			j = i + 1
			for j < len(body) && body[j] >= '0' && body[j] <= '9' {
				j++
			}
			if j-i > fastCallDigits || q == '0' && j-i > 1 {
				return Call{}, false
			}
			vals[n] = json.Number(body[i:j])
		default:
			return Call{}, false
		}
		keys[n] = key
		n++
		i = j
		if i >= len(body) {
			return Call{}, false
		}
		switch body[i] {
		case ')':
			continue
		case ',':
			i++
			if i < len(body) && body[i] == ' ' {
				i++
			}
		default:
			return Call{}, false
		}
	}
	args := make(map[string]any, n)
	for k := 0; k < n; k++ {
		args[keys[k]] = vals[k]
	}
	return Call{Function: fn, Arguments: args}, true
}

// fastIdent returns the end of the ASCII identifier starting at s[i], or i
// when none starts there.
func fastIdent(s string, i int) int {
	j := i
	for j < len(s) {
		b := s[j]
		if b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || j > i && b >= '0' && b <= '9' {
			j++
			continue
		}
		break
	}
	return j
}
