package cluster

import (
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

func TestTokensPerSecond(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want float64
	}{
		{[]string{"bench", "--rate", "10", "--output-tokens", "100"}, 1000},
		{[]string{"sweep", "--rate=1,4,2", "--output-tokens", "256:1024"}, 4 * 640},
		{[]string{"sweep", "-rate", "auto", "--max", "8", "--output-tokens", "normal:512,128"}, 8 * 512},
		{[]string{"bench", "--concurrency", "8", "--output-tokens", "100"}, 0},
	} {
		if got := TokensPerSecond(c.args); got != c.want {
			t.Errorf("%q: %v tokens/s, want %v", c.args, got, c.want)
		}
	}
}

func TestSettleAddsASeedOnceAndReadsTheSecret(t *testing.T) {
	t.Parallel()
	s := JobSpec{Args: []string{"bench", "--rate", "5"}, CPU: "500m"}
	if _, _, err := s.Settle("knee-target", 2, 0, 42); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Args, " "); got != "bench --rate 5 --seed 42" || s.SecretName != "knee-target" || s.SecretKey != "url" || s.RetriesPerIndex != 2 || s.Pods < 1 {
		t.Errorf("settled %q, secret %s/%s, retries %d, pods %d", got, s.SecretName, s.SecretKey, s.RetriesPerIndex, s.Pods)
	}
	s = JobSpec{Args: []string{"bench", "--seed", "7"}, Pods: 3}
	if _, _, err := s.Settle("a/b", 0, 0, 42); err != nil || len(s.Args) != 3 || s.SecretKey != "b" || s.Pods != 3 {
		t.Errorf("given a seed and pods: %q, key %q, pods %d, %v", s.Args, s.SecretKey, s.Pods, err)
	}
	if _, _, err := (&JobSpec{}).Settle("", -1, 0, 1); !badinput.Is(err) || !strings.Contains(err.Error(), "--retries -1") {
		t.Errorf("--retries -1: %v", err)
	}
}
