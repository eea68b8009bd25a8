package lab

import (
	"math/rand/v2"

	"github.com/knee-dev/knee/internal/workload"
)

// Lengths draws request i's prompt and output lengths from two
// distributions, deterministically from (seed, i), so a scenario is the same
// on every machine. It satisfies sim.Lengths.
type Lengths struct {
	In, Out workload.Dist
	Seed    uint64
}

// NewLengths parses two length distributions ("512", "256:1024", ...).
func NewLengths(in, out string, seed uint64) (*Lengths, error) {
	i, err := workload.ParseDist(in)
	if err != nil {
		return nil, err
	}
	o, err := workload.ParseDist(out)
	if err != nil {
		return nil, err
	}
	return &Lengths{In: i, Out: o, Seed: seed}, nil
}

// Lengths returns request i's prompt and output token counts.
func (l *Lengths) Lengths(i int64) (in, out int) {
	rng := rand.New(rand.NewPCG(l.Seed, uint64(i)))
	return l.In.Sample(rng), l.Out.Sample(rng)
}
