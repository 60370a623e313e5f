package slurmstate

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScanner reads one JSON document in place, pulling out the few fields
// the parsers want and skipping the rest.
//
// Why not encoding/json: `squeue --json` prints about 4 KB per job, pretty
// printed, and a 4,096-node cluster has tens of thousands of jobs. Decoding
// that into structs with encoding/json ran at about 100 MB/s (158 ms for
// 4,096 jobs), more than the daemon's whole per-poll budget. This scanner
// walks the bytes once, allocates only for the strings it keeps, and still
// validates everything it skips (strings, numbers, literals and nesting), so
// truncated or garbled output is an error, never a partial result. The fuzz
// targets check it against encoding/json.
type jsonScanner struct {
	data []byte
	pos  int
	memo gresMemo // per parse; see gresMemo
}

// maxDepth bounds nesting, so hostile input cannot exhaust the stack.
const maxDepth = 64

// scanError is a syntax or type error at a byte offset; Error gives the line.
type scanError struct {
	data []byte
	off  int
	msg  string
}

func (e *scanError) Error() string {
	off := min(e.off, len(e.data))
	line := bytes.Count(e.data[:off], []byte("\n")) + 1
	return fmt.Sprintf("line %d: %s", line, e.msg)
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return &scanError{data: s.data, off: s.pos, msg: fmt.Sprintf(format, args...)}
}

// byteClass tables make the two hottest loops (white space between
// pretty-printed tokens, plain string bytes) one load and one test a byte.
var isSpace, isPlain [256]bool

func init() {
	for _, c := range []byte(" \t\n\r") {
		isSpace[c] = true
	}
	for c := 0x20; c < utf8.RuneSelf; c++ {
		isPlain[c] = c != '"' && c != '\\'
	}
}

// ws skips white space. Pretty-printed output is mostly a newline and
// indentation, so a run of spaces is measured a word at a time: the count
// of leading space bytes in 8 is the trailing zero bits of the word XOR
// eight spaces, over 8.
func (s *jsonScanner) ws() {
	d, i := s.data, s.pos
	for i < len(d) {
		c := d[i]
		if c == ' ' && i+8 <= len(d) {
			x := binary.LittleEndian.Uint64(d[i:]) ^ allSpaces
			if x == 0 {
				i += 8
			} else {
				i += bits.TrailingZeros64(x) / 8
			}
			continue
		}
		if !isSpace[c] {
			break
		}
		i++
	}
	s.pos = i
}

const (
	allSpaces = 0x2020202020202020
	ones      = 0x0101010101010101
	highs     = 0x8080808080808080
)

// plain8 reports whether 8 bytes are all plain string bytes: no '"', no
// '\\', no control character, no byte >= 0x80 (the classic SWAR zero-byte
// tests; each is exact as a yes/no answer).
func plain8(x uint64) bool {
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	below20 := (x - 0x20*ones) & ^x & highs
	return below20|hasZero(x^('"'*ones))|hasZero(x^('\\'*ones))|x&highs == 0
}

// peek returns the next non-space byte, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.pos >= len(s.data) {
		return 0
	}
	return s.data[s.pos]
}

func (s *jsonScanner) expect(c byte) error {
	if s.peek() != c {
		return s.errorf("want %q, found %s", c, s.describeNext())
	}
	s.pos++
	return nil
}

func (s *jsonScanner) describeNext() string {
	if s.pos >= len(s.data) {
		return "end of output (truncated?)"
	}
	return strconv.QuoteRune(rune(s.data[s.pos]))
}

// end checks that nothing but white space follows the document.
func (s *jsonScanner) end() error {
	if s.ws(); s.pos < len(s.data) {
		return s.errorf("trailing data after the JSON document")
	}
	return nil
}

// object reads an object, calling member for each key; member must consume
// the value (with a typed reader or skip).
func (s *jsonScanner) object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	c := s.peek()
	if c == '}' {
		s.pos++
		return nil
	}
	for {
		if c != '"' {
			return s.errorf("want a string key, found %s", s.describeNext())
		}
		key, err := s.key()
		if err != nil {
			return err
		}
		if s.peek() != ':' {
			return s.errorf("want ':' after a key, found %s", s.describeNext())
		}
		s.pos++
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
			c = s.peek()
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or '}' in object, found %s", s.describeNext())
		}
	}
}

// array reads an array, calling elem for each element (which it must consume).
func (s *jsonScanner) array(elem func(i int) error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or ']' in array, found %s", s.describeNext())
		}
	}
}

// key reads an object key (the scanner is at its '"'). Keys without escapes
// alias the input.
func (s *jsonScanner) key() ([]byte, error) {
	raw, escaped, err := s.stringAt()
	if err != nil || !escaped {
		return raw, err
	}
	str, err := unescape(raw)
	return []byte(str), err
}

// null consumes a null if one is next.
func (s *jsonScanner) null() bool {
	if s.peek() == 'n' && bytes.HasPrefix(s.data[s.pos:], []byte("null")) {
		s.pos += 4
		return true
	}
	return false
}

// str reads a string; null reads as "".
func (s *jsonScanner) str() (string, error) {
	switch s.peek() {
	case '"':
	case 'n':
		return "", s.literal("null")
	default:
		return "", s.errorf("want a string, found %s", s.describeNext())
	}
	raw, escaped, err := s.stringAt()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(raw), nil
	}
	out, err := unescape(raw)
	if err != nil {
		return "", s.errorf("%v", err)
	}
	return out, nil
}

// int reads an integer; null reads as 0 with ok false.
func (s *jsonScanner) int() (v int64, ok bool, err error) {
	c := s.peek()
	if c == 'n' {
		return 0, false, s.literal("null")
	}
	if c != '-' && (c < '0' || c > '9') {
		return 0, false, s.errorf("want an integer, found %s", s.describeNext())
	}
	start := s.pos
	if err := s.number(); err != nil {
		return 0, false, err
	}
	v, perr := strconv.ParseInt(string(s.data[start:s.pos]), 10, 64)
	if perr != nil {
		s.pos = start
		return 0, false, s.errorf("want an integer, found %s", s.data[start:min(start+24, len(s.data))])
	}
	return v, true, nil
}

// stringAt reads the string token at the scanner's '"' and returns its
// bytes between the quotes, and whether they need decoding (escapes or
// invalid UTF-8). It validates escapes and rejects control characters, as
// encoding/json does.
func (s *jsonScanner) stringAt() (raw []byte, escaped bool, err error) {
	s.pos++
	start := s.pos
	for s.pos < len(s.data) {
		d, i := s.data, s.pos
		for i+8 <= len(d) && plain8(binary.LittleEndian.Uint64(d[i:])) {
			i += 8
		}
		for i < len(d) && isPlain[d[i]] {
			i++
		}
		s.pos = i
		if i == len(d) {
			break
		}
		c := d[i]
		switch {
		case c == '"':
			raw = s.data[start:s.pos]
			s.pos++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			if err := s.escape(); err != nil {
				return nil, false, err
			}
		case c < 0x20:
			return nil, false, s.errorf("control character in string")
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if r == utf8.RuneError && n == 1 {
				escaped = true // decoded as U+FFFD, as encoding/json does
			}
			s.pos += n
		}
	}
	return nil, false, s.errorf("unterminated string (truncated output?)")
}

func (s *jsonScanner) escape() error {
	if s.pos+1 >= len(s.data) {
		return s.errorf("unterminated escape")
	}
	switch s.data[s.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
	case 'u':
		if s.pos+6 > len(s.data) {
			return s.errorf("short \\u escape")
		}
		for _, h := range s.data[s.pos+2 : s.pos+6] {
			if !isHex(h) {
				return s.errorf("bad \\u escape")
			}
		}
		s.pos += 6
	default:
		return s.errorf("bad escape \\%c", s.data[s.pos+1])
	}
	return nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// unescape decodes a validated string body with escapes; invalid UTF-8
// becomes U+FFFD.
func unescape(raw []byte) (string, error) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, r)
			i += n - 1
			continue
		}
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(raw[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := utf8.RuneError
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2 = utf16.DecodeRune(r, hex4(raw[i+3:i+7]))
					if r2 != utf8.RuneError {
						i += 6
					}
				}
				r = r2
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, raw[i])
		}
	}
	return string(out), nil
}

func hex4(b []byte) rune {
	v, _ := strconv.ParseUint(string(b), 16, 32)
	return rune(v)
}

// number validates a JSON number token.
func (s *jsonScanner) number() error {
	d := s.data
	i := s.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return s.errorf("want a value, found %s", s.describeNext())
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return s.errorf("bad number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return s.errorf("bad number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	s.pos = i
	return nil
}

// skip consumes one value of any kind, validating it.
func (s *jsonScanner) skip() error { return s.skipDepth(0) }

func (s *jsonScanner) skipDepth(depth int) error {
	if depth > maxDepth {
		return s.errorf("nesting deeper than %d", maxDepth)
	}
	switch c := s.peek(); c {
	case '{':
		return s.object(func([]byte) error { return s.skipDepth(depth + 1) })
	case '[':
		return s.array(func(int) error { return s.skipDepth(depth + 1) })
	case '"':
		_, _, err := s.stringAt()
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		return s.number()
	}
}

func (s *jsonScanner) literal(word string) error {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(word)) {
		return s.errorf("want a value, found %s", s.describeNext())
	}
	s.pos += len(word)
	return nil
}

// strList reads an array of strings (null elements read as "").
func (s *jsonScanner) strList() ([]string, error) {
	if s.null() {
		return nil, nil
	}
	var out []string
	err := s.array(func(int) error {
		v, err := s.str()
		out = append(out, v)
		return err
	})
	return out, err
}
