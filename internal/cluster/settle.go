package cluster

import (
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
)

// Settle completes the spec from knee cluster job's flags: a seed (seed)
// when the command gives none, so every shard draws one schedule; the
// secret NAME/KEY holding the URL; the retries per index; and, from the
// streamed tokens/s the load will reach (expectTPS, else estimated from
// the arguments), the pods advised and why (Pods when not given).
func (s *JobSpec) Settle(secret string, retries int, expectTPS float64, seed uint64) (advised int, why string, err error) {
	// Every shard must draw the same schedule: a seed chosen here, once,
	// when the command does not give one (knee's default seed is random).
	if len(s.Args) > 0 && ArgValue(s.Args, "seed") == "" {
		s.Args = append(s.Args, "--seed", strconv.FormatUint(seed, 10))
	}
	s.SecretName, s.SecretKey, _ = strings.Cut(secret, "/")
	if s.SecretKey == "" {
		s.SecretKey = "url"
	}
	if retries < 0 {
		return 0, "", badinput.Errorf("--retries %d: want 0 or more", retries)
	}
	s.RetriesPerIndex = int32(retries)
	tps := expectTPS
	if tps == 0 {
		tps = TokensPerSecond(s.Args)
	}
	cpu, _ := strconv.ParseFloat(strings.TrimSuffix(s.CPU, "m"), 64)
	if strings.HasSuffix(s.CPU, "m") {
		cpu /= 1000
	}
	advised, why = Advice(tps, cpu)
	if s.Pods == 0 {
		s.Pods = max(1, advised)
	}
	return advised, why, nil
}

// TokensPerSecond estimates the streamed tokens/s of a bench's or a
// sweep's arguments: --rate (a sweep's highest step, or --max of --rate
// auto) times the mean of --output-tokens (0 when either is missing).
func TokensPerSecond(args []string) float64 {
	rate := 0.0
	steps := ArgValue(args, "rate")
	if steps == "auto" {
		steps = ArgValue(args, "max")
	}
	for _, v := range strings.Split(steps, ",") {
		if r, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			rate = max(rate, r)
		}
	}
	if rate <= 0 {
		return 0
	}
	out := ArgValue(args, "output-tokens")
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

// ArgValue is the value of --name (or -name, --name=v) in a command's
// arguments, "" when absent.
func ArgValue(args []string, name string) string {
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
