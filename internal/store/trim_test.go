package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A records file that a full disk cut mid-line holds its complete lines:
// that is what it says it keeps, and it is cut back to them so it reads
// back (the count once said 26 where the file held 20 and a cut one).
func TestTrimToCompleteLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unstored.jsonl")
	full := strings.Repeat(`{"id":1,"sent_ms":0,"scheduled_ms":0}`+"\n", 20)
	if err := os.WriteFile(path, []byte(full+`{"id":21,"sent_`), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := trimToCompleteLines(path)
	if err != nil || n != 20 {
		t.Fatalf("trimToCompleteLines = %d, %v; want 20", n, err)
	}
	if b, _ := os.ReadFile(path); string(b) != full {
		t.Errorf("file not cut back to its complete lines: %q", b[len(b)-40:])
	}
	if n, err := trimToCompleteLines(path); err != nil || n != 20 {
		t.Errorf("again: %d, %v", n, err)
	}
}
