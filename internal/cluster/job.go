// Package cluster runs one knee load as N shard processes: the Kubernetes
// Indexed Job that starts them (job.go), the common start each waits for
// and how well they agreed (start.go), a sharded sweep's step-by-step
// meeting (sweep.go; the rendezvous itself is in the run database,
// internal/store), and the clock offset each measures to the database
// server (clock.go). knee has no coordinator of its own:
// Kubernetes runs the pods, PostgreSQL is where they meet.
package cluster

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// IndexEnv is the variable an Indexed Job gives each pod: its completion
// index, which knee takes as its shard index.
const IndexEnv = "JOB_COMPLETION_INDEX"

// indexAnnotation is where the Job controller writes the index on each pod
// (the downward API reads it into IndexEnv).
const indexAnnotation = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

// JobSpec is what `knee cluster job` needs to write a manifest.
type JobSpec struct {
	Name      string   // the Job's name and the run name all shards share
	Namespace string   // "" leaves it to kubectl's context
	Image     string   // a knee image
	Pods      int      // shards: completions = parallelism = Pods
	Args      []string // the knee command each pod runs: bench … or sweep …
	// SecretName and SecretKey name the Secret entry holding the
	// database URL (postgres://…), passed to knee as KNEE_DB.
	SecretName, SecretKey string
	// CPU and Memory are each pod's requests and limits ("2", "1Gi").
	CPU, Memory string
	// RetriesPerIndex: how many times Kubernetes restarts a failed index.
	RetriesPerIndex int32
}

// dnsLabel is what Kubernetes accepts as a Job name (and knee as a run name
// that travels into it).
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate says which field is wrong and what was expected.
func (s *JobSpec) Validate() error {
	switch {
	case !dnsLabel.MatchString(s.Name) || len(s.Name) > 52:
		return fmt.Errorf("--run-name %q: want lower-case letters, digits and '-', at most 52 characters (it names the Job and its pods)", s.Name)
	case s.Image == "":
		return fmt.Errorf("--image: want the knee image the pods run, e.g. ghcr.io/you/knee:v1")
	case s.Pods < 1 || s.Pods > 1000:
		return fmt.Errorf("--pods %d: want 1 to 1000", s.Pods)
	case s.SecretName == "" || s.SecretKey == "":
		return fmt.Errorf("--secret %q: want SECRET or SECRET/KEY, the Secret holding the postgres:// URL", s.SecretName)
	case len(s.Args) == 0 || (s.Args[0] != "bench" && s.Args[0] != "sweep"):
		return fmt.Errorf("after --: want the knee command each pod runs, bench … or sweep … (got %q)", strings.Join(s.Args, " "))
	}
	for _, a := range s.Args[1:] {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") {
			switch name {
			case "shards", "shard", "run-name", "db", "no-store":
				return fmt.Errorf("after --: %s is the Job's to set (shards from --pods, the index from %s, the run name from --run-name, the database from the Secret)", a, IndexEnv)
			case "stop-oversaturated", "metrics-url":
				return fmt.Errorf("after --: %s does not go with shards (docs/cluster.md)", a)
			}
		}
	}
	for _, q := range []struct{ flag, v string }{{"--cpu", s.CPU}, {"--memory", s.Memory}} {
		if _, err := resource.ParseQuantity(q.v); err != nil {
			return fmt.Errorf("%s %q: want a Kubernetes quantity such as 2, 500m or 1Gi", q.flag, q.v)
		}
	}
	return nil
}

// Job builds the Indexed Job: Pods completions run at once, each with its
// index in JOB_COMPLETION_INDEX, the database URL from the Secret, and the
// same knee command plus --shards and --run-name.
func Job(s JobSpec) (*batchv1.Job, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	n := int32(s.Pods)
	indexed := batchv1.IndexedCompletion
	labels := map[string]string{"app.kubernetes.io/name": "knee", "knee.dev/run-name": s.Name}
	args := append(append([]string{}, s.Args...), "--shards", strconv.Itoa(s.Pods), "--run-name", s.Name)
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(s.CPU),
		corev1.ResourceMemory: resource.MustParse(s.Memory),
	}
	retries := s.RetriesPerIndex
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed,
			Completions:    &n,
			Parallelism:    &n,
			// A failed index is retried on its own; the others go on (a
			// restarted shard does not store a request twice).
			BackoffLimitPerIndex: &retries,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:  "knee",
						Image: s.Image,
						Args:  args,
						Env: []corev1.EnvVar{
							{Name: IndexEnv, ValueFrom: &corev1.EnvVarSource{
								FieldRef: &corev1.ObjectFieldSelector{FieldPath: indexAnnotation}}},
							{Name: "KNEE_DB", ValueFrom: &corev1.EnvVarSource{
								SecretKeyRef: &corev1.SecretKeySelector{
									LocalObjectReference: corev1.LocalObjectReference{Name: s.SecretName}, Key: s.SecretKey}}},
						},
						Resources: corev1.ResourceRequirements{Requests: res, Limits: res},
					}},
				},
			},
		},
	}, nil
}

// Manifest is the Job as YAML, ready for kubectl apply -f -.
func Manifest(s JobSpec) ([]byte, error) {
	job, err := Job(s)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(job)
}

// ClientCPUPerToken is knee's own client cost per streamed token, the
// highest BenchmarkClientCPU measured (18–19 µs at 256 streams; see
// docs/performance.md).
const ClientCPUPerToken = 19e-6 // CPU seconds

// busyShare is how much of a pod's CPU the advice lets the client use:
// beyond about half, a shard's own scheduling delays show as lag.
const busyShare = 0.5

// Advice sizes the Job: how many pods of cpuPerPod cores keep knee's client
// below half its CPU at tokensPerSecond streamed tokens.
func Advice(tokensPerSecond, cpuPerPod float64) (pods int, why string) {
	if tokensPerSecond <= 0 || cpuPerPod <= 0 {
		return 0, "give --rate (or --concurrency with --expect-tps) and --output-tokens in the bench arguments to size the Job"
	}
	cores := tokensPerSecond * ClientCPUPerToken
	pods = max(1, int(math.Ceil(cores/(cpuPerPod*busyShare))))
	why = fmt.Sprintf("%.0f tokens/s × %.0f µs of client CPU per token = %.2f cores; at %.0f%% of %g cores a pod, %d pod(s)",
		tokensPerSecond, ClientCPUPerToken*1e6, cores, busyShare*100, cpuPerPod, pods)
	return pods, why
}
