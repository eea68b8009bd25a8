package cluster

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
)

// Write writes the manifest `knee cluster job` prints for s: a header
// naming the run and the sizing advice, then the Job. secret is SECRET or
// SECRET/KEY (key "url" when not given); expectTPS, when 0, is estimated
// from the bench arguments; Pods, when 0, is the advice. Every shard must
// draw the same schedule, so a seed is chosen here, once, when the
// arguments give none (knee's default seed is random).
func Write(w io.Writer, s JobSpec, secret string, retries int, expectTPS float64) error {
	if len(s.Args) > 0 && argValue(s.Args, "seed") == "" {
		s.Args = append(s.Args, "--seed", strconv.FormatUint(rand.Uint64()>>12, 10))
	}
	s.SecretName, s.SecretKey, _ = strings.Cut(secret, "/")
	if s.SecretKey == "" {
		s.SecretKey = "url"
	}
	if retries < 0 {
		return badinput.Errorf("--retries %d: want 0 or more", retries)
	}
	s.RetriesPerIndex = int32(retries)
	tps := expectTPS
	if tps == 0 {
		tps = tokensPerSecondOf(s.Args)
	}
	cpu, _ := strconv.ParseFloat(strings.TrimSuffix(s.CPU, "m"), 64)
	if strings.HasSuffix(s.CPU, "m") {
		cpu /= 1000
	}
	advised, why := Advice(tps, cpu)
	if s.Pods == 0 {
		s.Pods = max(1, advised)
	}
	out, err := Manifest(s)
	if err != nil {
		return badinput.Errorf("%v", err)
	}
	fmt.Fprintf(w, "# knee cluster job: %d shard(s) of one %s run named %q; kubectl apply -f - (docs/cluster.md)\n",
		s.Pods, s.Args[0], s.Name)
	fmt.Fprintf(w, "# sizing: %s\n", why)
	if advised > s.Pods {
		fmt.Fprintf(w, "# warning: --pods %d is below the advice (%d): the shards' own CPU may show as lag\n", s.Pods, advised)
	}
	_, err = w.Write(out)
	return err
}

// tokensPerSecondOf estimates the streamed tokens/s of a bench's arguments:
// --rate times the mean of --output-tokens (0 when either is missing).
func tokensPerSecondOf(args []string) float64 {
	rate, err := strconv.ParseFloat(argValue(args, "rate"), 64)
	if err != nil || rate <= 0 {
		return 0
	}
	out := argValue(args, "output-tokens")
	kind, params, dist := strings.Cut(out, ":")
	if !dist {
		n, _ := strconv.ParseFloat(out, 64)
		return rate * n
	}
	if lo, err := strconv.ParseFloat(kind, 64); err == nil { // "256:1024", uniform
		hi, _ := strconv.ParseFloat(params, 64)
		return rate * (lo + hi) / 2
	}
	mean, _, _ := strings.Cut(params, ",") // "normal:512,128" and the like: the first parameter
	m, _ := strconv.ParseFloat(mean, 64)
	return rate * m
}

// argValue is the value of --name (or -name, --name=v) in a command's
// arguments, "" when absent.
func argValue(args []string, name string) string {
	for i, a := range args {
		for _, p := range []string{"--", "-"} {
			if v, ok := strings.CutPrefix(a, p+name+"="); ok {
				return v
			}
			if a == p+name && i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}
