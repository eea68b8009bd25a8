package cli

import (
	"strings"

	"github.com/knee-dev/knee/internal/junit"
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/sweep"
	"github.com/spf13/pflag"
)

// junitFlag is --junit FILE: the command's verdicts as JUnit XML for CI test
// reporters (docs/ci.md has the exit code each outcome maps to).
type junitFlag struct {
	path string
	// stopped is why a sweep ended early (nil: it ran to its end); its
	// verdict case is then an error.
	stopped error
	// runID and config are the stored sweep's, for the report's properties.
	runID  string
	config [][2]string
}

func (j *junitFlag) register(fs *pflag.FlagSet, what string) {
	fs.StringVar(&j.path, "junit", "", "write "+what+" as JUnit XML to this file (for CI test reporters; see docs/ci.md)")
}

// check refuses, before any work, a file that cannot be written.
func (j *junitFlag) check() error { return junit.CheckFile(j.path) }

// write writes the suites; a file CI cannot read is a failed run (exit 1).
func (j *junitFlag) write(name string, suites ...junit.Suite) error {
	return junit.WriteFile(j.path, name, suites)
}

// runSuite is a bench or sim run's verdicts: failure is why the run
// measured nothing worth its figures ("" when it did).
func runSuite(rep *report.Run, failure string, interrupted bool) junit.Suite {
	return junit.RunSuite(junit.Run{Kind: rep.Kind, ID: rep.ID, Version: rep.Version, Target: rep.Target, Model: rep.Model,
		Load: rep.Load, Config: rep.Config, Start: rep.Start, Summary: rep.Summary, SLOs: rep.SLOs,
		Failure: failure, Interrupted: interrupted})
}

// sweepSuites is a sweep's verdicts: a suite per step, and the SLO-safe point.
func sweepSuites(res *sweep.Result, j *junitFlag) []junit.Suite {
	props := junit.RunProperties("sweep", j.runID, Version, "", "", res.LoadKind+" sweep", j.config)
	if len(res.SLOs) > 0 {
		props = append(props, [2]string{"knee.slos", strings.Join(res.SLOs, ", ")})
	}
	return junit.SweepSuites(res, props, j.stopped)
}
