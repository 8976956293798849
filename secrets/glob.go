package secrets

import "fmt"

// Glob reports whether name matches pattern with Python fnmatch rules, as
// the Canvas matches podSelector fields: `*` any run, `?` one character,
// `[abc]`, `[a-z]` and `[!abc]` one character of (or not of) a set; an
// unclosed `[` is a literal. Unlike path.Match there is no escape character
// and `/` is not special. An empty pattern matches everything (see Selector).
func Glob(pattern, name string) bool {
	if pattern == "" {
		return true
	}
	return globAt(pattern, name)
}

// globAt matches iteratively, remembering the last star to backtrack to:
// linear in practice, and no recursion an adversarial pattern could blow up.
func globAt(p, s string) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				starP, starS = pi, si
				pi++
				continue
			case '?':
				pi++
				si++
				continue
			case '[':
				if ok, next, valid := matchClass(p, pi, s[si]); valid {
					if ok {
						pi, si = next, si+1
						continue
					}
				} else if s[si] == '[' {
					pi++
					si++
					continue
				}
			default:
				if p[pi] == s[si] {
					pi++
					si++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchClass matches c against the set starting at p[i] == '['. valid is
// false for an unclosed set (then '[' is a literal); next is the index after
// the closing ']'.
func matchClass(p string, i int, c byte) (ok bool, next int, valid bool) {
	j := i + 1
	negate := false
	if j < len(p) && p[j] == '!' {
		negate = true
		j++
	}
	// A ']' right after '[' or '[!' is a member, as in fnmatch.
	start := j
	for j < len(p) && (p[j] != ']' || j == start) {
		j++
	}
	if j >= len(p) {
		return false, 0, false
	}
	set := p[start:j]
	matched := false
	for k := 0; k < len(set); k++ {
		if k+2 < len(set) && set[k+1] == '-' {
			if set[k] <= c && c <= set[k+2] {
				matched = true
			}
			k += 2
			continue
		}
		if set[k] == c {
			matched = true
		}
	}
	return matched != negate, j + 1, true
}

// validGlob rejects patterns no Kubernetes name could match by length; any
// string is a valid fnmatch pattern otherwise.
func validGlob(p string) error {
	if len(p) > 512 {
		return fmt.Errorf("pattern is %d characters long; names have at most 253", len(p))
	}
	return nil
}
