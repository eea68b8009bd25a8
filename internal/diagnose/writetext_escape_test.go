package diagnose

import (
	"bytes"
	"strings"
	"testing"
)

// The path (a flag) and the evidence (from records: class names, servers'
// error messages) reach diagnose's text with control characters escaped.
func TestWriteTextEscapesControlCharacters(t *testing.T) {
	d := &Diagnosis{Verdict: "queue", Evidence: []Evidence{{Text: "class chat\x1b[2J waits"}}, Basis: "b"}
	var b bytes.Buffer
	if err := WriteText(&b, "runs/\x1b]0;PWNED\x07.jsonl", FormatRecords, d); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `\x1b[2J`) {
		t.Fatalf("control characters reach the text:\n%q", out)
	}
}
