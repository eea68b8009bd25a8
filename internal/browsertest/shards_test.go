package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
)

// TestShardViewInBrowser: knee ui's page of a sharded run with one of its
// three shards complete shows it partial, naming the shards that are not
// complete, and lists each shard's records, throughput, errors and lag
// beside the merged figures.
func TestShardViewInBrowser(t *testing.T) {
	exe := chromiumPath()
	if exe == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set but chromium is not installed (.ci/run installs it)")
		}
		t.Skip("chromium not installed (apt-get install chromium); this test runs in CI")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "knee.db")
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	fp := map[string]string{"seed": "1"}
	var writers []*store.RunWriter
	for i := range 3 {
		j, err := st.JoinShard(store.RunMeta{Kind: store.KindBench, Model: "m"}, store.ShardSpec{RunName: "ui", Index: i, Count: 3, Fingerprint: fp})
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			w, err := j.Begin(time.Now(), 0, 50*time.Microsecond)
			if err != nil {
				t.Fatal(err)
			}
			writers = append(writers, w)
		}
	}
	for id := range int64(20) {
		if id%3 == 2 {
			continue // shard 2 never ran
		}
		r := record.Request{ID: id, Scheduled: time.Duration(id) * 50 * time.Millisecond, OutputTokens: 4, InputTokens: 10}
		r.Sent = r.Scheduled + time.Millisecond
		r.FirstToken, r.Done, r.StreamEnd = r.Sent+20*time.Millisecond, r.Sent+40*time.Millisecond, r.Sent+41*time.Millisecond
		if id == 3 {
			r.Error, r.HTTPStatus = record.ErrHTTP5xx, 500
		}
		writers[id%3].Add(&r)
	}
	if _, _, err := writers[0].FinishShard(store.StatusComplete); err != nil {
		t.Fatal(err)
	}
	if err := writers[1].Flush(); err != nil {
		t.Fatal(err)
	}
	st.Close()

	base := startUI(t, db)
	b := newBrowser(t, exe, dir)
	b.do(chromedp.Navigate(base + "/#runs/report/1"))
	b.waitFor(`document.querySelectorAll('#shards-table tbody tr').length === 4`)
	head := eval[string](b, `document.getElementById('shards-head').textContent`)
	if !strings.Contains(head, "partial: 1 of 3 shards complete (not: 1, 2)") {
		t.Errorf("shard view says %q; want it partial, naming shards 1 and 2", head)
	}
	rows := eval[[]string](b, `[...document.querySelectorAll('#shards-table tbody tr')].map(r => [...r.children].map(c => c.textContent).join('|'))`)
	// merged, shard 0 (7 requests, one failed), shard 1 (7), shard 2 (none).
	for i, want := range []string{"merged|||14|", "shard 0|complete|1|7|", "shard 1|", "shard 2|"} {
		if i >= len(rows) || !strings.HasPrefix(rows[i], want) {
			t.Errorf("row %d reads %q; want it to start %q (all rows: %q)", i, rows[i], want, rows)
		}
	}
	// Shard 2 registered and never ran: registered, or interrupted once
	// its heartbeat is stale.
	if len(rows) == 4 && (strings.Contains(rows[3], "complete") || !strings.Contains(rows[3], "|1|0|")) {
		t.Errorf("shard 2's row %q: want not complete, attempt 1, no records", rows[3])
	}
	if !strings.Contains(rows[1], "|1|1.00|") {
		t.Errorf("shard 0's row %q does not show its 1 error and 1 ms lag", rows[1])
	}
	// No shard recorded when its process began: the spread is not known,
	// and says so rather than 0 ms; the schedules' zeros are beside it.
	if text := eval[string](b, `document.getElementById('shards-table').nextElementSibling.textContent`); !strings.Contains(text, "not known yet") ||
		!strings.Contains(text, "schedules' zeros within") {
		t.Errorf("shard view's start line %q; want the processes' begin spread said unknown, and the schedules' zeros", text)
	}
	b.shot("shards")
	b.checkClean()
}
