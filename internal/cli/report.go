package cli

import (
	"bytes"
	"fmt"

	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/runlife"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/spf13/cobra"
)

// newReportCmd is knee report: it renders a stored run.
func newReportCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "report")
	fs := cmd.Flags()
	db := dbFlag(fs)
	format := fs.String("format", "", "text, md, csv, json or html (default: from --out's extension, else text)")
	out := fs.String("out", "", "write to this file instead of stdout (on a terminal, html goes to a file: knee-run-ID.html)")
	cmd.Long = "Usage: knee report RUN [--format text|md|csv|json|html] [--out FILE]   (RUN: an id or --run-name from knee runs, last, last~1)"
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if err := runs.WantOne("report", pos); err != nil {
			return err
		}
		f, err := report.OutFormat(*format, *out)
		if err != nil {
			return err
		}
		st, id, err := runs.OpenRun(*db, env.Getenv, pos[0])
		if err != nil {
			return err
		}
		defer st.Close()
		lr, err := runlife.LoadReport(st, id)
		if err != nil {
			return err
		}
		// Render fully before writing, so a failure leaves no half file.
		var buf bytes.Buffer
		if err := report.Render(&buf, f, lr.Report, report.HTMLData{Records: lr.Records, Sweep: lr.Sweep}); err != nil {
			return fmt.Errorf("rendering run %d as %s: %w", id, f, err)
		}
		path := *out
		if path == "" && f == "html" && env.IsTerminal {
			// HTML on a terminal is noise: write a file (piped, it goes to stdout).
			path = fmt.Sprintf("knee-run-%d.html", id)
		}
		return writeOut(env, path, buf.Bytes(), fmt.Sprintf("run %d, %s", id, f))
	}
	return cmd
}

// writeOut writes a rendered output to stdout (path "" or "-") or, whole,
// to the file path, saying so with what it holds.
func writeOut(env *Env, path string, data []byte, what string) error {
	if path == "" || path == "-" {
		_, err := env.Stdout.Write(data)
		return err
	}
	if err := report.WriteFile(path, data); err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "wrote %s (%s)\n", path, what)
	return nil
}
