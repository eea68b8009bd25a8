package browsertest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/store"
)

// classMix lists its classes in an order their requests are not stored in
// (the test checks it): sql, the smallest share, first.
const classMix = `seed: 7
classes:
  - name: sql
    share: 0.2
    input_tokens: "512"
    output_tokens: "64:128"
    model: adapter-sql
    slo: ["p95(e2e)<4s"]
  - name: summarize
    share: 0.3
    input_tokens: "2048:4096"
    output_tokens: "128"
    model: adapter-summarize
    slo: ["p95(ttft)<2s"]
  - name: chat
    share: 0.5
    input_tokens: "256:768"
    output_tokens: "128:256"
    slo: ["p95(ttft)<150ms"]
`

// TestClassViewsInBrowser: knee ui shows a mix run's classes with their
// goodput in the mix file's order (not the order the requests completed
// and were stored in), both runs' classes on the compare page, and which
// class of a stored sweep breaks first.
func TestClassViewsInBrowser(t *testing.T) {
	exe := chromiumPath()
	if exe == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but chromium is not installed (.ci/run installs it)")
		}
		t.Skip("chromium not installed (apt-get install chromium); this test runs in CI")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "knee.db")
	mix := filepath.Join(dir, "mix.yaml")
	if err := os.WriteFile(mix, []byte(classMix), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := knee(t, append(args, "--db", db, "--quiet")...)
		if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 3 { // 3: an SLO failed, which is data here
			t.Fatalf("knee %v: %v", args, err)
		}
	}
	// Runs 1 and 2: one adapter slot, then two; run 3: a sweep.
	run("sim", "--mix", mix, "--rate", "8", "--requests", "300", "--max-loras", "1")
	run("sim", "--mix", mix, "--rate", "8", "--requests", "300", "--max-loras", "2")
	run("sim", "sweep", "--mix", mix, "--rate", "2,5,10,20", "--requests", "300", "--max-loras", "2")
	want := []string{"sql", "summarize", "chat"}

	// The stored records come in completion order, which is not the file's.
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.AllRecords(1)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if stored, _ := report.SplitClasses(recs); slices.Equal(stored, want) {
		t.Fatalf("the stored order %v is the file's: the test would not tell the orders apart", stored)
	}

	base := startUI(t, db)
	b := newBrowser(t, exe, dir)
	// The run's report: a per-class table with goodput, in the file's order.
	b.do(chromedp.Navigate(base + "/api/runs/1/report"))
	b.waitFor(`[...document.querySelectorAll('h2')].some(h => h.textContent.startsWith('Per class'))`)
	table := `[...document.querySelectorAll('h2')].find(h => h.textContent.startsWith('Per class')).nextElementSibling`
	header := eval[[]string](b, `[...`+table+`.querySelectorAll('th')].map(c => c.textContent)`)
	if !slices.Contains(header, "goodput req/s") {
		t.Errorf("the class table's header %v has no goodput column", header)
	}
	names := eval[[]string](b, `[...`+table+`.querySelectorAll('tr')].slice(1).map(r => r.children[0].textContent)`)
	if !slices.Equal(names, want) {
		t.Errorf("the run's classes read %v; want the mix file's order %v", names, want)
	}

	// Compare: both runs' classes, row by row.
	b.do(chromedp.Navigate(base + "/#runs/compare/1/2"))
	b.waitFor(`document.querySelectorAll('#compare-classes tbody tr').length === 3`)
	rows := eval[[]string](b, `[...document.querySelectorAll('#compare-classes tbody tr')].map(r => [...r.children].map(c => c.textContent).join('|'))`)
	for i, n := range want {
		cells := strings.Split(rows[i], "|")
		if cells[0] != n || cells[1] == "–" || cells[2] == "–" {
			t.Errorf("compare row %d = %q; want class %s with both runs' requests", i, rows[i], n)
		}
	}
	head := eval[string](b, `document.querySelector('#compare-classes thead').textContent`)
	if !strings.Contains(head, "goodput req/s A") || !strings.Contains(head, "goodput req/s B") {
		t.Errorf("compare header %q lacks both runs' goodput", head)
	}

	// The stored sweep says which class breaks first.
	b.do(chromedp.Navigate(base + "/api/runs/3/report"))
	b.waitFor(`!!document.querySelector('li.breaks-first')`)
	if got := eval[string](b, `document.querySelector('li.breaks-first').textContent`); !strings.Contains(got, "class chat fails first") {
		t.Errorf("the stored sweep's report says %q; want chat breaking first", got)
	}
	b.checkClean()
}
