package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/store"
	"github.com/spf13/cobra"
)

// reportFormats are the formats knee report renders.
var reportFormats = []string{"text", "md", "csv", "json", "html"}

// newReportCmd is knee report: it renders a stored run.
func newReportCmd(env *Env) *cobra.Command {
	cmd := newCommand(env, "report")
	fs := cmd.Flags()
	db := dbFlag(fs)
	format := fs.String("format", "", "text, md, csv, json or html (default: from --out's extension, else text)")
	out := fs.String("out", "", "write to this file instead of stdout (on a terminal, html goes to a file: knee-run-ID.html)")
	cmd.Long = helpText(func(w io.Writer) {
		fmt.Fprintln(w, "Usage: knee report RUN [--format text|md|csv|json|html] [--out FILE]   (RUN: an id from knee runs, last, last~1)")
	})
	cmd.RunE = func(_ *cobra.Command, pos []string) error {
		if err := wantOneRun("report", pos); err != nil {
			return err
		}
		f := strings.ToLower(*format)
		if f == "markdown" {
			f = "md"
		}
		if f != "" && !contains(reportFormats, f) {
			return Usagef("--format %q: want one of %s", *format, strings.Join(reportFormats, ", "))
		}
		if *out != "" && *out != "-" {
			extFormat, known := formatFromExt(*out)
			switch {
			case f == "" && !known:
				return Usagef("--out %s: knee writes text, md, csv, json or html; name the file .txt, .md, .csv, .json or .html (or give --format)", *out)
			case f == "":
				f = extFormat
			case known && filepath.Ext(*out) != "" && extFormat != f:
				return Usagef("--out %s is a %s file name but --format is %s: make them agree", *out, extFormat, f)
			}
		}
		if f == "" {
			f = "text"
		}
		st, id, err := openRun(env, *db, pos[0])
		if err != nil {
			return err
		}
		defer st.Close()
		lr, err := loadRun(st, id)
		if err != nil {
			return err
		}
		notes, err := shardNotes(st, id)
		if err != nil {
			return err
		}
		lr.report.Notes = append(lr.report.Notes, notes...)

		// Render fully before writing, so a failure leaves no half file.
		var buf bytes.Buffer
		switch f {
		case "text":
			err = report.Text(&buf, lr.report)
		case "md":
			err = report.Markdown(&buf, lr.report)
		case "csv":
			err = report.CSV(&buf, lr.report)
		case "json":
			err = report.JSON(&buf, lr.report)
		case "html":
			err = report.HTML(&buf, lr.report, report.HTMLData{Records: lr.records, Sweep: lr.sweep})
		}
		if err != nil {
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

// openRun opens the database read-only and finds run ref in it; the caller
// closes the store. A reference that names no run is a usage error.
func openRun(env *Env, dbFlag, ref string) (*store.Store, int64, error) {
	st, err := openDBRead(env, dbFlag)
	if err != nil {
		return nil, 0, err
	}
	id, err := resolveRun(st, ref)
	if err != nil {
		st.Close()
		return nil, 0, err
	}
	return st, id, nil
}

// wantOneRun checks that a command got one run reference.
func wantOneRun(cmd string, pos []string) error {
	if len(pos) != 1 {
		return Usagef("want one run: knee %s RUN (an id from `knee runs`, \"last\" or \"last~N\"), got %d arguments", cmd, len(pos))
	}
	return nil
}

// writeOut writes a rendered output to stdout (path "" or "-") or, whole,
// to the file path, saying so with what it holds.
func writeOut(env *Env, path string, data []byte, what string) error {
	if path == "" || path == "-" {
		_, err := env.Stdout.Write(data)
		return err
	}
	if err := checkOutFile(path); err != nil {
		return err
	}
	if err := writeFileAtomic(path, data); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	fmt.Fprintf(env.Stderr, "wrote %s (%s)\n", path, what)
	return nil
}

// checkOutFile refuses an --out that cannot be a file before anything is
// written: a folder, or a file in a folder that does not exist. Said in the
// user's terms, not the temporary file's.
func checkOutFile(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return Usagef("--out %s is a directory: want a file name, such as %s", path, filepath.Join(path, "report.md"))
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Usagef("--out %s: the folder %s does not exist (create it first)", path, dir)
	case err != nil:
		return Usagef("--out %s: %v", path, err)
	case !fi.IsDir():
		return Usagef("--out %s: %s is not a folder", path, dir)
	}
	return nil
}

// formatFromExt is the report format a file name asks for; known is false
// for an extension knee does not write (.pdf, .png, ...). A name without
// an extension is text.
func formatFromExt(path string) (format string, known bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md", ".markdown":
		return "md", true
	case ".csv":
		return "csv", true
	case ".json":
		return "json", true
	case ".html", ".htm":
		return "html", true
	case "", ".txt", ".text", ".log":
		return "text", true
	}
	return "", false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeFileAtomic writes through a temporary file and renames it, so the
// destination is either the old file or the whole new one.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// CreateTemp makes the file private; a report is an ordinary file.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
