package cli

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// Why requests failed is reachable: the report lists the most common error
// messages, knee records lists every record or only the failures (JSONL,
// CSV), and exports records.jsonl from the store.
func TestRecordsAndErrorMessages(t *testing.T) {
	parallelUntimed(t)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body, _ := io.ReadAll(r.Body); !bytes.Contains(body, []byte(`"stream":true`)) {
			http.NotFound(w, r) // bench's probes (/tokenize, the prompt overhead) are not the measured requests
			return
		}
		if n.Add(1)%3 == 0 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"max_tokens is too large: 64 > 32","type":"BadRequestError"}}`)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"CUDA out of memory","type":"InternalServerError"}}`)
	}))
	defer srv.Close()
	db := filepath.Join(t.TempDir(), "knee.db")
	code, out, errs := kneeEnv(t, nil, "bench", "--detail", "--db", db, "--url", srv.URL, "--model", "m", "--concurrency", "1", "--requests", "6",
		"--output-tokens", "64", "--ignore-eos", "false")
	if code == 0 {
		t.Fatalf("an all-failed bench exited 0")
	}
	if !strings.Contains(out, "Most common error messages") || !strings.Contains(out, "CUDA out of memory") || !strings.Contains(out, "max_tokens is too large") {
		t.Errorf("bench report does not list the error messages:\n%s", out)
	}
	if !strings.Contains(errs, "knee records 1 --errors") {
		t.Errorf("the failure line does not say where the messages are: %s", errs)
	}
	_, out, _ = kneeEnv(t, nil, "report", "1", "--db", db)
	at := strings.Index(out, "Most common error messages")
	if at < 0 || !strings.Contains(out[at:], "4      http_5xx  HTTP 500") {
		t.Errorf("stored report: messages missing or not most common first:\n%s", out)
	}

	code, out, errs = kneeEnv(t, nil, "records", "1", "--errors", "--db", db)
	recs, err := record.ReadAll(strings.NewReader(out))
	if code != 0 || err != nil || len(recs) != 6 {
		t.Fatalf("records --errors: exit %d, %d records, %v %s", code, len(recs), err, errs)
	}
	for _, r := range recs {
		if r.OK() || r.ErrorMessage == "" {
			t.Errorf("records --errors listed %+v", r)
		}
	}
	code, out, _ = kneeEnv(t, nil, "records", "last", "--format", "csv", "--limit", "2", "--db", db)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(rows) != 3 || rows[0][len(rows[0])-1] != "error_message" || !strings.Contains(out, "CUDA out of memory") {
		t.Errorf("records --format csv --limit 2: exit %d %v\n%s", code, err, out)
	}
	file := filepath.Join(t.TempDir(), "records.jsonl")
	if code, _, errs := kneeEnv(t, nil, "records", "1", "--out", file, "--db", db); code != 0 {
		t.Fatalf("records --out: %s", errs)
	}
	b, _ := os.ReadFile(file)
	if back, err := record.ReadAll(bytes.NewReader(b)); err != nil || len(back) != 6 {
		t.Errorf("exported records.jsonl: %d records, %v", len(back), err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"records"}, "want one run"},
		{[]string{"records", "1", "--format", "xml"}, "--format"},
		{[]string{"records", "1", "--step", "0"}, "not a sweep"},
		{[]string{"records", "9"}, "no such run"},
	} {
		code, _, errs := kneeEnv(t, nil, append(c.args, "--db", db)...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("knee %v: exit %d %q, want 2 naming %q", c.args, code, errs, c.want)
		}
	}
}

// A --url naming an endpoint is answered with the base URL to give.
func TestURLNamingAnEndpoint(t *testing.T) {
	for _, u := range []string{"http://h:8000/v1/chat/completions", "http://h:8000/v1/completions", "http://h:8000/chat/completions/"} {
		for _, cmd := range [][]string{{"bench", "--requests", "1"}, {"sweep", "--rate", "1,2"}} {
			code, _, errs := kneeEnv(t, nil, append(cmd, "--url", u, "--model", "m")...)
			if code != ExitUsage || !strings.Contains(errs, "base URL") || !strings.Contains(errs, "http://h:8000") {
				t.Errorf("knee %s --url %s: exit %d %q; want exit 2 with the base URL", cmd[0], u, code, errs)
			}
		}
	}
}
