//go:build !unix

package selftest

import "time"

// processCPU is not measured on this platform (CPU figures read 0).
func processCPU() time.Duration { return 0 }
