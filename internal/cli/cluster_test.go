package cli

import (
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
	code, _, errOut = kneeCmd(t, "cluster", "job", "--run-name", "nightly", "--image", "knee:v1", "--", "bench", "--db", "postgres://x")
	if code != 2 || !strings.Contains(errOut, "--db is the Job's to set") {
		t.Errorf("--db in the bench arguments: exit %d, %s", code, errOut)
	}
}
