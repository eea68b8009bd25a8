package runs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// storedRun writes a bench run of 6 records, 2 of them failed, into a new
// database and returns its path.
func storedRun(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "knee.db")
	st, err := Open(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := st.BeginRun(store.RunMeta{Kind: store.KindBench, Label: "lab", Target: "http://x", Model: "m",
		Config: map[string]string{"load": "1 user", "slo": "p95(ttft)<1ms"}})
	if err != nil {
		t.Fatal(err)
	}
	var recs []record.Request
	for i := range 6 {
		ms := time.Duration(i+1) * time.Millisecond
		r := record.Request{ID: int64(i), Sent: ms, FirstToken: 2 * ms, Done: 3 * ms, OutputTokens: 4, InputTokens: 8}
		if i >= 4 {
			r = record.Request{ID: int64(i), Sent: ms, Error: record.ErrHTTP5xx, HTTPStatus: 500, ErrorMessage: "boom"}
		}
		recs = append(recs, r)
		w.Add(&r)
	}
	if err := w.Finish(stats.Summarize(recs, stats.Options{}), store.StatusComplete); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenAndResolveRefuseBadInput(t *testing.T) {
	none := func(string) string { return "" }
	dir := t.TempDir()
	if _, err := OpenRead(filepath.Join(dir, "missing.db"), none); !badinput.Is(err) || !strings.Contains(err.Error(), "pass --db FILE") {
		t.Errorf("missing database: %v", err)
	}
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte("definitely not a database\n"), 0o644)
	if _, err := OpenRead(garbage, none); !badinput.Is(err) {
		t.Errorf("garbage database: %v, want bad input", err)
	}
	if _, _, err := OpenRun(storedRun(t), none, "99"); !badinput.Is(err) {
		t.Errorf("unknown run: %v, want bad input", err)
	}
	if err := WantOne("report", nil); !badinput.Is(err) || !strings.Contains(err.Error(), "got 0 arguments") {
		t.Errorf("WantOne: %v", err)
	}
	if CheckKind("sim") != nil || !badinput.Is(CheckKind("nope")) {
		t.Error("CheckKind")
	}
}

func TestLoadListAndExport(t *testing.T) {
	st, id, err := OpenRun(storedRun(t), func(string) string { return "" }, "last")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lr, err := Load(st, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(lr.Records) != 6 || lr.Sweep != nil || lr.Report.Load != "1 user" || lr.Report.Label != "lab" {
		t.Errorf("loaded: %d records, sweep %v, load %q, label %q", len(lr.Records), lr.Sweep, lr.Report.Load, lr.Report.Label)
	}
	if len(lr.Report.SLOs) != 1 || lr.Report.SLOs[0].Met {
		t.Errorf("the stored objective p95(ttft)<1ms should be judged and fail (TTFT 1–4 ms): %+v", lr.Report.SLOs)
	}

	list, err := st.ListRuns(store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := Table(&table, st, list); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(table.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "ID  NAME  STARTED") ||
		!strings.Contains(lines[1], "bench  complete  lab") || !strings.Contains(lines[1], "http://x") {
		t.Errorf("table:\n%s", table.String())
	}

	var out bytes.Buffer
	n, err := Export{Format: "jsonl", ErrorsOnly: true, Step: -1}.Write(&out, st, id)
	if err != nil || n != 2 || strings.Count(out.String(), "\n") != 2 || !strings.Contains(out.String(), "boom") {
		t.Errorf("errors only: %d records, %v:\n%s", n, err, out.String())
	}
	out.Reset()
	n, err = Export{Format: "csv", Step: -1, Limit: 3}.Write(&out, st, id)
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); err != nil || n != 3 || len(lines) != 4 || !strings.HasPrefix(lines[0], "id,step,warmup") ||
		!strings.HasPrefix(lines[1], "0,,false,0.000,1.000,1.000,2.000,") {
		t.Errorf("csv, limit 3: %d, %v:\n%s", n, err, out.String())
	}
	info, _ := st.Run(id)
	if err := (Export{Step: 1}).CheckStep(st, info); !badinput.Is(err) || !strings.Contains(err.Error(), "is a bench, not a sweep") {
		t.Errorf("a step of a bench: %v", err)
	}
	if (Export{Limit: -1}).Check() == nil || (Export{Step: -2}).Check() == nil || (Export{Step: -1}).Check() != nil {
		t.Error("Check")
	}
	for in, want := range map[[2]string]string{{"", "x.csv"}: "csv", {"", ""}: "jsonl", {"json", "x.csv"}: "jsonl"} {
		if got, err := ExportFormat(in[0], in[1]); got != want || err != nil {
			t.Errorf("ExportFormat(%q, %q) = %q, %v; want %q", in[0], in[1], got, err, want)
		}
	}
	if _, err := ExportFormat("xml", ""); !badinput.Is(err) {
		t.Errorf("xml: %v", err)
	}
}
