package runs

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// A long import says how far it got and how long is left, timed by an
// injected clock: here every read takes one second, so the first line comes
// at 3 s and the next 15 s later, and the estimate is the rest at the rate
// so far.
func TestImportStreamSaysProgress(t *testing.T) {
	st, err := Open(filepath.Join(t.TempDir(), "knee.db"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	line := []byte(`{"id":1,"scheduled_ms":0,"sent_ms":0,"first_token_ms":50,"done_ms":90,"output_tokens":4,"input_tokens":8}` + "\n")
	data := bytes.Repeat(line, 2000)
	clock := time.Unix(0, 0)
	var said []string
	o := Import{Path: "r.jsonl", Say: func(m string) { said = append(said, m) }, Size: int64(len(data)),
		Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	// One read is one small chunk: many reads, many seconds.
	if _, err := o.Stream(st, &chunked{r: bytes.NewReader(data), n: 4096}, sha256.New()); err != nil {
		t.Fatal(err)
	}
	if len(said) < 2 {
		t.Fatalf("said %q, want progress lines", said)
	}
	// Three reads of 4096 bytes in 3 s: the rest at that rate.
	read := 3 * 4096
	left := (3 * time.Second * time.Duration(len(data)-read) / time.Duration(read)).Round(time.Second)
	want := fmt.Sprintf("0.0 of %.1f MB read and stored (%.0f%%) in 3s; about %s to go at this rate", float64(len(data))/1e6, 100*float64(read)/float64(len(data)), left)
	if said[0] != want {
		t.Errorf("first progress line %q, want %q", said[0], want)
	}
	if m := regexp.MustCompile(`in (\d+)s;`).FindStringSubmatch(said[1]); m == nil || m[1] != "18" {
		t.Errorf("second progress line %q, want it 15 s after the first", said[1])
	}
}

type chunked struct {
	r *bytes.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }
