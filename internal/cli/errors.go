package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// Exit codes (SPEC §3).
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	ExitSLO     = 3
)

// UsageError is bad usage or bad input: exit code 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef builds a UsageError; the message should name the flag, file or line
// that was wrong and what was expected.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// SLOError means the run finished but an objective failed: exit code 3.
type SLOError struct{ Failed []string }

func (e *SLOError) Error() string { return fmt.Sprintf("SLO failed: %v", e.Failed) }

var errHelp = errors.New("help shown")

// newFlagSet returns a flag set whose errors become UsageErrors via
// parseFlags, and whose -h prints the command's summary and its flags in
// groups (help.go) unless the command sets its own Usage.
func newFlagSet(env *Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("knee "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() { defaultUsage(fs) }
	if env.onFlagSet != nil {
		env.onFlagSet(fs)
	}
	return fs
}

// parseFlags parses args, mapping -h to errHelp and any other failure to a
// one-line UsageError naming the flag and the form it wants (flagparse.go).
// Flags may come anywhere on the line, before or after positional
// arguments ("--" ends the flags). A command that registers
// --scenario-file gets the file's settings first, so the command line
// overrides them.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if fs.Lookup(scenarioFileFlag) != nil {
		if err := applyScenarioFile(fs, args); err != nil {
			return err
		}
	}
	return parseAnywhere(fs, args)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
