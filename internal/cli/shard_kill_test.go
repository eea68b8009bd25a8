package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/store/storetest"
)

// buildKnee returns the knee binary (skipped with -short), built once for
// the package's tests: each build links a ~65 MB binary, seconds of CI per
// test that needs one.
func buildKnee(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the knee binary")
	}
	kneeBin.once.Do(func() {
		kneeBin.dir, kneeBin.err = os.MkdirTemp("", "knee-test-bin-")
		if kneeBin.err != nil {
			return
		}
		bin := filepath.Join(kneeBin.dir, "knee")
		build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "github.com/knee-dev/knee/cmd/knee")
		build.Stderr = os.Stderr
		if kneeBin.err = build.Run(); kneeBin.err == nil {
			kneeBin.path = bin
		}
	})
	if kneeBin.err != nil {
		t.Fatalf("building knee: %v", kneeBin.err)
	}
	return kneeBin.path
}

// parallelUntimed marks parallel a test that checks records, counts and
// statuses, never a latency (or only one an order of magnitude from its
// bound, which a shared CPU cannot close), and spends its time waiting on a
// simulated server's clock or a timer (under the race detector it takes
// about as long as without it): the sharded-run tests, the real-time mix
// sweeps, the probes beside a light and a queueing load (60x apart, 2-4x
// asserted), bench's over-saturation stop (60 req/s on an L4 queues
// far past the 16 in flight a stop needs; 4 req/s never nears it) and the
// dead-target stops (a 5 s stretch, 40 s allowed), and small runs checked
// for their records, classes, reports and exit codes (the own-users mix,
// the sweeps by URL, over a trace and stored, failing and misbehaving
// servers, the stored report). Go runs parallel tests
// together (-parallel: GOMAXPROCS by default, 4 in scripts/test.sh's
// plain pass) only after all the sequential ones, so these overlap one
// another and never a timing test, and four at once share two cores
// without changing an outcome (measured on a loaded 2-core machine).
// TestShardDatabaseDownMidRun stays out: its shards' own writes must not
// wait out its 2 s busy timeout on each other, which a crowded CPU could
// make them do.
func parallelUntimed(t *testing.T) {
	t.Parallel()
}

// kneeBin is the binary buildKnee built; TestMain removes its folder.
var kneeBin struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if kneeBin.dir != "" {
		os.RemoveAll(kneeBin.dir)
	}
	os.Exit(code)
}

// startServeProcess runs `knee serve` on a random loopback port and returns its
// base URL and model; the process is stopped when the test ends.
func startServeProcess(t *testing.T, bin string) (base, model string) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	listening := regexp.MustCompile(`listening on (http://\S+)/v1 \(model "([^"]+)"\)`)
	found := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- [2]string{m[1], m[2]}
				break
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case f := <-found:
		return f[0], f[1]
	case <-time.After(60 * time.Second):
		t.Fatal("knee serve did not say where it listens within 60 s")
	}
	return "", ""
}

// shardTestDB is the PostgreSQL of KNEE_TEST_POSTGRES_URL (a schema of the
// test's own) when set, else an SQLite file in dir.
func shardTestDB(t *testing.T, dir string) string {
	if os.Getenv(storetest.Env) != "" {
		return storetest.PostgresURL(t)
	}
	return filepath.Join(dir, "knee.db")
}

// TestShardKill9 runs four knee processes as one sharded run
// (JOB_COMPLETION_INDEX=0..3) against one `knee serve`, SIGKILLs shard 2
// mid-run, and checks what Kubernetes' restart of a failed index relies
// on: the killed shard's stored records stay, the run reads partial naming
// it while the other three complete, and rerunning index 2 completes the
// run with each request stored once and the first attempt's records kept
// as they were.
func TestShardKill9(t *testing.T) {
	parallelUntimed(t)
	dir := t.TempDir()
	bin := buildKnee(t)
	base, model := startServeProcess(t, bin)
	db := shardTestDB(t, dir)
	const requests = 400
	args := []string{"bench", "--url", base, "--model", model, "--rate", "50", "--requests", strconv.Itoa(requests),
		"--input-tokens", "32", "--output-tokens", "8", "--seed", "9", "--shards", "4", "--run-name", "kill9",
		"--db", db, "--quiet", "--json", "--request-timeout", "30s", "--shard-timeout", "60s"}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	shard := func(i int, out string) (*exec.Cmd, *bytes.Buffer) {
		os.MkdirAll(out, 0o755)
		cmd := exec.CommandContext(ctx, bin, append(args, "--out", out)...)
		cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX="+strconv.Itoa(i), "KNEE_DB=")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		return cmd, &b
	}
	var (
		cmds [4]*exec.Cmd
		outs [4]*bytes.Buffer
	)
	for i := range 4 {
		cmds[i], outs[i] = shard(i, filepath.Join(dir, "out"+strconv.Itoa(i)))
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	var once sync.Once
	stopAll := func() {
		once.Do(func() {
			for _, c := range cmds {
				c.Process.Kill()
			}
		})
	}
	defer stopAll()

	// Shard 2 is killed once it has stored 40 of its 100 records: well
	// inside its 8 s of load.
	deadline := time.Now().Add(90 * time.Second)
	var runID int64
	for {
		if time.Now().After(deadline) {
			stopAll()
			t.Fatalf("shard 2 stored no records in 90 s; its output:\n%s", outs[2])
		}
		time.Sleep(100 * time.Millisecond)
		if id, n := shardStored(db, 2); n >= 40 {
			runID = id
			break
		}
	}
	killAt := time.Now()
	if err := cmds[2].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmds[2].Wait(); err == nil {
		t.Fatal("shard 2 exited 0 after SIGKILL")
	}
	// The surviving shard that ends the run exits 1 saying it ended partial
	// (one rule with a sweep's shards); the others exit 0.
	endedPartial := 0
	for _, i := range []int{0, 1, 3} {
		done := make(chan error, 1)
		go func() { done <- cmds[i].Wait() }()
		select {
		case err := <-done:
			var exit *exec.ExitError
			switch {
			case errors.As(err, &exit) && exit.ExitCode() == 1 && strings.Contains(outs[i].String(), "the run ended partial: 3 of 4 shards complete (not: 2)"):
				endedPartial++
			case err != nil:
				t.Errorf("shard %d (not killed): %v\n%s", i, err, outs[i])
			}
		case <-time.After(120 * time.Second):
			stopAll()
			t.Fatalf("shard %d did not end within 120 s", i)
		}
	}
	if endedPartial != 1 {
		t.Errorf("%d surviving shards said the run ended partial; want the one that ended it", endedPartial)
	}

	// The killed shard's records as its first attempt stored them.
	first := map[int64]string{}
	st, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	st.ShardRecords(runID, func(s int, r *record.Request) error {
		if s == 2 {
			b, _ := json.Marshal(r)
			first[r.ID] = string(b)
		}
		return nil
	})
	shards, _, err := st.RunShards(runID)
	st.Close()
	if err != nil || len(shards) != 4 {
		t.Fatalf("shards %v %v", shards, err)
	}
	for _, s := range shards {
		want := store.StatusComplete
		if s.Index == 2 {
			want = store.StatusInterrupted
		}
		if s.Status != want || (s.Index != 2 && s.Records != requests/4) {
			t.Errorf("shard %d: %s with %d records; want %s (and %d records unless killed)", s.Index, s.Status, s.Records, want, requests/4)
		}
	}
	if len(first) < 40 {
		t.Fatalf("the killed shard's records: %d kept, want at least the 40 seen before the kill", len(first))
	}
	// Every request the killed shard had finished over a second before the
	// kill (records.jsonl is flushed each second, the database each 250 ms)
	// is in the database.
	checked := 0
	if f, err := os.Open(filepath.Join(dir, "out2", "records.jsonl")); err == nil {
		start := shards[2].Started
		record.Scan(f, func(r *record.Request) error {
			if !start.IsZero() && start.Add(r.StreamEnd).Before(killAt.Add(-1500*time.Millisecond)) {
				checked++
				if _, ok := first[r.ID]; !ok {
					t.Errorf("request %d ended before the kill but is not stored", r.ID)
				}
			}
			return nil
		})
		f.Close()
	}
	if checked < 10 {
		t.Errorf("only %d of the killed shard's requests ended well before the kill: nothing to check", checked)
	}
	t.Logf("killed shard 2 with %d records stored; %d checked against its records.jsonl", len(first), checked)

	code, text, errs := kneeEnv(t, nil, "report", "--db", db, strconv.FormatInt(runID, 10))
	if code != 0 || !strings.Contains(text, "partial: 3 of 4 shards complete (not: 2)") {
		t.Fatalf("report of the run with shard 2 killed: exit %d\n%s%s", code, text, errs)
	}

	// Kubernetes restarts the failed index.
	re, reOut := shard(2, filepath.Join(dir, "out2-again"))
	if err := re.Run(); err != nil {
		t.Fatalf("restarted shard 2: %v\n%s", err, reOut)
	}
	if !strings.Contains(reOut.String(), "attempt 2") {
		t.Errorf("the restarted shard does not say it is a restart:\n%s", reOut)
	}
	st, err = store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ri, err := st.Run(runID)
	if err != nil || ri.Status != store.StatusComplete || ri.Records != requests {
		t.Fatalf("after the restart: %+v %v; want complete with %d records", ri, err, requests)
	}
	seen := map[int64]bool{}
	st.ShardRecords(runID, func(s int, r *record.Request) error {
		if seen[r.ID] {
			t.Errorf("request %d stored twice", r.ID)
		}
		seen[r.ID] = true
		if int64(s) != r.ID%4 {
			t.Errorf("request %d stored as shard %d's", r.ID, s)
		}
		if was, ok := first[r.ID]; ok {
			b, _ := json.Marshal(r)
			if string(b) != was {
				t.Errorf("request %d: the restart replaced the first attempt's record", r.ID)
			}
		}
		return nil
	})
	if len(seen) != requests {
		t.Errorf("%d distinct requests stored, want %d", len(seen), requests)
	}
	shards, _, _ = st.RunShards(runID)
	if shards[2].Attempt != 2 || shards[2].Status != store.StatusComplete || shards[2].Records != requests/4 {
		t.Errorf("restarted shard: %+v", shards[2])
	}
	code, text, errs = kneeEnv(t, nil, "report", "--db", db, strconv.FormatInt(runID, 10))
	if code != 0 || !strings.Contains(text, "sharded run: 4 of 4 shards complete") {
		t.Errorf("report after the restart: exit %d\n%s%s", code, text, errs)
	}
}

// shardStored returns the sharded run's id and how many records shard i has
// stored so far (0 while there is none).
func shardStored(db string, i int) (int64, int) {
	if !strings.Contains(db, "://") {
		if _, err := os.Stat(db); err != nil {
			return 0, 0
		}
	}
	st, err := store.OpenReadOnly(db)
	if err != nil {
		return 0, 0
	}
	defer st.Close()
	runs, err := st.ListRuns(store.Filter{Limit: 1})
	if err != nil || len(runs) == 0 {
		return 0, 0
	}
	shards, _, err := st.RunShards(runs[0].ID)
	if err != nil {
		return 0, 0
	}
	for _, s := range shards {
		if s.Index == i {
			return runs[0].ID, s.Records
		}
	}
	return runs[0].ID, 0
}
