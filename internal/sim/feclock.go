package sim

import "github.com/knee-dev/knee/internal/simengine"

// frontEndClock is the front end's own clock on a server whose engine
// shares its CPU cores (simengine.CostParams.FrontEndRateInSteps): front-end
// work advances at the full rate while the engine is idle and at rate while
// it runs a step. Front-end costs are spent in this clock's time, so a
// request that reaches the server during a run of steps reaches the engine
// late: on a CPU server such as Ollama, the HTTP server, chat template and
// tokenizer wait for cores the compute threads hold. With rate 1 its time
// is the simulation's own.
type frontEndClock struct {
	rate      float64
	v         float64 // front-end time at now
	now       int64   // virtual ns the clock has been advanced to
	stepStart int64   // start of the step that ended at now (now when idle)
}

// frontEndRate is the engine's CostParams.FrontEndRateInSteps.
func frontEndRate(ec simengine.Config) float64 {
	if ec.Cost == nil {
		return 1
	}
	return ec.Cost.FrontEndRateInSteps
}

func newFrontEndClock(rate float64) *frontEndClock {
	if !(rate > 0 && rate < 1) {
		rate = 1
	}
	return &frontEndClock{rate: rate}
}

// step accounts for a step that ran from the clock's now to end.
func (c *frontEndClock) step(end int64) {
	c.v += c.rate * float64(end-c.now)
	c.stepStart, c.now = c.now, end
}

// idle accounts for idle time up to end.
func (c *frontEndClock) idle(end int64) {
	if end > c.now {
		c.v += float64(end - c.now)
		c.now = end
	}
	c.stepStart = c.now
}

// at is the front-end time at t, no later than now and no earlier than
// the last step's start: the times of the events processed after a step.
func (c *frontEndClock) at(t int64) float64 {
	if t >= c.now {
		return c.v + float64(t-c.now)
	}
	if t < c.stepStart {
		t = c.stepStart
	}
	return c.v - c.rate*float64(c.now-t)
}

// done says whether the front-end time has reached v at t (to half a
// nanosecond: the clock's float arithmetic must not keep an event
// waiting for a rounding error).
func (c *frontEndClock) done(v float64, t int64) bool { return c.at(t)+0.5 >= v }

// when is the earliest virtual time at which the front-end time can
// reach v, no earlier than t: exact within the last step, and assuming
// idle cores after now (an event then checks again, see due).
func (c *frontEndClock) when(v float64, t int64) int64 {
	if c.done(v, t) {
		return t
	}
	if c.v >= v { // reached within the last step
		return max(c.now-int64((c.v-v)/c.rate), t)
	}
	return max(c.now, t) + int64(v-max(c.v, c.at(t))+0.5)
}
