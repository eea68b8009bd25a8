package browsertest

import (
	"database/sql"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/store/storetest"
)

// TestPostgresStoreInBrowser: with the runs stored in PostgreSQL, knee
// runs, report and compare read them, and knee ui's runs, compare and
// report pages show them; a sharded run whose shard 2 registered and never
// started says so in knee report and in the ui's shard view. It skips
// without KNEE_TEST_POSTGRES_URL and fails under CI=true without it.
func TestPostgresStoreInBrowser(t *testing.T) {
	db := storetest.PostgresURL(t)
	exe := needChromium(t)
	dir := t.TempDir()

	// Runs 1 and 2: two simulations, stored by knee itself.
	for _, label := range []string{"pg-first", "pg-second"} {
		if out, err := knee(t, "sim", "--db", db, "--concurrency", "8", "--requests", "200", "--label", label, "--quiet").Output(); err != nil {
			t.Fatalf("knee sim --label %s: %v\n%s", label, err, out)
		}
	}
	// Run 3: three shards; shard 0 completed, shard 1 began and its process
	// went, shard 2 registered and its process went before it began.
	shardRun := storeShardedRun(t, db)

	run := func(args ...string) string {
		t.Helper()
		out, err := knee(t, append(args, "--db", db)...).Output()
		if err != nil {
			t.Fatalf("knee %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	runs := run("runs")
	for _, want := range []string{"pg-first", "pg-second", "sim", "bench"} {
		if !strings.Contains(runs, want) {
			t.Errorf("knee runs lacks %q:\n%s", want, runs)
		}
	}
	if rep := run("report", "1"); !strings.Contains(rep, "pg-first") || !strings.Contains(rep, "TTFT") {
		t.Errorf("knee report 1 does not show the first run's report:\n%s", rep)
	}
	if cmp := run("compare", "1", "2"); !strings.Contains(cmp, "TTFT") || !strings.Contains(strings.ToLower(cmp), "verdict") {
		t.Errorf("knee compare 1 2 shows no comparison:\n%s", cmp)
	}
	id := strconv.FormatInt(shardRun, 10)
	rep := run("report", id)
	for _, want := range []string{"partial: 1 of 3 shards complete (not: 1, 2)", "shard 1: interrupted", "shard 2: registered, never started"} {
		if !strings.Contains(rep, want) {
			t.Errorf("knee report %s lacks %q:\n%s", id, want, rep)
		}
	}

	base := startUI(t, db)
	b := newBrowser(t, exe, dir)
	b.do(chromedp.Navigate(base + "/#runs"))
	b.waitFor(`!!document.getElementById('run-1') && !!document.getElementById('run-2') && !!document.getElementById('run-` + id + `')`)
	labels := eval[string](b, `document.getElementById('runs-table').textContent`)
	if !strings.Contains(labels, "pg-first") || !strings.Contains(labels, "pg-second") {
		t.Errorf("the runs page lacks the stored runs' labels: %q", labels)
	}
	b.shot("postgres-runs")

	b.do(chromedp.Click("#pick-1"), chromedp.Click("#pick-2"))
	b.waitFor(`!document.getElementById('compare-btn').disabled`)
	b.do(chromedp.Click("#compare-btn"))
	b.waitFor(`document.querySelectorAll('#compare-table tbody tr').length > 3 && document.querySelectorAll('#compare-runs .card').length == 2`)
	if cards := eval[[]string](b, `[...document.querySelectorAll('#compare-runs .card')].map(c => c.dataset.run)`); strings.Join(cards, ",") != "1,2" {
		t.Errorf("compare shows runs %v, want 1 and 2", cards)
	}
	if v := eval[string](b, `document.getElementById('compare-verdict').textContent`); !strings.HasPrefix(v, "Verdict: ") || len(v) <= len("Verdict: ") {
		t.Errorf("compare verdict reads %q", v)
	}
	b.shot("postgres-compare")

	b.do(chromedp.Navigate(base + "/#runs/report/1"))
	b.waitFor(`document.getElementById('report-frame')?.getAttribute('src') === '/api/runs/1/report'`)
	res, err := http.Get(base + "/api/runs/1/report")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(page), "pg-first") || !strings.Contains(string(page), "<svg") {
		t.Errorf("the report page's frame: HTTP %d, %d bytes; want the first run's HTML report with its charts", res.StatusCode, len(page))
	}
	b.do(chromedp.Sleep(300 * time.Millisecond)) // let the frame draw for the screenshot
	b.shot("postgres-report")

	b.do(chromedp.Navigate(base + "/#runs/report/" + id))
	b.waitFor(`document.querySelectorAll('#shards-table tbody tr').length === 4`)
	rows := eval[[]string](b, `[...document.querySelectorAll('#shards-table tbody tr')].map(r => [...r.children].map(c => c.textContent).join('|'))`)
	for i, want := range []string{"shard 0|complete|", "shard 1|interrupted|", "shard 2|registered, never started|"} {
		if len(rows) != 4 || !strings.HasPrefix(rows[i+1], want) {
			t.Errorf("shard view row %d: %q; want it to start %q", i+1, rows, want)
		}
	}
	b.shot("postgres-shards")
	b.checkClean()
}

// storeShardedRun stores a run of three shards in db: shard 0 completed
// its requests 0, 3, 6 and 9, shard 1 stored requests 1 and 4 and its
// process went, shard 2 registered and its process went before it began.
// (The shards run in this test's process, which lives on: their heartbeats
// are made old, as a killed process's are.)
func storeShardedRun(t *testing.T, db string) int64 {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	joins := make([]*store.ShardJoin, 3)
	for i := range 3 {
		if joins[i], err = st.JoinShard(store.RunMeta{Kind: store.KindBench, Model: "m", Label: "pg-shards"},
			store.ShardSpec{RunName: "pg", Index: i, Count: 3, Fingerprint: map[string]string{"seed": "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	var writers [2]*store.RunWriter
	for i := range writers {
		if writers[i], err = joins[i].Begin(time.Now(), 0, 50*time.Microsecond); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []int64{0, 1, 3, 4, 6, 9} {
		r := record.Request{ID: id, Scheduled: time.Duration(id) * 50 * time.Millisecond, OutputTokens: 4, InputTokens: 10}
		r.Sent = r.Scheduled + time.Millisecond
		r.FirstToken, r.Done, r.StreamEnd = r.Sent+20*time.Millisecond, r.Sent+40*time.Millisecond, r.Sent+41*time.Millisecond
		writers[id%3].Add(&r)
	}
	if err := writers[1].Flush(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := writers[0].FinishShard(store.StatusComplete); err != nil {
		t.Fatal(err)
	}
	// Shard 1's writer is left as a killed process leaves it: unfinished.
	// Closing the store stops its heartbeats.
	st.Close()
	sqlDB, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	for _, q := range []string{`UPDATE shards SET heartbeat_ns = 1 WHERE run_id = $1 AND shard IN (1, 2)`, `UPDATE runs SET heartbeat_ns = 1 WHERE id = $1`} {
		if _, err := sqlDB.Exec(q, joins[0].RunID); err != nil {
			t.Fatal(err)
		}
	}
	return joins[0].RunID
}
