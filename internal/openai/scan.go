package openai

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// scanner is a small validating JSON scanner over one chunk. It reads the
// few fields a stream chunk needs and skips (but still validates) the rest,
// without reflection and without allocating on the common path.
type scanner struct {
	b     []byte
	i     int
	depth int
	err   error
}

const maxDepth = 256

func (s *scanner) fail(format string, args ...any) bool {
	if s.err == nil {
		s.err = fmt.Errorf("offset %d: %s", s.i, fmt.Sprintf(format, args...))
	}
	return false
}

func (s *scanner) ws() {
	b, i := s.b, s.i
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	s.i = i
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) describe() string {
	if s.i >= len(s.b) {
		return "end of data"
	}
	return strconv.QuoteRune(rune(s.b[s.i]))
}

// literal consumes null, true or false.
func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return s.fail("invalid literal, want %s", lit)
}

// null consumes a null if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	return false
}

// str consumes a string and returns its raw (still escaped) contents and
// whether it contained escapes.
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	if s.peek() != '"' {
		return nil, false, s.fail("want a string, found %s", s.describe())
	}
	b, i := s.b, s.i+1
	start := i
	for i < len(b) {
		// Eight bytes at a time while none is a quote, a backslash or a
		// control character (SWAR: a byte test per lane, no branches).
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			q, bs := x^(lanes*'"'), x^(lanes*'\\')
			if ((x-lanes*0x20)&^x|(q-lanes)&^q|(bs-lanes)&^bs)&(lanes*0x80) != 0 {
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		switch {
		case c == '"':
			s.i = i + 1
			return b[start:i], escaped, true
		case c == '\\':
			escaped = true
			s.i = i
			if i+1 >= len(b) {
				return nil, false, s.fail("unterminated escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return nil, false, s.fail("short \\u escape")
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return nil, false, s.fail("bad \\u escape")
					}
				}
				i += 6
			default:
				return nil, false, s.fail("bad escape \\%c", b[i+1])
			}
		default:
			s.i = i
			return nil, false, s.fail("control character in string")
		}
	}
	s.i = i
	return nil, false, s.fail("unterminated string")
}

// lanes has 1 in every byte of a uint64.
const lanes = 0x0101010101010101

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number consumes a JSON number and returns its text.
func (s *scanner) number() ([]byte, bool) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	default:
		return nil, s.fail("want a number, found %s", s.describe())
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.i >= len(s.b) || !isDigit(s.b[s.i]) {
			return nil, s.fail("want a digit after the decimal point")
		}
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.i >= len(s.b) || !isDigit(s.b[s.i]) {
			return nil, s.fail("want a digit in the exponent")
		}
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	}
	return s.b[start:s.i], true
}

// float consumes a number as a float64 (null reads as 0).
func (s *scanner) float() (float64, bool) {
	if s.null() {
		return 0, true
	}
	if s.err != nil {
		return 0, false
	}
	raw, ok := s.number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, s.fail("number %s out of range", raw)
	}
	return v, true
}

// int consumes a number that must be a whole count (null reads as 0).
func (s *scanner) int() (int, bool) {
	if s.null() {
		return 0, true
	}
	if s.err != nil {
		return 0, false
	}
	raw, ok := s.number()
	if !ok {
		return 0, false
	}
	// Fast path: a plain non-negative integer.
	if len(raw) < 16 {
		n, plain := 0, true
		for _, c := range raw {
			if !isDigit(c) {
				plain = false
				break
			}
			n = n*10 + int(c-'0')
		}
		if plain {
			return n, true
		}
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, s.fail("want a whole number, found %s", raw)
	}
	return int(v), true
}

// skip consumes any value, validating it.
func (s *scanner) skip() bool {
	switch s.peek() {
	case '{':
		return s.object(func([]byte) bool { return s.skip() })
	case '[':
		return s.array(func() bool { return s.skip() })
	case '"':
		_, _, ok := s.str()
		return ok
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		_, ok := s.number()
		return ok
	}
}

// object consumes an object, calling field for each key with the scanner
// positioned at the value; field must consume the value.
func (s *scanner) object(field func(key []byte) bool) bool {
	if s.peek() != '{' {
		return s.fail("want an object, found %s", s.describe())
	}
	if s.depth++; s.depth > maxDepth {
		return s.fail("nested deeper than %d", maxDepth)
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		s.depth--
		return true
	}
	for {
		key, escaped, ok := s.str()
		if !ok {
			return false
		}
		if escaped {
			key = unescapeKey(key)
		}
		if s.peek() != ':' {
			return s.fail("want ':' after object key, found %s", s.describe())
		}
		s.i++
		if !field(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return true
		default:
			return s.fail("want ',' or '}' in object, found %s", s.describe())
		}
	}
}

// array consumes an array, calling elem with the scanner at each element.
func (s *scanner) array(elem func() bool) bool {
	if s.peek() != '[' {
		return s.fail("want an array, found %s", s.describe())
	}
	if s.depth++; s.depth > maxDepth {
		return s.fail("nested deeper than %d", maxDepth)
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return true
		default:
			return s.fail("want ',' or ']' in array, found %s", s.describe())
		}
	}
}

// unescapeKey decodes an escaped key (rare: keys are plain ASCII).
func unescapeKey(raw []byte) []byte {
	var s string
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	if json.Unmarshal(q, &s) != nil {
		return raw
	}
	return []byte(s)
}

// optString stores a string value in dst, or "" after skipping a value of
// another type: error fields from servers are not always strings.
func (s *scanner) optString(dst *string) bool {
	*dst = ""
	if s.peek() != '"' {
		return s.skip()
	}
	raw, esc, ok := s.str()
	*dst = unquote(raw, esc)
	return ok
}

// unquote decodes the raw contents of a JSON string.
func unquote(raw []byte, escaped bool) string {
	if !escaped && utf8.Valid(raw) {
		return string(raw)
	}
	return string(unescapeKey(raw))
}

// lenientNumber reads any JSON value and reports whether it is a finite
// number. Values a server reports on the side (timings) go through here: a
// string, null or object in their place is skipped, not an error; only
// broken JSON fails.
func (s *scanner) lenientNumber() (v float64, valid, ok bool) {
	if c := s.peek(); c != '-' && !isDigit(c) {
		return 0, false, s.skip()
	}
	raw, ok := s.number()
	if !ok {
		return 0, false, false
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, false, true
	}
	return v, true, true
}

// lenientMS reads a non-negative duration leniently and converts it to
// milliseconds (perMS units make a millisecond).
func (s *scanner) lenientMS(perMS float64) (float64, bool, bool) {
	v, valid, ok := s.lenientNumber()
	if !valid || v < 0 {
		return 0, false, ok
	}
	return v / perMS, true, ok
}

// lenientCount reads a non-negative whole count leniently.
func (s *scanner) lenientCount() (int, bool, bool) {
	v, valid, ok := s.lenientNumber()
	if !valid || v < 0 || v != math.Trunc(v) || v > 1<<53 {
		return 0, false, ok
	}
	return int(v), true, ok
}
