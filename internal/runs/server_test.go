package runs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/scrape"
)

// A series written to a file reads back; anything else is bad input
// naming the flag and the file.
func TestReadServerSeries(t *testing.T) {
	dir := t.TempDir()
	s := scrape.Series{URL: "http://h/metrics", Server: "vllm", Samples: []scrape.Sample{
		{TMS: 0, Values: map[scrape.Metric]float64{scrape.Waiting: 0, scrape.Running: 2}},
		{TMS: 1000, Values: map[scrape.Metric]float64{scrape.Waiting: 5, scrape.Running: 8}},
	}}
	b, _ := json.Marshal(s)
	good, notSeries := filepath.Join(dir, "server_metrics.json"), filepath.Join(dir, "summary.json")
	os.WriteFile(good, b, 0o644)
	os.WriteFile(notSeries, []byte(`{"requests": 3}`), 0o644)
	got, err := ReadServerSeries(good, "--server-metrics")
	if err != nil || got.Server != "vllm" || len(got.Samples) != 2 {
		t.Fatalf("read back %+v, %v", got, err)
	}
	for _, p := range []string{notSeries, filepath.Join(dir, "missing.json")} {
		if _, err := ReadServerSeries(p, "--server-metrics"); err == nil || !badinput.Is(err) || !strings.HasPrefix(err.Error(), "--server-metrics") {
			t.Errorf("%s: %v, want bad input naming --server-metrics", p, err)
		}
	}

	// A file over the limit is refused, unread, naming the limit.
	huge := filepath.Join(dir, "huge.json")
	if f, err := os.Create(huge); err == nil {
		f.Truncate(MaxServerSeriesBytes + 1) // sparse: no disk used
		f.Close()
	}
	if _, err := ReadServerSeries(huge, "--server-metrics"); !badinput.Is(err) || !strings.Contains(err.Error(), "--server-metrics: "+huge+" is larger than 256 MiB") {
		t.Errorf("file over the limit: %v, want bad input naming the limit", err)
	}

	// The facts cover the records' span, warmups left out; the server's
	// most running and waiting show.
	recs := []record.Request{{Sent: 0, Done: 1e9}, {Sent: 0, Done: 5e9, Warmup: true}}
	f := ServerFacts(got, recs)
	if f == nil || f.Source != "vLLM /metrics at http://h/metrics" || f.RunningMax == nil || *f.RunningMax != 8 || f.WaitingMax == nil || *f.WaitingMax != 5 {
		t.Errorf("facts %+v", f)
	}
	if f := ServerFacts(got, recs[1:]); f != nil {
		t.Errorf("only warmups: facts %+v, want none", f)
	}
	if f := ServerFacts(&scrape.Series{Samples: got.Samples}, recs); f != nil {
		t.Errorf("no server matched: facts %+v, want none", f)
	}
}
