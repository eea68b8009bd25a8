//go:build !unix

package loadgen

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
