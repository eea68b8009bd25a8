package record

import (
	"strings"
	"testing"
)

// A line past the bound is refused having held at most the bound: the
// buffer grows by doubling but never past max+1 (append's growth once took
// a 64 MiB bound to a 255 MB peak).
func TestLineReaderBufferStaysWithinTheBound(t *testing.T) {
	const max = 1<<20 + 12345 // not a power of two: doubling would pass it
	lr := NewLineReader(strings.NewReader(strings.Repeat("x", 3<<20)+"\n"), max)
	if _, _, err := lr.Next(); err == nil || !strings.Contains(err.Error(), "a line longer than") {
		t.Fatalf("a 3 MiB line under a 1 MiB bound: %v", err)
	}
	if c := cap(lr.buf); c > max+1 {
		t.Errorf("buffer capacity %d, want at most the bound %d", c, max+1)
	}
	lr = NewLineReader(strings.NewReader(strings.Repeat("y", max)+"\nz\n"), max)
	if line, ok, err := lr.Next(); err != nil || !ok || len(line) != max {
		t.Errorf("a line at the bound: %d bytes, %v, %v", len(line), ok, err)
	}
	if line, _, err := lr.Next(); err != nil || string(line) != "z" {
		t.Errorf("next line %q, %v", line, err)
	}
}
