// Package glob matches byte strings against Redis glob patterns, exactly as Redis does
// (KEYS, SCAN MATCH, ACL key patterns).
package glob

// Match reports whether s matches the glob pattern p as Redis's MATCH and KEYS
// decide it: '*' any run of bytes, '?' any one byte, '[abc]' one of a set, '[^a]' one
// byte not in it, '[a-z]' a range (its ends in either order), '\x' x itself, inside a set
// too; an unterminated set takes the rest of the pattern. It is a transliteration of
// stringmatchlen (Redis 7's util.c), byte for byte, rather than path.Match or a library
// glob: those differ on '/', on '^', on ranges written backwards and on unterminated sets,
// and a client sees the difference. Bytes at or above 0x80 compare in ranges as C's
// signed char does on x86. Patterns nesting '*' past maxGlobNesting match nothing (newer
// Redis bounds it too), and a failed '*' stops the search at once (Redis's
// skipLongerMatches), so a match costs O(len(p) * len(s)).
func Match(p, s []byte) bool {
	skip := false
	return globFrom(p, s, &skip, 0)
}

// maxGlobNesting bounds the recursion of '*'s.
const maxGlobNesting = 1000

// at returns b[i], or 0 past the end: C's strings are NUL-terminated and stringmatchlen
// reads that NUL in a few places.
func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

func globFrom(p, s []byte, skipLonger *bool, nesting int) bool {
	if nesting > maxGlobNesting {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if globFrom(p[1:], s, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			// No match of the rest from anywhere in s: an earlier '*' taking more of s
			// cannot help either.
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			var match bool
			if p, match = globSet(p[1:], s[0]); !match {
				return false
			}
			s = s[1:]
			if len(p) == 0 { // an unterminated set took the rest of the pattern
				continue
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

// globSet matches c against the set that p starts with (just past its '['). It returns p
// at the set's closing ']' (or empty, when the set is unterminated) and whether c
// matches.
func globSet(p []byte, c byte) ([]byte, bool) {
	not := at(p, 0) == '^'
	if not {
		p = p[1:]
	}
	match := false
	for {
		switch {
		case len(p) >= 2 && p[0] == '\\':
			p = p[1:]
			if p[0] == c {
				match = true
			}
		case len(p) == 0:
			return p, match != not
		case p[0] == ']':
			return p, match != not
		case len(p) >= 3 && p[1] == '-':
			lo, hi, v := int8(p[0]), int8(p[2]), int8(c)
			if lo > hi {
				lo, hi = hi, lo
			}
			p = p[2:]
			if v >= lo && v <= hi {
				match = true
			}
		default:
			if p[0] == c {
				match = true
			}
		}
		p = p[1:]
	}
}

// IsGlob reports whether p has any byte that makes it more than a literal key.
func IsGlob(p []byte) bool {
	for _, c := range p {
		switch c {
		case '*', '?', '[', '\\':
			return true
		}
	}
	return false
}
