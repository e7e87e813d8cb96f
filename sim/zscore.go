package sim

import (
	"math"
	"strconv"
	"strings"
)

// Sorted-set scores are doubles parsed and printed as Redis does: input
// with C's strtod (leading blanks, hexadecimal, inf/infinity, nan), output
// with "%.17g" (inf as "inf"). Both are recorded against a real Redis 7.0;
// newer servers print non-integer doubles in their shortest form instead,
// which the simulator does not model (the lock scripts use integer scores
// only, which every version prints alike).

// strtod scans s as C's strtod does in the C locale and returns the value,
// the number of bytes it used (0: no conversion) and whether the value is
// out of range (an overflow to ±Inf, or an underflow to zero).
func strtod(s string) (f float64, used int, outOfRange bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	sign := s[start:i]
	rest := s[i:]
	switch {
	case hasFoldPrefix(rest, "infinity"):
		return signed(sign, math.Inf(1)), i + len("infinity"), false
	case hasFoldPrefix(rest, "inf"):
		return signed(sign, math.Inf(1)), i + len("inf"), false
	case hasFoldPrefix(rest, "nan"):
		return math.NaN(), i + nanLength(rest), false
	case len(rest) > 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X'):
		if n, text, nonzero := scanNumber(rest[2:], isHexDigit, 'p'); n > 0 {
			v, err := strconv.ParseFloat(sign+"0x"+text, 64)
			return v, i + 2 + n, rangeError(v, err, nonzero)
		}
	}
	n, text, nonzero := scanNumber(rest, isDigit, 'e')
	if n == 0 {
		return 0, 0, false
	}
	v, err := strconv.ParseFloat(sign+text, 64)
	return v, i + n, rangeError(v, err, nonzero)
}

// scanNumber scans digits [. digits] [exp [sign] decimal digits] and
// returns the bytes used, the text to give strconv.ParseFloat (hexadecimal
// text gets the "p0" exponent Go requires) and whether a mantissa digit is
// not zero. n is 0 when there is no mantissa digit.
func scanNumber(s string, digit func(byte) bool, exp byte) (n int, text string, nonzero bool) {
	i, digits := 0, 0
	for pass := 0; pass < 2; pass++ {
		for i < len(s) && digit(s[i]) {
			nonzero = nonzero || s[i] != '0'
			i, digits = i+1, digits+1
		}
		if pass == 0 && i < len(s) && s[i] == '.' {
			i++
		} else {
			break
		}
	}
	if digits == 0 {
		return 0, "", false
	}
	mantissa := i
	if i < len(s) && (s[i]|0x20) == exp {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			i = j
		}
	}
	text = s[:i]
	if exp == 'p' && i == mantissa {
		text += "p0"
	}
	return i, text, nonzero
}

func rangeError(v float64, err error, nonzero bool) bool {
	return err != nil || (v == 0 && nonzero)
}

func signed(sign string, v float64) float64 {
	if sign == "-" {
		return -v
	}
	return v
}

// nanLength is the length of "nan" or "nan(chars)" at the start of s.
func nanLength(s string) int {
	if len(s) > 3 && s[3] == '(' {
		for j := 4; j < len(s); j++ {
			c := s[j]
			if c == ')' {
				return j + 1
			}
			if !isDigit(c) && !isHexDigit(c) && (c|0x20 < 'a' || c|0x20 > 'z') && c != '_' {
				break
			}
		}
	}
	return 3
}

func hasFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func isCSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isHexDigit(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

// parseScore parses a ZADD score as Redis' string2d does.
func parseScore(s string) (float64, bool) {
	if s == "" || isCSpace(s[0]) {
		return 0, false
	}
	v, used, outOfRange := strtod(s)
	if used != len(s) || math.IsNaN(v) || (outOfRange && (math.IsInf(v, 0) || v == 0)) {
		return 0, false
	}
	return v, true
}

// scoreBound is one end of a ZCOUNT/ZREMRANGEBYSCORE range.
type scoreBound struct {
	value     float64
	exclusive bool
}

// parseScoreRange parses min and max as zslParseRange does: "(" makes an
// end exclusive, the rest is strtod up to the string's first NUL byte.
func parseScoreRange(minArg, maxArg string) (lo, hi scoreBound, ok bool) {
	lo, okLo := parseScoreBound(minArg)
	hi, okHi := parseScoreBound(maxArg)
	return lo, hi, okLo && okHi
}

func parseScoreBound(s string) (scoreBound, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	var b scoreBound
	if strings.HasPrefix(s, "(") {
		b.exclusive, s = true, s[1:]
	}
	v, used, _ := strtod(s)
	if used != len(s) || math.IsNaN(v) {
		return b, false
	}
	b.value = v
	return b, true
}

// inRange reports whether score lies between lo and hi.
func inRange(score float64, lo, hi scoreBound) bool {
	aboveLo := score > lo.value || (!lo.exclusive && score == lo.value)
	belowHi := score < hi.value || (!hi.exclusive && score == hi.value)
	return aboveLo && belowHi
}

// formatScore prints a score as Redis 7.0's addReplyDouble does.
func formatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}
