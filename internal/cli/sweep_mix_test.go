package cli

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/knee-dev/knee/internal/workload"
)

// mixExample is the documented three-class mix: chat on the base model
// with the tightest objective (p95 TTFT < 150 ms), two LoRA adapters.
var mixExample = filepath.Join("..", "..", "docs", "examples", "mix-three-classes.yaml")

// checkClassesAddUp checks that every step has the mix's classes in the
// file's order and that their counts add up to the step's.
func checkClassesAddUp(t *testing.T, res *sweep.Result, names []string) {
	t.Helper()
	for _, s := range res.Steps {
		var got []string
		req, done, errs := 0, 0, 0
		var tps, good float64
		for _, c := range s.Classes {
			got = append(got, c.Name)
			req += c.Summary.Requests
			done += c.Summary.Completed
			errs += c.Summary.Errors
			tps += c.Summary.OutputTokenThroughputTPS
			if c.Summary.GoodputRPS != nil {
				good += *c.Summary.GoodputRPS
			}
		}
		if !slices.Equal(got, names) {
			t.Fatalf("step %s: classes %v, want %v in the mix file's order", s.Load, got, names)
		}
		sum := &s.Summary
		if req != sum.Requests || done != sum.Completed || errs != sum.Errors {
			t.Errorf("step %s: classes add up to %d requests, %d completed, %d errors; the step has %d, %d, %d",
				s.Load, req, done, errs, sum.Requests, sum.Completed, sum.Errors)
		}
		// Class rates are over the step's span: they add up.
		if o := sum.OutputTokenThroughputTPS; math.Abs(tps-o) > 1e-6*o {
			t.Errorf("step %s: classes' output tok/s add up to %.1f, the step's is %.1f", s.Load, tps, o)
		}
		// Judged only by the classes' own objectives, the step's goodput
		// is theirs.
		if sum.GoodputRPS == nil || math.Abs(*sum.GoodputRPS-good) > 1e-6*(good+1) {
			t.Errorf("step %s: goodput %v; the classes' add up to %.3f", s.Load, sum.GoodputRPS, good)
		}
	}
}

func TestSimSweepMixTightestClassBreaksFirst(t *testing.T) {
	args := []string{"sim", "sweep", "--mix", mixExample, "--rate", "2,5,10,20,40", "--requests", "300", "--max-loras", "2", "--no-store", "--quiet"}
	code, out, stderr := kneeCmd(t, append(args, "--json")...)
	if code != ExitOK {
		t.Fatalf("sim sweep --mix: exit %d: %s", code, stderr)
	}
	validate(t, compileSchema(t, "sweep.schema.json"), "knee sim sweep --mix --json", out)
	var res sweep.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	checkClassesAddUp(t, &res, []string{"chat", "summarize", "sql"})

	// The first failing step fails chat alone, and breaks_first says so.
	first := -1
	for i, s := range res.Steps {
		if !s.SLOMet {
			first = i
			break
		}
	}
	if first <= 0 {
		t.Fatalf("want some step to fail after a safe one; first failing step index %d:\n%s", first, out)
	}
	fs := res.Steps[first]
	for _, c := range fs.Classes {
		if (c.Name == "chat") == c.SLOMet {
			t.Errorf("at %s class %s slo_met=%v; want chat alone to fail", fs.Load, c.Name, c.SLOMet)
		}
	}
	b := res.BreaksFirst
	if b == nil || b.Class != "chat" || b.Load != fs.Load.Value || b.Objective != "p95(ttft)<150ms" || !(b.Value > 150) || len(b.Also) > 0 {
		t.Fatalf("breaks_first = %+v; want chat alone at %s, p95(ttft)<150ms, its value above 150 ms", b, fs.Load)
	}
	if !res.SLOSafe.Found() || res.SLOSafe.Load != res.Steps[first-1].Load.Value {
		t.Errorf("SLO-safe point %+v; want %s, the step below chat's failure", res.SLOSafe, res.Steps[first-1].Load)
	}

	// The report says which class breaks first.
	code, text, stderr := kneeCmd(t, args...)
	if code != ExitOK {
		t.Fatalf("sim sweep --mix (text): exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Breaks first: class chat fails first, at " + fs.Load.String(), "chat ◀ breaks first", "Per class (latency in ms)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the text report lacks %q:\n%s", want, text)
		}
	}

	// A seed reproduces the output byte for byte; another seed differs.
	if _, again, _ := kneeCmd(t, append(args, "--json")...); again != out {
		t.Error("the same mix file and seed gave different output")
	}
	if _, other, _ := kneeCmd(t, append(args, "--json", "--seed", "8")...); other == out {
		t.Error("another seed gave the same output: the seed is not used")
	}
}

// TestSimSweepMixOnAFleet: fleets serve a mix's classes and adapters too;
// two replicas hold every class to a higher load than one.
func TestSimSweepMixOnAFleet(t *testing.T) {
	safe := func(replicas string) float64 {
		t.Helper()
		code, out, stderr := kneeCmd(t, "sim", "sweep", "--mix", mixExample, "--rate", "5,10,20,40", "--requests", "300", "--max-loras", "2",
			"--replicas", replicas, "--json", "--no-store", "--quiet")
		if code != ExitOK {
			t.Fatalf("--replicas %s: exit %d: %s", replicas, code, stderr)
		}
		var res sweep.Result
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		checkClassesAddUp(t, &res, []string{"chat", "summarize", "sql"})
		if !res.SLOSafe.Found() {
			t.Fatalf("--replicas %s: no SLO-safe load", replicas)
		}
		return res.SLOSafe.Load
	}
	if one, two := safe("1"), safe("2"); !(two > one) {
		t.Errorf("SLO-safe at %v req/s on two replicas, %v on one; want two to carry more", two, one)
	}
}

// A mix sweep's steps send prompts of their own: from a step's first item
// each request keeps the mix's class for its index and takes its class's
// prompt at first + index, so two steps' prompts differ while the class
// sequence stays the mix's (own-load classes too).
func TestMixSourceFromAStepsFirstItem(t *testing.T) {
	mix, err := workload.LoadMix(mixExample)
	if err != nil {
		t.Fatal(err)
	}
	m := &loadsetup.Mix{Path: mixExample, File: mix}
	src, err := m.Source(nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	const first = 1 << 20
	from0, fromFirst := src(0), src(first)
	for i := range int64(40) {
		a, b := from0(i), fromFirst(i)
		if a.Class != b.Class {
			t.Fatalf("request %d: class %s from 0, %s from %d: the mix's class sequence moved", i, a.Class, b.Class, first)
		}
		if a.Prompt == b.Prompt {
			t.Fatalf("request %d (%s): the same prompt from 0 and from %d", i, a.Class, first)
		}
	}
	var cfg loadgen.Config
	loaded, err := m.ApplyLoad(&cfg, nil, nil, 1, first)
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(10) {
		if got, want := loaded(i), fromFirst(i); got.Prompt != want.Prompt || got.Class != want.Class {
			t.Fatalf("request %d: ApplyLoad from %d gives %s %.20q, source %s %.20q", i, first, got.Class, got.Prompt, want.Class, want.Prompt)
		}
	}
}
