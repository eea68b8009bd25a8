package cli

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

// knee cluster job's whole output (comments included) decodes strictly
// into batch/v1 Job; a seed is chosen when the command gives none, so
// every pod draws the same schedule.
func TestClusterJobCommand(t *testing.T) {
	code, out, errOut := kneeCmd(t, "cluster", "job", "--run-name", "nightly", "--image", "knee:v1", "--pods", "4",
		"--", "bench", "--url", "http://gw:8000", "--rate", "100", "--output-tokens", "200")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(out), &job); err != nil {
		t.Fatalf("strict decode: %v\n%s", err, out)
	}
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	if *job.Spec.Completions != 4 || !strings.Contains(args, "--shards 4 --run-name nightly") || !strings.Contains(args, "--seed ") {
		t.Errorf("args %q", args)
	}
	if !strings.Contains(out, "# sizing: 20000 tokens/s") {
		t.Errorf("no sizing advice:\n%s", out)
	}
	// A sweep: each pod runs every step's part; sized for its highest step.
	code, out, errOut = kneeCmd(t, "cluster", "job", "--run-name", "nightly-sweep", "--image", "knee:v1", "--pods", "3",
		"--", "sweep", "--url", "http://gw:8000", "--model", "m", "--rate", "50,100,200", "--output-tokens", "100", "--slo", "p95(ttft)<1s")
	if code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, errOut)
	}
	job = batchv1.Job{}
	if err := yaml.UnmarshalStrict([]byte(out), &job); err != nil {
		t.Fatalf("strict decode of the sweep's Job: %v\n%s", err, out)
	}
	args = strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	if *job.Spec.Completions != 3 || !strings.HasPrefix(args, "sweep --url http://gw:8000") || !strings.Contains(args, "--shards 3 --run-name nightly-sweep") ||
		!strings.Contains(args, "--seed ") || !strings.Contains(out, "# sizing: 20000 tokens/s") {
		t.Errorf("sweep Job: args %q\n%s", args, out)
	}
	code, _, errOut = kneeCmd(t, "cluster", "job", "--run-name", "nightly", "--image", "knee:v1", "--", "bench", "--db", "postgres://x")
	if code != 2 || !strings.Contains(errOut, "--db is the Job's to set") {
		t.Errorf("--db in the bench arguments: exit %d, %s", code, errOut)
	}
}

// The pods' command is parsed with its own flag definitions: what every pod
// would refuse is refused here, exit 2, before a Job is written (issue 39
// item 9).
func TestClusterJobChecksThePodsCommand(t *testing.T) {
	t.Parallel()
	job := []string{"cluster", "job", "--run-name", "nightly", "--image", "knee:v1", "--pods", "8", "--"}
	cases := []struct {
		pods []string
		want string
	}{
		{[]string{"bench", "--url", "http://gw:8000", "--bogus", "1"}, "unknown flag: --bogus"},
		{[]string{"bench", "--url", "http://gw:8000", "--rate", "notanumber"}, `invalid argument "notanumber" for "--rate"`},
		{[]string{"bench", "--url", "http://gw:8000", "--rate", "5", "--slo", "p95(bogus)<1s"}, "--slo"},
		{[]string{"bench", "--rate", "5"}, "wants --url"},
		{[]string{"bench", "--url", "http://gw:8000", "--concurrency", "4"}, "--concurrency 4 with 8 pods leaves a pod without a user"},
		{[]string{"sweep", "--url", "http://gw:8000", "--model", "m", "--concurrency", "4,16", "--slo", "p95(ttft)<1s"}, "--concurrency 4,16 with 8 pods"},
		{[]string{"sweep", "--url", "http://gw:8000", "--model", "m", "--rate", "5,10", "stray"}, `unexpected argument "stray"`},
	}
	for _, c := range cases {
		code, out, errOut := kneeCmd(t, append(slices.Clip(job), c.pods...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, %d bytes out; want exit 2 naming %q and no manifest", c.pods, code, errOut, len(out), c.want)
		}
	}
	// What the pods can run still gives a Job.
	if code, _, errOut := kneeCmd(t, append(slices.Clip(job), "bench", "--url", "http://gw:8000", "--concurrency", "16", "--slo", "p95(ttft)<1s")...); code != 0 {
		t.Errorf("a valid closed loop: exit %d: %s", code, errOut)
	}
}
