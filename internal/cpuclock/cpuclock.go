// Package cpuclock reads the CPU time this process has used, for the
// figures knee reports about its own cost (CPU per streamed token, client
// saturation warnings).
package cpuclock

import "runtime"

// CPUs is the number of logical CPUs the process may use.
func CPUs() int { return runtime.NumCPU() }
