package redact

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Text from a server (an error body), a file (a trace, an import) or a flag
// (--label) may carry terminal control sequences: ESC [2J clears the
// screen, OSC 0 retitles the window, a bare CR overwrites the line. Shown
// raw, a server could rewrite what a person reads; shown escaped, the bytes
// are still there to read.

// Control returns s with every control character written as a visible
// escape (\x1b, \n, \u009b), and every byte that is not UTF-8 as \xNN: for
// one field (a table cell, a CSV value, a label), where even a newline
// would break the layout. Text without control characters is returned as
// it is.
func Control(s string) string {
	if !hasControl(s, false) {
		return s
	}
	var b strings.Builder
	appendEscaped(&b, s, false)
	return b.String()
}

// hasControl reports whether s holds a character Control (keepLines false)
// or a ControlWriter (true) would escape.
func hasControl(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, n, keepLines) {
			return true
		}
		i += n
	}
	return false
}

func needsEscape(r rune, size int, keepLines bool) bool {
	if r == utf8.RuneError && size == 1 {
		return true
	}
	if keepLines && (r == '\n' || r == '\t') {
		return false
	}
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f)
}

func appendEscaped(b *strings.Builder, s string, keepLines bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !needsEscape(r, n, keepLines):
			b.WriteString(s[i : i+n])
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(b, `\x%02x`, r)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
		i += n
	}
}

// ControlWriter passes what is written to w with control characters
// escaped as Control does, except newlines and tabs, which a rendered
// report lays itself out with: the last guard before a terminal or a
// report file, whatever field a renderer forgot. A UTF-8 sequence cut
// between two writes is held until the next write completes it.
func ControlWriter(w io.Writer) io.Writer { return &controlWriter{w: w} }

type controlWriter struct {
	w       io.Writer
	pending []byte // the start of a UTF-8 sequence the last write ended in
}

func (c *controlWriter) Write(p []byte) (int, error) {
	buf := append(c.pending, p...)
	c.pending = nil
	// Hold back an incomplete sequence at the end: its next bytes may come.
	if cut := incompleteTail(buf); cut > 0 {
		c.pending = append([]byte(nil), buf[len(buf)-cut:]...)
		buf = buf[:len(buf)-cut]
	}
	s := string(buf)
	if !hasControl(s, true) {
		if _, err := io.WriteString(c.w, s); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	var b strings.Builder
	appendEscaped(&b, s, true)
	if _, err := io.WriteString(c.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// incompleteTail is how many bytes at the end of b start a UTF-8 sequence
// that b does not complete (0 when none).
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return 0
		}
		if c >= 0xc0 { // a lead byte: complete when it has its continuation bytes
			need := 2
			switch {
			case c >= 0xf0:
				need = 4
			case c >= 0xe0:
				need = 3
			}
			if need > k {
				return k
			}
			return 0
		}
	}
	return 0
}
