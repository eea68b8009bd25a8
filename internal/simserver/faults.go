package simserver

import (
	"fmt"
	"time"
)

// Faults injects failures, each in a share of requests, deterministically
// from Config.Seed and the request's arrival number (the n-th valid request
// gets the same faults in every run with the same seed).
type Faults struct {
	ErrorRate     float64       // share answered 500 at once, before any token
	StallRate     float64       // share whose stream pauses mid-way ...
	StallDuration time.Duration // ... for this long (held tokens then leave together)
	CutRate       float64       // share whose stream is cut mid-way (no finish, no [DONE])
	MalformedRate float64       // share with one chunk of invalid JSON mid-stream
	// SlowAfter and SlowFactor: from SlowAfter after the server started,
	// every engine step takes SlowFactor times longer (slow decode).
	SlowAfter  time.Duration
	SlowFactor float64
}

// Validate checks shares are in [0,1] and the rest is coherent.
func (f Faults) Validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"error rate", f.ErrorRate}, {"stall rate", f.StallRate}, {"cut rate", f.CutRate}, {"malformed rate", f.MalformedRate}} {
		if r.v < 0 || r.v > 1 {
			return fmt.Errorf("fault %s %v: want a share between 0 and 1", r.name, r.v)
		}
	}
	if f.StallRate > 0 && f.StallDuration <= 0 {
		return fmt.Errorf("fault stall rate %v needs a stall duration > 0", f.StallRate)
	}
	if f.StallDuration < 0 || f.SlowAfter < 0 {
		return fmt.Errorf("fault durations must be >= 0")
	}
	if f.SlowFactor != 0 && f.SlowFactor < 1 {
		return fmt.Errorf("fault slow factor %v: want >= 1 (0 = off)", f.SlowFactor)
	}
	return nil
}

// Any reports whether any fault is on.
func (f Faults) Any() bool {
	return f.ErrorRate > 0 || f.StallRate > 0 || f.CutRate > 0 || f.MalformedRate > 0 || f.SlowFactor > 1
}

// String describes the faults that are on.
func (f Faults) String() string {
	if !f.Any() {
		return "none"
	}
	s := ""
	add := func(format string, a ...any) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf(format, a...)
	}
	if f.ErrorRate > 0 {
		add("%.3g%% fail with 500", f.ErrorRate*100)
	}
	if f.StallRate > 0 {
		add("%.3g%% stall %v mid-stream", f.StallRate*100, f.StallDuration)
	}
	if f.CutRate > 0 {
		add("%.3g%% cut mid-stream", f.CutRate*100)
	}
	if f.MalformedRate > 0 {
		add("%.3g%% get a malformed chunk", f.MalformedRate*100)
	}
	if f.SlowFactor > 1 {
		add("steps %.3gx slower after %v", f.SlowFactor, f.SlowAfter)
	}
	return s
}

// fault kinds, mixed into the per-request random draw.
const (
	faultError = iota + 1
	faultStall
	faultCut
	faultMalformed
)

// draw is a uniform [0,1) value for (seed, request number, kind).
func draw(seed, n uint64, kind int) float64 {
	x := seed ^ (n+1)*0x9e3779b97f4a7c15 ^ uint64(kind)*0xbf58476d1ce4e5b9
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// plan is one request's faults: token indexes (-1 = none).
type plan struct {
	fail                      bool
	stallAt, cutAt, malformAt int
}

func (f *Faults) plan(seed, n uint64, outputTokens int) plan {
	p := plan{stallAt: -1, cutAt: -1, malformAt: -1}
	mid := outputTokens / 2
	if f.ErrorRate > 0 && draw(seed, n, faultError) < f.ErrorRate {
		p.fail = true
	}
	if f.StallRate > 0 && draw(seed, n, faultStall) < f.StallRate {
		p.stallAt = mid
	}
	if f.CutRate > 0 && draw(seed, n, faultCut) < f.CutRate {
		p.cutAt = mid
	}
	if f.MalformedRate > 0 && draw(seed, n, faultMalformed) < f.MalformedRate {
		p.malformAt = mid
	}
	return p
}

// clock maps engine virtual time onto server time (ns since start): the
// identity, except that after the slow-decode fault begins virtual time runs
// SlowFactor times slower, which is exactly an engine whose steps all take
// SlowFactor times longer from then on.
type clock struct {
	slowAt int64
	factor float64
}

func (c clock) toServer(v int64) int64 {
	if c.factor <= 1 || v <= c.slowAt {
		return v
	}
	return c.slowAt + int64(float64(v-c.slowAt)*c.factor)
}

func (c clock) toVirtual(s int64) int64 {
	if c.factor <= 1 || s <= c.slowAt {
		return s
	}
	return c.slowAt + int64(float64(s-c.slowAt)/c.factor)
}
