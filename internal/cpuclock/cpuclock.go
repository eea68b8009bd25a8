// Package cpuclock reads the CPU time this process has used, for the
// figures knee reports about its own cost (CPU per streamed token, client
// saturation warnings), and the whole machine's (Machine), for tests that
// must know whether others or a VM's host took the CPUs from under them.
package cpuclock

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// CPUs is the number of logical CPUs the process may use.
func CPUs() int { return runtime.NumCPU() }

// MachineTimes is the whole machine's CPU time so far, in clock ticks
// summed over every CPU (Linux's /proc/stat).
type MachineTimes struct {
	Busy  uint64 // user, nice, system, irq and softirq: work of some process
	Steal uint64 // taken by a virtual machine's host: no process ran
	Total uint64 // all of it, idle and iowait included (guest time is in user already)
}

// StealShare is the host's share of the machine's CPU time from since to
// m: 0 when the counters did not advance (or went back).
func (m MachineTimes) StealShare(since MachineTimes) float64 {
	if m.Total <= since.Total || m.Steal < since.Steal {
		return 0
	}
	return float64(m.Steal-since.Steal) / float64(m.Total-since.Total)
}

// Machine reads the machine's CPU times from /proc/stat's first line; an
// error where there is none or it is not in the expected form.
func Machine() (MachineTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineTimes{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return MachineTimes{}, fmt.Errorf("/proc/stat: first line %q: want cpu and at least 8 times", line)
	}
	var m MachineTimes
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return MachineTimes{}, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		m.Total += n
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			m.Steal = n
		default:
			m.Busy += n
		}
	}
	return m, nil
}
