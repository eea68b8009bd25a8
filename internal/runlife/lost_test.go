package runlife

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// A run that could not save everything says what failed and where every
// record is: --out's records.jsonl, else the database, else a temp file.
func TestLostSaysWhereTheRecordsAre(t *testing.T) {
	t.Parallel()
	full := errors.New("no space left on device")
	recs := []record.Request{{ID: 1}, {ID: 2}}
	tmp := t.TempDir()
	for _, c := range []struct {
		name string
		l    Lost
		want []string
	}{
		{"out kept them", Lost{Out: "o", Errs: SaveErrors{Store: full}, RunID: "7", N: 2},
			[]string{"the run database could not store run 7 (it is not marked complete): no space left on device", "all 2 records are in " + filepath.Join("o", "records.jsonl")}},
		{"the database kept them", Lost{Out: "o", Errs: SaveErrors{JSONL: full}, RunID: "7", N: 2},
			[]string{"--out o: records.jsonl: no space left on device", "all 2 records are stored as run 7"}},
		{"a shard", Lost{Errs: SaveErrors{Store: full}, N: 2, Sharded: true, Shard: 3, RunName: "r", Recs: recs, TempDir: tmp},
			[]string{`shard 3 of run "r" is not marked complete`, "all 2 records are kept in " + tmp}},
		{"records not kept", Lost{Errs: SaveErrors{Store: full}, N: 5, Recs: recs, TempDir: tmp},
			[]string{"the run's 5 per-request records were not kept (give --out DIR"}},
	} {
		err := c.l.Err()
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", c.name, err, w)
			}
		}
	}
}

func TestTrimCutLineKeepsWholeRecords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"{\"id\":1}\n{\"id\":2}\n{\"id", "{\"id\":1}\n{\"id\":2}\n"},
		{"{\"id\":1}\n", "{\"id\":1}\n"},
		{"{\"id", ""},
	} {
		f, err := os.CreateTemp(t.TempDir(), "records")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(c.in)
		TrimCutLine(f)
		f.Close()
		if got, _ := os.ReadFile(f.Name()); string(got) != c.want {
			t.Errorf("%q trimmed to %q, want %q", c.in, got, c.want)
		}
	}
}
