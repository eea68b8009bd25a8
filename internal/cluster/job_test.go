package cluster

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"
)

func spec() JobSpec {
	return JobSpec{Name: "nightly-8b", Image: "ghcr.io/example/knee:v1", Pods: 4,
		Args:       []string{"bench", "--url", "http://gateway:8000", "--rate", "200", "--duration", "5m", "--seed", "7"},
		SecretName: "knee-db", SecretKey: "url", CPU: "2", Memory: "1Gi", RetriesPerIndex: 2}
}

// The manifest decodes strictly (no unknown field anywhere) into the
// Kubernetes API's batch/v1 Job, an Indexed one whose pods get their index
// and the database URL from a Secret.
func TestManifestDecodesStrictlyIntoBatchV1Job(t *testing.T) {
	out, err := Manifest(spec())
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(out, &job); err != nil {
		t.Fatalf("strict decode: %v\n%s", err, out)
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name != "nightly-8b" {
		t.Errorf("type/name: %s %s %s", job.APIVersion, job.Kind, job.Name)
	}
	sp := job.Spec
	if sp.CompletionMode == nil || *sp.CompletionMode != batchv1.IndexedCompletion ||
		sp.Completions == nil || *sp.Completions != 4 || sp.Parallelism == nil || *sp.Parallelism != 4 ||
		sp.BackoffLimitPerIndex == nil || *sp.BackoffLimitPerIndex != 2 || sp.Template.Spec.RestartPolicy != "Never" {
		t.Errorf("job spec: %+v", sp)
	}
	c := sp.Template.Spec.Containers
	if len(c) != 1 || c[0].Image != "ghcr.io/example/knee:v1" {
		t.Fatalf("containers: %+v", c)
	}
	wantArgs := append(spec().Args, "--shards", "4", "--run-name", "nightly-8b")
	if !slices.Equal(c[0].Args, wantArgs) {
		t.Errorf("args %q, want %q", c[0].Args, wantArgs)
	}
	env := map[string]int{}
	for i, e := range c[0].Env {
		env[e.Name] = i
	}
	idx, ok := env[IndexEnv]
	if !ok || c[0].Env[idx].ValueFrom == nil || c[0].Env[idx].ValueFrom.FieldRef == nil ||
		c[0].Env[idx].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("index env: %+v", c[0].Env)
	}
	db, ok := env["KNEE_DB"]
	if !ok || c[0].Env[db].Value != "" || c[0].Env[db].ValueFrom == nil || c[0].Env[db].ValueFrom.SecretKeyRef == nil ||
		c[0].Env[db].ValueFrom.SecretKeyRef.Name != "knee-db" || c[0].Env[db].ValueFrom.SecretKeyRef.Key != "url" {
		t.Errorf("database env: %+v", c[0].Env)
	}
	r := c[0].Resources
	if r.Requests.Cpu().String() != "2" || r.Limits.Memory().String() != "1Gi" {
		t.Errorf("resources: %+v", r)
	}
	if strings.Contains(string(out), "postgres://") {
		t.Error("the manifest holds a database URL; it must come from the Secret")
	}
}

func TestJobSpecErrors(t *testing.T) {
	for _, c := range []struct {
		edit func(*JobSpec)
		want string
	}{
		{func(s *JobSpec) { s.Name = "Nightly_8B" }, "--run-name"},
		{func(s *JobSpec) { s.Image = "" }, "--image"},
		{func(s *JobSpec) { s.Pods = 0 }, "--pods 0"},
		{func(s *JobSpec) { s.SecretName = "" }, "--secret"},
		{func(s *JobSpec) { s.Args = []string{"serve"} }, "want the knee command each pod runs, bench … or sweep …"},
		{func(s *JobSpec) { s.Args = []string{"sweep", "--stop-oversaturated"} }, "--stop-oversaturated does not go with shards"},
		{func(s *JobSpec) { s.Args = []string{"bench", "--shards=2"} }, "--shards=2 is the Job's"},
		{func(s *JobSpec) { s.Args = []string{"bench", "--db", "x"} }, "--db is the Job's"},
		{func(s *JobSpec) { s.CPU = "two" }, "--cpu \"two\""},
	} {
		s := spec()
		c.edit(&s)
		if _, err := Manifest(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want an error with %q, got %v", c.want, err)
		}
	}
}

func TestAdvice(t *testing.T) {
	// 200 req/s × 500 output tokens = 100,000 tokens/s × 19 µs = 1.9 cores;
	// at half of 2 cores a pod: 2 pods.
	pods, why := Advice(100000, 2)
	if pods != 2 || !strings.Contains(why, "1.90 cores") {
		t.Errorf("Advice: %d, %s", pods, why)
	}
	if pods, why := Advice(0, 2); pods != 0 || !strings.Contains(why, "--rate") {
		t.Errorf("Advice without a rate: %d, %s", pods, why)
	}
}
