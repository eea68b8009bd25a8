package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/cluster"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/simserver/simservertest"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// runSweepShards runs n in-process shards of one sweep (JOB_COMPLETION_INDEX
// 0..n-1) and returns each one's exit code and stderr.
func runSweepShards(t *testing.T, n int, args []string) ([]int, []string) {
	t.Helper()
	codes, errs := make([]int, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			codes[i], _, errs[i] = kneeEnv(t, map[string]string{"JOB_COMPLETION_INDEX": strconv.Itoa(i)}, slices.Clip(args)...)
		})
	}
	wg.Wait()
	return codes, errs
}

func testShardedSweep(t *testing.T, db string) {
	url, srv := simservertest.Start(t, nil)
	model := srv.Model()
	for _, load := range []struct {
		name string
		args []string
		open bool
	}{
		{"open", []string{"--rate", "20,40", "--arrival", "poisson", "--requests", "24", "--input-tokens", "32", "--output-tokens", "4"}, true},
		{"closed", []string{"--concurrency", "4,8", "--requests", "24", "--input-tokens", "32", "--output-tokens", "4"}, false},
		{"trace", []string{"--trace", "../workload/testdata/trace_mooncake.jsonl", "--rate", "40,80", "--trace-max-context", "600", "--requests", "24"}, true},
		{"auto", []string{"--rate", "auto", "--min", "20", "--max", "80", "--refine", "1", "--requests", "24", "--slo", "p95(ttft)<2s",
			"--input-tokens", "32", "--output-tokens", "4"}, true},
	} {
		t.Run(load.name, func(t *testing.T) {
			common := append([]string{"sweep", "--url", url, "--model", model,
				"--seed", "5", "--quiet", "--json", "--db", db, "--request-timeout", "30s"}, load.args...)
			if code, _, errs := kneeCmd(t, common...); code != 0 {
				t.Fatalf("one process: exit %d: %s", code, errs)
			}
			codes, errs := runSweepShards(t, 4, append(slices.Clip(common), "--shards", "4", "--run-name", "sweep-"+load.name))
			for i, c := range codes {
				if c != 0 {
					t.Fatalf("shard %d: exit %d: %s", i, c, errs[i])
				}
			}
			st, runs := lastRuns(t, db, 2)
			sharded, one := runs[0], runs[1]
			if sharded.Status != store.StatusComplete {
				t.Fatalf("sharded sweep: %s", sharded.Status)
			}
			key := func(r *record.Request) string {
				if load.open {
					return fmt.Sprint(r.ID, " ", r.Scheduled)
				}
				return fmt.Sprint(r.ID)
			}
			oneRes, err := st.SweepResult(one.ID)
			if err != nil {
				t.Fatal(err)
			}
			res, err := st.SweepResult(sharded.ID)
			if err != nil {
				t.Fatal(err)
			}
			byStep := func(id int64, res *sweep.Result) map[float64][]record.Request {
				out := map[float64][]record.Request{}
				st.StepRecords(id, func(step int, r *record.Request) error {
					if step < 0 || step >= len(res.Steps) {
						t.Errorf("run %d: record %d of step %d, out of the sweep's %d steps", id, r.ID, step, len(res.Steps))
						return nil
					}
					c := *r
					c.ID = store.SweepRequestID(c.ID)
					out[res.Steps[step].Load.Value] = append(out[res.Steps[step].Load.Value], c)
					return nil
				})
				return out
			}
			oneRecs, recs := byStep(one.ID, oneRes), byStep(sharded.ID, res)
			set, _ := slo.ParseAll(sloArgs(load.args))
			var judged []sweep.Step
			for i, s := range res.Steps {
				v := s.Load.Value
				var got, want []string
				for _, r := range recs[v] {
					got = append(got, key(&r))
				}
				for _, r := range oneRecs[v] {
					want = append(want, key(&r))
				}
				slices.Sort(got)
				slices.Sort(want)
				if len(got) != 24 || (len(want) > 0 && !slices.Equal(got, want)) {
					t.Errorf("step %s: the shards sent %d requests %v; one process %v", s.Load, len(got), got, want)
				}
				opts := stats.Options{}
				if len(set) > 0 {
					opts.Good = set.Good
				}
				if s.Load.Kind == sweep.Rate {
					opts.OfferedRateRPS = v
				}
				sum := stats.Summarize(recs[v], opts)
				a, _ := json.Marshal(sum)
				b, _ := json.Marshal(s.Summary)
				if string(a) != string(b) {
					t.Errorf("step %d (%s): stored summary is not the one over all records:\nstored %s\n   all %s", i, s.Load, b, a)
				}
				j := sweep.Step{Load: s.Load, Summary: sum, Full: true, Refined: s.Refined}
				sweep.Judge(&j, set)
				judged = append(judged, j)
			}
			again, err := sweep.Analyze(judged, sweep.Options{SLOs: sweep.Objectives(set)})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []struct {
				name      string
				got, want sweep.Point
			}{{"knee", res.Knee, again.Knee}, {"SLO-safe point", res.SLOSafe, again.SLOSafe}} {
				a, _ := json.Marshal(p.got)
				b, _ := json.Marshal(p.want)
				if string(a) != string(b) {
					t.Errorf("stored %s %s; over all records %s", p.name, a, b)
				}
			}
			if load.name != "auto" && len(res.Steps) != len(oneRes.Steps) {
				t.Errorf("%d steps, one process %d", len(res.Steps), len(oneRes.Steps))
			}
			assertStepStarts(t, st, sharded.ID, len(res.Steps), 4)
		})
	}
}

// sloArgs are the --slo values among args.
func sloArgs(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--slo" && i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}

// assertStepStarts checks that every step of sharded sweep id had all n
// shards' parts, and that their schedules' zero points agree within 5 ms
// plus the clocks' stated uncertainty: each is anchored on the step's
// common start, so this is computed, not measured, and cannot flake. When
// the processes actually began is measured, and logged.
func assertStepStarts(t *testing.T, st *store.Store, id int64, steps, n int) {
	t.Helper()
	shards, _, err := st.RunShards(id)
	if err != nil {
		t.Fatal(err)
	}
	var unc time.Duration
	for _, s := range shards {
		unc = max(unc, s.ClockUncertainty)
	}
	parts, err := st.StepParts(id)
	if err != nil || len(parts) != steps*n {
		t.Fatalf("step parts: %d (%v); want %d steps of %d shards", len(parts), err, steps, n)
	}
	for k := range steps {
		var zeros, began []time.Time
		for _, p := range parts[k*n : (k+1)*n] {
			if p.Status != store.PartComplete || p.Zero.IsZero() {
				t.Errorf("step %d shard %d: %s, zero %v", p.Step+1, p.Shard, p.Status, p.Zero)
			}
			zeros, began = append(zeros, p.Zero), append(began, p.Began)
		}
		if z := cluster.Spread(zeros); z > cluster.StartTolerance+unc {
			t.Errorf("step %d: the shards' schedules start %v apart; want within %v plus %v", k+1, z, cluster.StartTolerance, unc)
		}
		t.Logf("step %d: shards' processes began within %v", k+1, cluster.Spread(began))
	}
}

// A shard stopped mid-step leaves the step partial, naming itself; the
// other shards finish that step, stop there (exit 1, naming the shard),
// and the run reads partial with the partial step kept.
func TestShardedSweepShardInterrupted(t *testing.T) {
	parallelUntimed(t)
	url, srv := simservertest.Start(t, nil)
	model := srv.Model()
	db := filepath.Join(t.TempDir(), "knee.db")
	args := []string{"sweep", "--url", url, "--model", model, "--input-tokens", "32", "--output-tokens", "4", "--seed", "3",
		"--rate", "15,20", "--requests", "45", "--quiet", "--json", "--db", db, "--shards", "3", "--run-name", "stopped"}
	shard := func(ctx context.Context, i int) (int, string) {
		var out, errb strings.Builder
		env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
			if k == "JOB_COMPLETION_INDEX" {
				return strconv.Itoa(i)
			}
			return ""
		}}
		return MainEnv(ctx, env, args), errb.String()
	}
	ctx := context.Background()
	stopped, stop := context.WithCancel(ctx)
	defer stop()
	codes, errs := make([]int, 3), make([]string, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			c := ctx
			if i == 1 {
				c = stopped
			}
			codes[i], errs[i] = shard(c, i)
		})
	}
	// Stop shard 1 once it has stored a few records of the second step.
	go func() {
		for stopped.Err() == nil {
			time.Sleep(50 * time.Millisecond)
			st, err := store.OpenReadOnly(db)
			if err != nil {
				continue
			}
			n := 0
			st.SweepStepRecords(1, 1, func(s int, _ *record.Request) error {
				if s == 1 {
					n++
				}
				return nil
			})
			st.Close()
			if n >= 3 {
				stop()
			}
		}
	}()
	wg.Wait()
	stop()
	if codes[1] == 0 {
		t.Errorf("the stopped shard exited 0: %s", errs[1])
	}
	for _, i := range []int{0, 2} {
		if codes[i] != 1 || !strings.Contains(errs[i], "shard 1 stopped during step 2 (20 req/s)") {
			t.Errorf("shard %d: exit %d: %s; want 1, naming shard 1", i, codes[i], errs[i])
		}
	}
	st, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ri, err := st.Run(1)
	if err != nil || ri.Status != store.StatusInterrupted {
		t.Fatalf("run: %+v %v; want interrupted", ri, err)
	}
	res, err := st.SweepResult(1)
	if err != nil || len(res.Steps) != 2 || res.Steps[0].Summary.Requests != 45 {
		t.Fatalf("stored sweep: %+v %v; want the whole first step and the partial second", res, err)
	}
	if last := res.Steps[1]; last.Summary.Requests >= 45 || !strings.Contains(strings.Join(last.Warnings, " "), "partial step") {
		t.Errorf("second step: %d requests, warnings %q; want partial, said so", last.Summary.Requests, last.Warnings)
	}
	parts, _ := st.StepParts(1)
	if len(parts) != 6 || parts[4].Status != store.PartPartial || parts[3].Status != store.PartComplete || parts[5].Status != store.PartComplete {
		t.Errorf("step parts: %+v", parts)
	}
	code, out, rerr := kneeEnv(t, nil, "report", "--db", db, "1")
	if code != 0 || !strings.Contains(out, "partial: 2 of 3 shards complete (not: 1)") || !strings.Contains(out, "shards' schedules start together within") {
		t.Errorf("report: exit %d\n%s%s", code, out, rerr)
	}
}

// What a sharded sweep cannot do is refused as bad input, naming it.
func TestShardedSweepRefusals(t *testing.T) {
	url, srv := simservertest.Start(t, nil)
	model := srv.Model()
	db := filepath.Join(t.TempDir(), "knee.db")
	base := []string{"sweep", "--model", model, "--input-tokens", "32", "--output-tokens", "4", "--rate", "5,10", "--requests", "8", "--quiet", "--db", db}
	with := func(extra ...string) []string { return append(slices.Clip(base), extra...) }
	cases := []struct {
		args []string
		want string
	}{
		{with("--seed", "1", "--shards", "2", "--shard", "0", "--run-name", "r"), "want --url"},
		{with("--url", url, "--shards", "2", "--shard", "0", "--run-name", "r"), "want --seed"},
		{with("--url", url, "--seed", "1", "--shards", "2", "--shard", "0"), "want --run-name"},
		{with("--url", url, "--seed", "1", "--shards", "2", "--shard", "2", "--run-name", "r"), "want an index from 0 to 1"},
		{with("--url", url, "--seed", "1", "--shards", "2", "--shard", "0", "--run-name", "r", "--no-store"), "--shards and --no-store"},
		{with("--url", url, "--seed", "1", "--shards", "2", "--shard", "0", "--run-name", "r", "--metrics-url", url+"/metrics"), "does not scrape the server's metrics"},
		{with("--url", url, "--seed", "1", "--shards", "2", "--shard", "0", "--run-name", "r", "--shard-timeout", "300ms"), "shard(s) 1 of 2 never registered"},
		{append(slices.Clip(base[:7]), "--concurrency", "1,4", "--requests", "8", "--quiet", "--db", db, "--url", url, "--seed", "1", "--shards", "2", "--shard", "0", "--run-name", "r"),
			"the sweep's lowest concurrency is 1"},
		{with("--url", url, "--seed", "1", "--shards", "3", "--shard", "0", "--run-name", "r", "--requests", "2"), "--requests 2 per step leaves a shard without a request"},
	}
	if newSweepCmd(context.Background(), &Env{}).Flags().Lookup("stop-oversaturated") != nil {
		cases = append(cases, struct {
			args []string
			want string
		}{with("--url", url, "--seed", "1", "--shards", "2", "--shard", "0", "--run-name", "r", "--stop-oversaturated"), "--stop-oversaturated with --shards"})
	}
	for _, c := range cases {
		code, _, errs := kneeCmd(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args[len(base):], code, errs, c.want)
		}
	}
	// A shard started with other loads than the run's is refused, naming
	// the difference.
	first := make(chan int)
	go func() {
		code, _, _ := kneeCmd(t, with("--url", url, "--seed", "1", "--shards", "2", "--shard", "0", "--run-name", "other", "--shard-timeout", "3s")...)
		first <- code
	}()
	// Once shard 0 has made the run (the second, after the timed-out one).
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := store.OpenReadOnly(db); err == nil {
			runs, _ := st.ListRuns(store.Filter{})
			st.Close()
			if len(runs) == 2 {
				break
			}
		}
	}
	other := with("--url", url, "--seed", "1", "--shards", "2", "--shard", "1", "--run-name", "other", "--shard-timeout", "3s")
	other[slices.Index(other, "5,10")] = "5,20"
	if code, _, errs := kneeCmd(t, other...); code != 2 || !strings.Contains(errs, `rate is "5,20" here, "5,10" in the run`) {
		t.Errorf("a shard with other loads: exit %d, %s", code, errs)
	}
	if code := <-first; code != 2 {
		t.Errorf("the shard left alone: exit %d, want 2 (its partner never came)", code)
	}
}

// Two knee sweep processes as one sharded sweep against one `knee serve`:
// SIGKILL of shard 1 mid-step keeps what it stored; shard 0 finishes the
// step, stops there naming shard 1 (exit 1) and ends the run, which reads
// partial; shard 1 restarted after that is refused at once, since nothing
// is left to join (exit 2).
func TestShardedSweepKill9(t *testing.T) {
	parallelUntimed(t)
	dir := t.TempDir()
	bin := buildKnee(t)
	base, model := startServeProcess(t, bin)
	db := shardTestDB(t, dir)
	args := []string{"sweep", "--url", base, "--model", model, "--rate", "10,20", "--requests", "40",
		"--input-tokens", "32", "--output-tokens", "8", "--seed", "9", "--shards", "2", "--run-name", "kill9-sweep",
		"--db", db, "--quiet", "--json", "--request-timeout", "30s", "--shard-timeout", "30s"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shard := func(i int) (*exec.Cmd, *bytes.Buffer) { return shardProcess(ctx, bin, args, i) }
	var cmds [2]*exec.Cmd
	var outs [2]*bytes.Buffer
	for i := range 2 {
		cmds[i], outs[i] = shard(i)
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
		}
	}()
	// Kill shard 1 once it has stored 3 of its 20 records of the first
	// step (which lasts 4 s).
	var runID int64
	stored := func(id int64) (n int) {
		st, err := store.OpenReadOnly(db)
		if err != nil {
			return 0
		}
		defer st.Close()
		st.SweepStepRecords(id, 0, func(s int, _ *record.Request) error {
			if s == 1 {
				n++
			}
			return nil
		})
		return n
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("shard 1 stored no records in 60 s; its output:\n%s", outs[1])
		}
		if id, _ := shardStored(db, 1); id != 0 && stored(id) >= 3 {
			runID = id
			break
		}
	}
	if err := cmds[1].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmds[1].Wait()
	kept := stored(runID)
	err := cmds[0].Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(outs[0].String(), "shard 1 stopped during step 1 (10 req/s)") {
		t.Fatalf("shard 0: %v; want exit 1 naming shard 1:\n%s", err, outs[0])
	}
	st, err := store.OpenReadOnly(db)
	if err != nil {
		t.Fatal(err)
	}
	ri, _ := st.Run(runID)
	shards, _, _ := st.RunShards(runID)
	res, serr := st.SweepResult(runID)
	st.Close()
	if ri == nil || ri.Status != store.StatusInterrupted || len(shards) != 2 || shards[1].Status != store.StatusInterrupted ||
		shards[0].Status != store.StatusComplete || shards[1].Records < kept || kept < 3 {
		t.Fatalf("after the kill: run %+v, shards %+v; want interrupted with shard 1's %d records kept", ri, shards, kept)
	}
	if serr != nil || len(res.Steps) != 1 || res.Steps[0].Summary.Requests >= 40 || res.Steps[0].Summary.Requests < 20+kept {
		t.Errorf("stored sweep: %+v %v; want the partial first step", res, serr)
	}
	code, text, errs := kneeEnv(t, nil, "report", "--db", db, strconv.FormatInt(runID, 10))
	if code != 0 || !strings.Contains(text, "partial: 1 of 2 shards complete (not: 1)") {
		t.Errorf("report: exit %d\n%s%s", code, text, errs)
	}
	// Kubernetes restarts the failed index: the sweep is closed.
	began := time.Now()
	re, reOut := shard(1)
	err = re.Run()
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(reOut.String(), "nothing is left to join") {
		t.Errorf("restarted shard 1: %v\n%s; want exit 2, nothing left to join", err, reOut)
	}
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("the refusal took %v; want it at once", d)
	}
}

// shardProcess is knee (bin) run with args as shard i of a Kubernetes
// Indexed Job would be, its output in the buffer.
func shardProcess(ctx context.Context, bin string, args []string, i int) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX="+strconv.Itoa(i), "KNEE_DB=")
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	return cmd, &b
}
