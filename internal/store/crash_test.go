package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// The crash test re-executes this test binary as a child that writes a run
// the way `knee bench` does (BeginRun, then Add per finished request), and
// kills it with SIGKILL.
const crashChildEnv = "KNEE_STORE_CRASH_CHILD_DB"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	os.Exit(m.Run())
}

// crashChild adds one record every 2 ms forever and prints "added N" after
// each Add, so the parent knows what was handed to the writer and when.
func crashChild(path string) {
	st, err := Open(path)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	w, err := st.BeginRun(RunMeta{Kind: KindBench, Label: "crash", Target: "child"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Printf("run %d\n", w.ID())
	out := bufio.NewWriter(os.Stdout)
	for i := int64(0); ; i++ {
		r := rec(i, time.Duration(i%40)*time.Millisecond)
		w.Add(&r)
		fmt.Fprintf(out, "added %d\n", i)
		out.Flush()
		time.Sleep(2 * time.Millisecond)
	}
}

// TestKillMidRun: SIGKILL in the middle of a run loses at most the records
// added in the last second, never leaves a gap, and the run reads back as
// interrupted.
func TestKillMidRun(t *testing.T) {
	path := tempDB(t)
	// Create the schema first so the child's start-up is quick.
	st0, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st0.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	// addedAt[i] is when the parent saw "added i": no earlier than the Add.
	type seen struct {
		n  int64
		at time.Time
	}
	lines := make(chan seen, 1<<16)
	runID := make(chan int64, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == "run" {
				id, _ := strconv.ParseInt(f[1], 10, 64)
				runID <- id
			}
			if len(f) == 2 && f[0] == "added" {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				lines <- seen{n, time.Now()}
			}
		}
		close(lines)
	}()

	var id int64
	select {
	case id = <-runID:
	case <-time.After(60 * time.Second):
		t.Fatal("child never began its run")
	}
	var (
		history []seen
		first   time.Time
	)
	deadline := time.After(60 * time.Second)
	for {
		select {
		case s, ok := <-lines:
			if !ok {
				t.Fatal("child exited before it was killed")
			}
			if first.IsZero() {
				first = s.at
			}
			history = append(history, s)
		case <-deadline:
			t.Fatal("child too slow")
		}
		// Kill once the run has gone on for 2.5 s and handed over enough
		// records for many batches (a loaded machine takes longer to get there).
		if len(history) >= 500 && history[len(history)-1].at.Sub(first) > 2500*time.Millisecond {
			break
		}
	}
	killAt := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed = true

	// Every record handed to the writer more than one second before the kill
	// must be stored.
	var mustHave int64 = -1
	for _, s := range history {
		if killAt.Sub(s.at) > time.Second {
			mustHave = s.n
		}
	}
	if mustHave < 50 {
		t.Fatalf("only %d records a second before the kill; the child ran too slowly to test anything", mustHave+1)
	}

	st := openT(t, path)
	ri, err := st.Run(id)
	if err != nil {
		t.Fatal(err)
	}
	if ri.Status != StatusInterrupted || ri.StoredStatus != StatusRunning {
		t.Errorf("killed run: status %s (stored %s), want interrupted", ri.Status, ri.StoredStatus)
	}
	var n int64
	err = st.Records(id, func(r *record.Request) error {
		if r.ID != n {
			return fmt.Errorf("record %d has id %d: a gap or reordering", n, r.ID)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if int64(ri.Records) != n {
		t.Errorf("RunInfo.Records %d, read %d", ri.Records, n)
	}
	if n-1 < mustHave {
		t.Errorf("stored records 0..%d, but record %d was added more than 1 s before the kill", n-1, mustHave)
	}
	t.Logf("stored %d records; %d were added > 1 s before the kill, %d seen by the parent in all", n, mustHave+1, len(history))
}
