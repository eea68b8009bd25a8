package workload

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
)

// Replay is how a user asks a trace to be replayed (--trace-format,
// --trace-start, ...); Open turns it into TraceOptions.
type Replay struct {
	Format     string
	Start, End time.Duration
	Speedup    float64
	Rate       float64 // mean arrival rate in req/s the speed-up is chosen for (0: Speedup)
	MaxContext int
	Sample     float64
}

// Check refuses values out of their range, naming the flag.
func (r *Replay) Check() error {
	switch {
	case !(r.Speedup > 0):
		return badinput.Errorf("--trace-speedup %v: want a positive factor", r.Speedup)
	case r.Rate < 0:
		return badinput.Errorf("--trace-rate %v: want a positive rate in req/s", r.Rate)
	case !(r.Sample > 0 && r.Sample <= 1):
		return badinput.Errorf("--trace-sample %v: want a fraction in (0, 1]", r.Sample)
	case r.MaxContext < 0:
		return badinput.Errorf("--trace-max-context %d: want 0 or more tokens", r.MaxContext)
	case r.Start < 0 || r.End < 0 || (r.End > 0 && r.End <= r.Start):
		return badinput.Errorf("--trace-start %v --trace-end %v: want 0 <= start < end", r.Start, r.End)
	}
	return nil
}

// Open reads and checks the trace at path; maxContext is the simulated
// engine's max model len (0 against a real target), used unless
// MaxContext is set; ctx stops reading a huge trace. Errors are bad input
// naming the file and line.
func (r *Replay) Open(ctx context.Context, path string, seed uint64, tok Tokenizer, maxContext int) (*Trace, error) {
	if r.MaxContext > 0 {
		maxContext = r.MaxContext
	}
	tr, err := OpenTrace(path, TraceOptions{
		Format: r.Format, Start: r.Start, End: r.End, Speedup: r.Speedup, TargetRateRPS: r.Rate,
		MaxContext: maxContext, Sample: r.Sample, Seed: seed, Tokenizer: tok, Context: ctx,
	})
	if err != nil {
		return nil, badinput.Errorf("--trace: %v", err)
	}
	return tr, nil
}

// ConfigKV lists the replay's settings for reports and stored runs.
func (r *Replay) ConfigKV(path string, tr *Trace) [][2]string {
	info := tr.Info()
	c := [][2]string{{"trace", path}, {"trace_format", info.Format}, {"trace_speedup", strconv.FormatFloat(info.Speedup, 'g', 6, 64)}}
	if r.Start > 0 || r.End > 0 {
		c = append(c, [2]string{"trace_window", fmt.Sprintf("%v..%v", r.Start, r.End)})
	}
	if r.Sample < 1 {
		c = append(c, [2]string{"trace_sample", strconv.FormatFloat(r.Sample, 'g', -1, 64)})
	}
	if r.MaxContext > 0 {
		c = append(c, [2]string{"trace_max_context", strconv.Itoa(r.MaxContext)})
	}
	return c
}
