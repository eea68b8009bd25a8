package cli

import (
	"context"
	"database/sql"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
	"github.com/knee-dev/knee/internal/store"
)

// lockedBuffer is a strings.Builder safe for the writer goroutine and the
// command to write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestShardDatabaseDownMidRun: the run database stops taking writes while
// two shards are measuring (another process holds SQLite's write lock, so
// every write fails after the busy timeout, as against a dead server). Each
// shard measures on, says when the database stopped taking its records,
// exits non-zero saying how many it could not store, and keeps every record
// it measured in a file it names: together with what reached the database,
// nothing measured is lost.
func TestShardDatabaseDownMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out SQLite's busy timeout several times")
	}
	// Every write after the lock fails only once the busy timeout passes,
	// five times over per shard: 2 s each instead of the 10 s default. Long
	// enough still that the two shards' own writes, before the lock, never
	// time out on each other.
	opts := store.Options{BusyTimeout: 2 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	url, srv := simservertest.Start(t, nil)
	dir := t.TempDir()
	db := filepath.Join(dir, "knee.db")
	const requests = 120
	args := []string{"bench", "--url", url, "--model", srv.Model(), "--input-tokens", "32", "--output-tokens", "4", "--seed", "4",
		"--rate", "40", "--requests", strconv.Itoa(requests), "--quiet", "--json", "--db", db, "--shards", "2", "--run-name", "outage"}
	var (
		wg    sync.WaitGroup
		codes [2]int
		errs  [2]*lockedBuffer
	)
	for i := range 2 {
		errs[i] = &lockedBuffer{}
		wg.Go(func() {
			env := &Env{Stdin: strings.NewReader(""), Stdout: &strings.Builder{}, Stderr: errs[i], Getenv: func(k string) string {
				switch k {
				case "JOB_COMPLETION_INDEX":
					return strconv.Itoa(i)
				case "TMPDIR":
					return dir
				}
				return ""
			}, storeOptions: opts}
			codes[i] = MainEnv(ctx, env, args)
		})
	}
	// Take the database down once both shards have stored a few records.
	for {
		if ctx.Err() != nil {
			t.Fatal("the shards stored nothing in time")
		}
		time.Sleep(50 * time.Millisecond)
		_, n0 := shardStored(db, 0)
		_, n1 := shardStored(db, 1)
		if n0 >= 5 && n1 >= 5 {
			break
		}
	}
	// The locker waits its turn like any writer: a shard may hold the
	// write lock for a moment just then.
	locker, err := sql.Open("sqlite", db+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	conn, err := locker.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	conn.ExecContext(ctx, `ROLLBACK`)
	conn.Close()
	t.Logf("shard 0 said:\n%s", errs[0])

	st, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := map[int64]bool{}
	st.Records(1, func(r *record.Request) error { stored[r.ID] = true; return nil })
	all := map[int64]bool{}
	for i := range 2 {
		text := errs[i].String()
		if codes[i] == 0 {
			t.Errorf("shard %d exited 0 though the database was down at its end:\n%s", i, text)
		}
		for _, want := range []string{"not taking records", "records could not be stored", "run it again (same index and --run-name)"} {
			if !strings.Contains(text, want) {
				t.Errorf("shard %d does not say %q:\n%s", i, want, text)
			}
		}
		// One file: the records the database did not take (issue 39 item
		// 16: a second file with all of them overlapped it), and the
		// message says the rest are stored.
		kept := regexp.MustCompile(`(\d+) of \d+ records could not be stored[^;]*; (\d+) of them are kept in (\S+\.jsonl)`).FindStringSubmatch(text)
		if kept == nil || !strings.Contains(text, "so between them every record is kept") {
			t.Errorf("shard %d does not name where its records are kept:\n%s", i, text)
			continue
		}
		if strings.Contains(text, "knee-records-") {
			t.Errorf("shard %d wrote a second records file beside %s:\n%s", i, kept[3], text)
		}
		recs := readRecords(t, kept[3])
		if n, _ := strconv.Atoi(kept[2]); n != len(recs) || kept[1] != kept[2] {
			t.Errorf("shard %d: says %s of %s unstored records kept, %s holds %d", i, kept[2], kept[1], kept[3], len(recs))
		}
		for _, r := range recs {
			all[r.ID] = true
		}
	}
	for id := range stored {
		all[id] = true
	}
	if len(all) != requests || len(stored) >= requests {
		t.Errorf("%d requests stored, %d stored or kept; want some not stored and all %d kept", len(stored), len(all), requests)
	}
	shards, _, _ := st.RunShards(1)
	for _, s := range shards {
		if s.Status == store.StatusComplete {
			t.Errorf("shard %d reads complete though its records were not all stored", s.Index)
		}
	}
	// Neither shard could mark its end, so the run's row still says
	// running; its heartbeat is older than the store's 5 s StaleAfter (the
	// shards waited out five 2 s busy timeouts each since their last
	// write), so knee runs says what happened: interrupted, not running
	// (issue 39 item 16).
	code, list, lerrs := kneeEnv(t, nil, "runs", "--db", db)
	if code != 0 {
		t.Fatalf("knee runs: exit %d: %s", code, lerrs)
	}
	if !strings.Contains(list, " interrupted ") || strings.Contains(list, " running ") {
		t.Errorf("knee runs does not show the run interrupted:\n%s", list)
	}
}
