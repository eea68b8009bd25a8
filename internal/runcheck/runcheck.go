// Package runcheck says what a finished load run's figures can be trusted
// for: whether it measured anything at all, where its token timestamps came
// from, and whether knee's own limits (its CPU, the host's steal, a client
// that fell behind) show in them. knee bench and knee sweep state these in
// their reports and exit codes.
package runcheck

import (
	"fmt"
	"time"

	"github.com/knee-dev/knee/internal/cpuclock"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
)

// MaxErrorRate is the share of failed requests beyond which a run counts
// as a failed measurement (exit 1): its figures describe mostly failures.
const MaxErrorRate = 0.5

// MeasurementFailure says why a finished run measured nothing worth its
// figures ("" when it did): nothing in the window (the warm-up, --warmup,
// took every request), no completed request, or mostly errors.
func MeasurementFailure(sum stats.Summary, issued int, warmup string) string {
	top := func() string {
		kind, most := "", 0
		for _, k := range record.ErrorKinds {
			if n := sum.ErrorKinds[string(k)]; n > most {
				kind, most = string(k), n
			}
		}
		return record.ErrorKind(kind).Hint()
	}
	switch {
	case sum.Requests == 0 && issued > 0 && warmup != "":
		return fmt.Sprintf("nothing was measured: all %d requests fell in the warm-up (--warmup %s is as long as the run); shorten --warmup or lengthen the run", issued, warmup)
	case sum.Requests == 0:
		return "nothing was measured: no request was sent in the run's window; lengthen the run"
	case sum.Completed == 0:
		return fmt.Sprintf("all %d requests failed (%s): %s", sum.Requests, record.ErrorKindsLine(sum.ErrorKinds), top())
	case sum.ErrorRate > MaxErrorRate:
		return fmt.Sprintf("%.0f%% of the %d measured requests failed (%s), so the figures describe mostly failures: %s",
			100*sum.ErrorRate, sum.Requests, record.ErrorKindsLine(sum.ErrorKinds), top())
	}
	return ""
}

// TimestampNote says where token arrival times came from.
func TimestampNote(res *loadgen.Result) string {
	switch {
	case res.KernelTimestamps && res.WallClockSteps > 0:
		return fmt.Sprintf("token arrival times: the kernel's receive timestamps (SO_TIMESTAMPNS); the system clock stepped %d time(s) during the run, and tokens received just before a step may be off by it", res.WallClockSteps)
	case res.KernelTimestamps:
		return "token arrival times: the kernel's receive timestamps (SO_TIMESTAMPNS), so knee's own scheduling delay is not in them"
	case res.UserStampedStreams > 0:
		return fmt.Sprintf("token arrival times: taken in user space after each socket read on %d streams (no kernel receive timestamps there)", res.UserStampedStreams)
	}
	return "token arrival times: taken in user space right after each socket read"
}

// Meter measures, over a run, what bounds how well the client keeps
// time: knee's own CPU and the host's steal of the machine's.
type Meter struct {
	cpu          time.Duration // knee's CPU: at start, then over the run
	mach0, mach1 cpuclock.MachineTimes
	machErr      error
}

// StartMeter starts measuring: call it just before the load starts.
func StartMeter() *Meter {
	m := &Meter{cpu: cpuclock.Process()}
	m.mach0, m.machErr = cpuclock.Machine()
	return m
}

// Stop ends the measurement: call it when the run ends.
func (m *Meter) Stop() {
	m.cpu = cpuclock.Process() - m.cpu
	if m.machErr == nil {
		m.mach1, m.machErr = cpuclock.Machine()
	}
}

// stealShareOver is the host's share of the machine's CPU time beyond
// which knee says the run's timing includes host stalls: on a VM whose
// host takes a few percent, a vCPU is stopped for milliseconds at a time
// (see package wake), and a send or a token read due then waits it out.
const stealShareOver = 0.02

// ClientFloorWarnings says when a result may reflect knee's own limits
// rather than the server's: the client fell behind its schedule, its CPU
// was saturated, or the host stopped the machine's CPUs.
func ClientFloorWarnings(sum stats.Summary, res *loadgen.Result, m *Meter) []string {
	var w []string
	if sum.Lag.Count > 0 && sum.Lag.P99 > 10 {
		// What lag means depends on the loop: behind the schedule (open),
		// or slow to refill a slot (closed: fewer in flight than asked).
		late := "knee sent requests late, behind its schedule; TTFT(sched) includes it"
		if res.OfferedRateRPS == 0 {
			late = "knee sent requests late after a slot freed, so fewer were in flight than asked; TTFT(sched) includes it"
		}
		w = append(w, fmt.Sprintf("warning: client lag p99 is %.1f ms: %s. Results are beyond this machine's overhead floor (see knee selftest).", sum.Lag.P99, late))
	}
	if res.Elapsed > 0 {
		util := m.cpu.Seconds() / res.Elapsed.Seconds() / float64(cpuclock.CPUs())
		if util > 0.9 {
			w = append(w, fmt.Sprintf("warning: knee's process used %.0f%% of all CPUs: timing may include client overhead (see knee selftest).", 100*util))
		}
	}
	if m.machErr == nil {
		if s := StealWarning(m.mach0, m.mach1); s != "" {
			w = append(w, s)
		}
	}
	return w
}

// StealWarning says when the host took more than stealShareOver of the
// machine's CPU time between two readings.
func StealWarning(from, to cpuclock.MachineTimes) string {
	share := to.StealShare(from)
	if share <= stealShareOver {
		return ""
	}
	return fmt.Sprintf("warning: the host took %.1f%% of this machine's CPU time during the run (steal): a stopped vCPU delays sends and token reads by milliseconds, so lag and latency tails may be the host's, not the server's.", 100*share)
}
