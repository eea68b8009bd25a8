package runs

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// hostile is what a server answered 500 with, and what a --label said: an
// OSC that retitles the terminal, a clear screen, a bell, a bare CR and an
// 8-bit CSI.
const hostile = "boom \x1b]0;PWNED\x07\x1b[2J\rX\u009b31m"

// TestControlCharactersEscapedInEveryView stores a run whose label and
// server error carry terminal control sequences, and reads it back as knee
// runs, knee report (glance, text, Markdown) and knee records --errors
// --format csv do: not one raw control byte (but the layout's own newlines)
// reaches the output, and the escaped text is there to read.
func TestControlCharactersEscapedInEveryView(t *testing.T) {
	path := filepath.Join(t.TempDir(), "knee.db")
	st, err := Open(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w, err := st.BeginRun(store.RunMeta{Kind: store.KindBench, Label: "lbl" + hostile, Target: "http://x", Model: "m\x1b[31m",
		Config: map[string]string{"load": "1 user"}})
	if err != nil {
		t.Fatal(err)
	}
	var recs []record.Request
	for i := range 4 {
		ms := time.Duration(i+1) * time.Millisecond
		r := record.Request{ID: int64(i), Sent: ms, FirstToken: 2 * ms, Done: 3 * ms, OutputTokens: 4, InputTokens: 8}
		if i >= 2 {
			r = record.Request{ID: int64(i), Sent: ms, Error: record.ErrHTTP5xx, HTTPStatus: 500, ErrorMessage: hostile}
		}
		recs = append(recs, r)
		w.Add(&r)
	}
	if err := w.Finish(stats.Summarize(recs, stats.Options{}), store.StatusComplete); err != nil {
		t.Fatal(err)
	}
	id := w.ID()

	clean := func(what, out string) {
		t.Helper()
		for _, c := range out {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || (c >= 0x80 && c <= 0x9f) {
				t.Errorf("%s: raw control character %U in the output:\n%q", what, c, out)
				return
			}
		}
		if !strings.Contains(out, `\x1b]0;PWNED\x07\x1b[2J`) {
			t.Errorf("%s: the escaped message is not shown:\n%s", what, out)
		}
	}

	list, err := st.ListRuns(store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := Table(&table, st, list); err != nil {
		t.Fatal(err)
	}
	for _, c := range table.String() {
		if c == 0x1b || c == '\r' || c == 0x07 {
			t.Fatalf("knee runs: raw control character %U:\n%q", c, table.String())
		}
	}
	if lines := strings.Split(strings.TrimSpace(table.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], `lbl`) {
		t.Errorf("knee runs: the label broke the table:\n%s", table.String())
	}

	lr, err := Load(st, id)
	if err != nil {
		t.Fatal(err)
	}
	for name, render := range map[string]func(*bytes.Buffer) error{
		"report (glance)": func(b *bytes.Buffer) error { return report.Write(b, lr.Report, false, false, "") },
		"report --detail": func(b *bytes.Buffer) error { return report.Write(b, lr.Report, false, true, "") },
		"report.md":       func(b *bytes.Buffer) error { return report.Markdown(b, lr.Report) },
	} {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		clean(name, b.String())
	}

	var out bytes.Buffer
	if n, err := (Export{Format: "csv", ErrorsOnly: true, Step: -1}).Write(&out, st, id); err != nil || n != 2 {
		t.Fatalf("records --errors --format csv: %d, %v", n, err)
	}
	clean("records --errors --format csv", out.String())
	out.Reset()
	// The JSONL export keeps the exact bytes, JSON-escaped: it reads back.
	if _, err := (Export{Format: "jsonl", ErrorsOnly: true, Step: -1}).Write(&out, st, id); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `\u001b]0;PWNED\u0007`) {
		t.Errorf("jsonl export: %s", out.String())
	}
}
