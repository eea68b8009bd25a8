package cli

import (
	"io"

	"github.com/knee-dev/knee/internal/report"
	"github.com/spf13/pflag"
)

// runOutputFlags are the Objectives and Output flags of one run, knee
// bench's and knee sim's: the SLOs, the files, JSON or text (at a glance or
// in detail), progress, JUnit verdicts, the stored label and the run database.
type runOutputFlags struct {
	slos           stringList
	out            string
	jsonOut, quiet bool
	detail         bool
	label          string
	junit          junitFlag
	storeFlags
}

// register adds the flags; outFiles says what --out's directory holds and
// progress what --quiet silences.
func (o *runOutputFlags) register(fs *pflag.FlagSet, outFiles, progress string) {
	fs.Var(&o.slos, "slo", sloUsage+"; exit 3 when one fails")
	fs.StringVar(&o.out, "out", "", "directory for "+outFiles)
	fs.BoolVar(&o.jsonOut, "json", false, "print the summary as JSON on stdout instead of the text report")
	fs.BoolVar(&o.detail, "detail", false, "after the one-screen summary, print the detail: every statistic, server view, token shapes, notes, configuration and definitions")
	fs.BoolVar(&o.quiet, "quiet", false, "no "+progress)
	fs.StringVar(&o.label, "label", "", "label stored with the run")
	o.junit.register(fs, "the run's verdicts (one test case per SLO)")
	o.storeFlags.register(fs)
}

// writeReport prints the run's report on w (report.Write).
func (o *runOutputFlags) writeReport(w io.Writer, rep *report.Run) error {
	return report.Write(w, rep, o.jsonOut, o.detail, o.out)
}

// writeReportUnsaved prints the report of a run whose --out reports could
// not be written (a full disk): its last line must not point at a
// report.md that is not there; the error that follows says why.
func (o *runOutputFlags) writeReportUnsaved(w io.Writer, rep *report.Run) error {
	if o.jsonOut || o.detail {
		return report.Write(w, rep, o.jsonOut, o.detail, "")
	}
	return report.Glance(w, rep, "detail (every statistic, server view, notes, configuration, definitions): --detail; the reports in "+o.out+" could not be written (below)")
}
