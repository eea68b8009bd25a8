package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// storeTestRuns writes n runs of recs records each into a new database.
func storeTestRuns(t *testing.T, path string, runs, recs int) {
	t.Helper()
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for r := 0; r < runs; r++ {
		var rr []record.Request
		for i := 0; i < recs; i++ {
			sent := time.Duration(i) * 10 * time.Millisecond
			ttft := time.Duration(20+i%7+5*r) * time.Millisecond
			rr = append(rr, record.Request{ID: int64(i), Scheduled: sent, Sent: sent, FirstToken: sent + ttft,
				Done: sent + ttft + 40*time.Millisecond, StreamEnd: sent + ttft + 40*time.Millisecond,
				TokenTimes:  []time.Duration{sent + ttft, sent + ttft + 20*time.Millisecond, sent + ttft + 40*time.Millisecond},
				InputTokens: 100, OutputTokens: 3, TokenSource: record.TokensFromUsage})
		}
		sum := stats.Summarize(rr, stats.Options{})
		if _, err := st.ImportRun(store.RunMeta{Kind: store.KindImport, Target: "test", Model: "m"}, rr, &sum, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// Viewing never writes: runs, report and compare work on a database in a
// folder (and a file) this user cannot write. Root ignores permissions, so
// as root the check runs in a child process without capabilities.
func TestReadOnlyDatabase(t *testing.T) {
	if p := os.Getenv("KNEE_TEST_READONLY_DB"); p != "" {
		readOnlyChecks(t, p)
		return
	}
	dir := filepath.Join(t.TempDir(), "ro")
	os.Mkdir(dir, 0o755)
	db := filepath.Join(dir, "knee.db")
	storeTestRuns(t, db, 2, 50)
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if os.Geteuid() != 0 {
		readOnlyChecks(t, db)
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("running as root and no setpriv to drop the capability that ignores file permissions")
	}
	if out, err := exec.Command(setpriv, "--bounding-set=-all", "--inh-caps=-all", "true").CombinedOutput(); err != nil {
		t.Skipf("running as root and setpriv cannot drop capabilities here: %v %s", err, out)
	}
	cmd := exec.Command(setpriv, "--bounding-set=-all", "--inh-caps=-all", os.Args[0], "-test.run=^TestReadOnlyDatabase$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KNEE_TEST_READONLY_DB="+db)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("read-only checks (without capabilities): %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("child did not run the checks:\n%s", out)
	}
}

func readOnlyChecks(t *testing.T, db string) {
	if f, err := os.OpenFile(filepath.Join(filepath.Dir(db), "probe"), os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		f.Close()
		t.Fatal("the test folder is writable: the check would prove nothing")
	}
	for _, args := range [][]string{{"runs"}, {"runs", "--json"}, {"report", "last"}, {"report", "1", "--format", "json"}, {"compare", "1", "2"}} {
		code, out, errs := kneeEnv(t, nil, append(args, "--db", db)...)
		if code != 0 || out == "" {
			t.Errorf("knee %v on a read-only database: exit %d\n%s", args, code, errs)
		}
	}
}

// A --db that does not exist is named, exit 2, and nothing is created.
func TestMissingDatabaseNotCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing", "dir")
	db := filepath.Join(dir, "x.db")
	for _, args := range [][]string{{"runs"}, {"report", "last"}, {"compare", "1", "2"}} {
		code, _, errs := kneeEnv(t, nil, append(args, "--db", db)...)
		if code != ExitUsage || !strings.Contains(errs, db) || !strings.Contains(errs, "does not exist") {
			t.Errorf("knee %v --db %s: exit %d, stderr %q; want exit 2 naming the missing file", args, db, code, errs)
		}
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("reading a missing database created %s", filepath.Dir(dir))
	}
	// KNEE_DB pointing nowhere is the same mistake.
	if code, _, errs := kneeEnv(t, map[string]string{"KNEE_DB": db}, "runs"); code != ExitUsage || !strings.Contains(errs, db) {
		t.Errorf("KNEE_DB=%s knee runs: exit %d %q", db, code, errs)
	}
	// The default location on a fresh install: no runs yet, not an error.
	home := t.TempDir()
	code, out, _ := kneeEnv(t, map[string]string{"KNEE_DB": "", "HOME": home}, "runs")
	if code != 0 || !strings.Contains(out, "no runs stored yet") {
		t.Errorf("fresh install knee runs: exit %d %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(home, ".local")); !os.IsNotExist(err) {
		t.Error("knee runs created the default database folder")
	}
}

// A database whose data pages are damaged (header and schema intact) is
// bad input naming the file, whichever command reads the bad page.
func TestDamagedDatabaseNamed(t *testing.T) {
	db := filepath.Join(t.TempDir(), "knee.db")
	storeTestRuns(t, db, 1, 3000)
	os.Remove(db + "-wal")
	os.Remove(db + "-shm")
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 3; i < len(b); i++ {
		b[i] = byte(i*131 + 7)
	}
	os.WriteFile(db, b, 0o644)
	for _, args := range [][]string{{"runs"}, {"report", "1"}} {
		code, _, errs := kneeEnv(t, nil, append(args, "--db", db)...)
		if code != ExitUsage || !strings.Contains(errs, db) || !strings.Contains(errs, "damaged") {
			t.Errorf("knee %v on a damaged database: exit %d, stderr %q; want exit 2 naming %s as damaged", args, code, errs, db)
		}
	}
}

// knee compare --fail-on worse is a regression gate for CI: exit 3 when B
// is worse beyond noise; runs without completions show "–", never 0.00 ms
// or +NaN%.
func TestCompareFailOnAndMissingFigures(t *testing.T) {
	db := filepath.Join(t.TempDir(), "knee.db")
	storeTestRuns(t, db, 2, 400) // run 2's TTFT is 5 ms (about 20%) slower
	if code, out, errs := kneeEnv(t, nil, "compare", "1", "2", "--db", db, "--fail-on", "worse"); code != ExitSLO || !strings.Contains(errs, "B is worse") {
		t.Errorf("compare --fail-on worse, B slower: exit %d, stderr %q\n%s", code, errs, out)
	}
	if code, _, errs := kneeEnv(t, nil, "compare", "1", "1", "--db", db, "--fail-on", "worse"); code != 0 {
		t.Errorf("compare a run with itself --fail-on worse: exit %d %s", code, errs)
	}
	if code, _, errs := kneeEnv(t, nil, "compare", "2", "1", "--db", db, "--fail-on", "change"); code != ExitSLO {
		t.Errorf("compare --fail-on change, B faster: exit %d %s", code, errs)
	}
	if code, _, errs := kneeEnv(t, nil, "compare", "1", "2", "--db", db, "--fail-on", "slower"); code != ExitUsage || !strings.Contains(errs, "--fail-on") {
		t.Errorf("--fail-on slower: exit %d %q", code, errs)
	}

	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	var failed []record.Request
	for i := 0; i < 5; i++ {
		failed = append(failed, record.Request{ID: int64(i), Sent: time.Duration(i) * time.Millisecond, StreamEnd: time.Duration(i+1) * time.Millisecond,
			Error: record.ErrHTTP5xx, ErrorMessage: "HTTP 500", HTTPStatus: 500})
	}
	sum := stats.Summarize(failed, stats.Options{})
	if _, err := st.ImportRun(store.RunMeta{Kind: store.KindImport, Target: "test", Model: "m"}, failed, &sum, ""); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, out, errs := kneeEnv(t, nil, "compare", "3", "1", "--db", db)
	if code != 0 || strings.Contains(out, "NaN") || strings.Contains(out, "better ✓") && strings.Contains(out, "TTFT p50 (ms)     0.00") ||
		!strings.Contains(out, "not comparable on latency") {
		t.Errorf("all-failed A against a good B: exit %d %s\n%s", code, errs, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "TTFT p50 (ms)") && !strings.Contains(line, "–") {
			t.Errorf("all-failed run's TTFT shown as a figure: %q", line)
		}
	}
}
