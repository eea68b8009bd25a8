package runs

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/ingest"
	"github.com/knee-dev/knee/internal/store"
)

// A records.jsonl is stored as it streams; importing the same content
// again says so; a malformed file leaves no run behind.
func TestImportStream(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "ingest", "testdata", "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := Open(filepath.Join(t.TempDir(), "knee.db"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var said []string
	o := Import{Path: "r.jsonl", Label: "mine", Version: "test", Say: func(m string) { said = append(said, m) }}
	first, err := o.Stream(st, bytes.NewReader(data), sha256.New())
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(data, []byte("\n"))
	if first.Records != lines || first.Format != ingest.FormatRecords {
		t.Errorf("stored %+v, want %d records", first, lines)
	}
	info, err := st.Run(first.ID)
	if err != nil || info.Status != store.StatusComplete || info.Label != "mine" || info.Target != "r.jsonl" || info.Records != lines {
		t.Errorf("run %+v, %v", info, err)
	}
	if len(said) != 0 {
		t.Errorf("said %q on a first import", said)
	}
	second, err := o.Stream(st, bytes.NewReader(data), sha256.New())
	if err != nil || second.ID == first.ID {
		t.Fatalf("second import: %+v %v", second, err)
	}
	if len(said) != 1 || !strings.Contains(said[0], "same content as run(s) 1 imported before") {
		t.Errorf("second import said %q", said)
	}
	_, err = o.Stream(st, strings.NewReader(string(data)+"{not json\n{\"id\":\n"), sha256.New())
	if !badinput.Is(err) {
		t.Errorf("malformed file: %v, want bad input", err)
	}
	list, _ := st.ListRuns(store.Filter{})
	if len(list) != 2 {
		t.Errorf("%d runs stored after the malformed file, want the 2 good ones", len(list))
	}
}

// The flags win over what the file says; the load and what the file
// lacked are noted in the stored configuration.
func TestImportMeta(t *testing.T) {
	o := Import{Path: "dir/bench.json", Model: "flag-model", Version: "v"}
	meta, _ := o.Meta(&ingest.Run{Format: "vllm", Model: "file-model", Source: "run 2", Concurrency: 8, Notes: []string{"n1"}}, "abc")
	pairs := ConfigPairs(meta.Config.(json.RawMessage))
	if meta.Model != "flag-model" || meta.Target != "bench.json" || meta.Label != "run 2" || meta.Kind != store.KindImport {
		t.Errorf("meta %+v", meta)
	}
	has := map[[2]string]bool{}
	for _, kv := range pairs {
		has[kv] = true
	}
	for _, want := range [][2]string{{"imported_from", "dir/bench.json"}, {"file_sha256", "abc"}, {"load", "8 in flight"}, {"note", "n1"}} {
		if !has[want] {
			t.Errorf("config lacks %v: %v", want, pairs)
		}
	}
}
