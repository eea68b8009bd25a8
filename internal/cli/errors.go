package cli

import (
	"fmt"

	"github.com/knee-dev/knee/internal/badinput"
)

// Exit codes (SPEC §3).
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	ExitSLO     = 3
)

// UsageError is bad usage or bad input: exit code 2. Library packages
// return badinput errors; this is the same type.
type UsageError = badinput.Error

// Usagef builds a UsageError; the message should name the flag, file or line
// that was wrong and what was expected.
func Usagef(format string, args ...any) error { return badinput.Errorf(format, args...) }

// SLOError means the run finished but an objective failed: exit code 3.
type SLOError struct{ Failed []string }

func (e *SLOError) Error() string { return fmt.Sprintf("SLO failed: %v", e.Failed) }
func (e *SLOError) ExitCode() int { return ExitSLO }
