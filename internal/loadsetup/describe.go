package loadsetup

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/knee-dev/knee/internal/workload"
)

// LoadString describes the load model in words for reports; trace is the
// opened trace of a replay (nil: none).
func (c *Choice) LoadString(trace *workload.Trace) string {
	var b strings.Builder
	if trace != nil {
		info := trace.Info()
		fmt.Fprintf(&b, "open loop, trace replay at %.4gx (%.3g req/s), %d requests", info.Speedup, info.MeanRateRPS, c.Requests)
		if c.Duration > 0 {
			fmt.Fprintf(&b, ", %v", c.Duration)
		}
		return b.String()
	}
	if c.Rate > 0 {
		fmt.Fprintf(&b, "open loop, %g req/s %s", c.Rate, c.Arrival)
		if c.Arrival == "gamma" {
			fmt.Fprintf(&b, " (burstiness %g)", c.Burstiness)
		}
		if c.MaxConcurrency > 0 {
			fmt.Fprintf(&b, ", max %d in flight", c.MaxConcurrency)
		}
	} else {
		fmt.Fprintf(&b, "closed loop, concurrency %d", c.Concurrency)
	}
	if c.Requests > 0 {
		fmt.Fprintf(&b, ", %d requests", c.Requests)
	}
	if c.Duration > 0 {
		fmt.Fprintf(&b, ", %v", c.Duration)
	}
	if c.Warmup != "" {
		fmt.Fprintf(&b, ", warm-up %s", c.Warmup)
	}
	return b.String()
}

// Config lists the resolved load settings for reports and stored runs;
// trace is the opened trace of a replay (nil: none), p how prompts were
// built.
func (c *Choice) Config(trace *workload.Trace, p Prompts) [][2]string {
	if trace != nil {
		kv := append(c.Replay.ConfigKV(c.TracePath, trace), [2]string{"tokenizer", c.Tokenizer}, [2]string{"seed", strconv.FormatUint(c.ResolvedSeed(), 10)},
			[2]string{"requests", strconv.FormatInt(c.Requests, 10)})
		if c.Duration > 0 {
			kv = append(kv, [2]string{"duration", c.Duration.String()})
		}
		if c.Warmup != "" {
			kv = append(kv, [2]string{"warmup", c.Warmup})
		}
		return kv
	}
	kv := [][2]string{
		{"input_tokens", c.Input}, {"output_tokens", c.Output}, {"tokenizer", c.Tokenizer},
		{"seed", strconv.FormatUint(c.ResolvedSeed(), 10)},
	}
	if c.Dataset != "" {
		kv = append(kv, [2]string{"dataset", c.Dataset})
	}
	if p.Server != nil {
		kv = append(kv, [2]string{"prompts_built_with", p.Server.Name()})
	}
	if p.Overhead > 0 {
		kv = append(kv, [2]string{"prompt_overhead_tokens", strconv.Itoa(p.Overhead)})
	}
	if c.PrefixTokens > 0 {
		kv = append(kv, [2]string{"prefix_groups", strconv.Itoa(max(1, c.PrefixGroups))}, [2]string{"prefix_tokens", strconv.Itoa(c.PrefixTokens)})
	}
	if c.SharedPrefix > 0 {
		kv = append(kv, [2]string{"shared_prefix_tokens", strconv.Itoa(c.SharedPrefix)})
	}
	if c.Rate > 0 {
		kv = append(kv, [2]string{"rate_rps", strconv.FormatFloat(c.Rate, 'g', -1, 64)}, [2]string{"arrival", c.Arrival})
		if c.Arrival == "gamma" {
			kv = append(kv, [2]string{"burstiness", strconv.FormatFloat(c.Burstiness, 'g', -1, 64)})
		}
		if c.MaxConcurrency > 0 {
			kv = append(kv, [2]string{"max_concurrency", strconv.Itoa(c.MaxConcurrency)})
		}
	} else {
		kv = append(kv, [2]string{"concurrency", strconv.Itoa(c.Concurrency)})
	}
	if c.Requests > 0 {
		kv = append(kv, [2]string{"requests", strconv.FormatInt(c.Requests, 10)})
	}
	if c.Duration > 0 {
		kv = append(kv, [2]string{"duration", c.Duration.String()})
	}
	if c.Warmup != "" {
		kv = append(kv, [2]string{"warmup", c.Warmup})
	}
	if c.Ramp > 0 {
		kv = append(kv, [2]string{"ramp", c.Ramp.String()})
	}
	if c.ContinuousUsage {
		kv = append(kv, [2]string{"continuous_usage", "true"})
	}
	return kv
}

// Describe names the workload for sweep notes; trace as LoadString's.
func (c *Choice) Describe(trace *workload.Trace) string {
	if trace != nil {
		return trace.Info().String()
	}
	return fmt.Sprintf("input %s, output %s tokens", c.Input, c.Output)
}
