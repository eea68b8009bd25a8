package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/record"
)

// Formats are the formats a run's report renders in.
var Formats = []string{"text", "md", "csv", "json", "html"}

// OutFormat is the format --format and --out ask for together: the one
// given, else the file's extension, else text. A format knee does not
// write, or a file name that disagrees with --format, is bad input.
func OutFormat(format, out string) (string, error) {
	f := strings.ToLower(format)
	if f == "markdown" {
		f = "md"
	}
	if f != "" && !slices.Contains(Formats, f) {
		return "", badinput.Errorf("--format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
	if out != "" && out != "-" {
		extFormat, known := FormatFromExt(out)
		switch {
		case f == "" && !known:
			return "", badinput.Errorf("--out %s: knee writes text, md, csv, json or html; name the file .txt, .md, .csv, .json or .html (or give --format)", out)
		case f == "":
			f = extFormat
		case known && filepath.Ext(out) != "" && extFormat != f:
			return "", badinput.Errorf("--out %s is a %s file name but --format is %s: make them agree", out, extFormat, f)
		}
	}
	if f == "" {
		f = "text"
	}
	return f, nil
}

// FormatFromExt is the report format a file name asks for; known is false
// for an extension knee does not write (.pdf, .png, ...). A name without
// an extension is text.
func FormatFromExt(path string) (format string, known bool) {
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

// Render writes r in format (one of Formats); html draws from data.
func Render(w io.Writer, format string, r *Run, data HTMLData) error {
	switch format {
	case "text":
		return Text(w, r)
	case "md":
		return Markdown(w, r)
	case "csv":
		return CSV(w, r)
	case "json":
		return JSON(w, r)
	case "html":
		return HTML(w, r, data)
	}
	return badinput.Errorf("--format %q: want one of %s", format, strings.Join(Formats, ", "))
}

// CheckOutFile refuses an --out that cannot be a file before anything is
// written: a folder, or a file in a folder that does not exist. Said in the
// user's terms, not the temporary file's.
func CheckOutFile(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return badinput.Errorf("--out %s is a directory: want a file name, such as %s", path, filepath.Join(path, "report.md"))
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return badinput.Errorf("--out %s: the folder %s does not exist (create it first)", path, dir)
	case err != nil:
		return badinput.Errorf("--out %s: %v", path, err)
	case !fi.IsDir():
		return badinput.Errorf("--out %s: %s is not a folder", path, dir)
	}
	return nil
}

// WriteFile writes data to --out path whole: through a temporary file
// renamed into place, so the destination is either the old file or the
// whole new one.
func WriteFile(path string, data []byte) error {
	if err := CheckOutFile(path); err != nil {
		return err
	}
	if err := writeFileAtomic(path, data); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return nil
}

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

// WriteDir writes summary.json, report.md and report.html into dir (beside
// a run's records.jsonl); recs, when kept, feed the HTML distributions and
// waterfall.
func WriteDir(dir string, rep *Run, recs []record.Request) error {
	files := []struct {
		name   string
		render func(io.Writer) error
	}{
		{"summary.json", func(w io.Writer) error { return JSON(w, rep) }},
		{"report.md", func(w io.Writer) error { return Markdown(w, rep) }},
		{"report.html", func(w io.Writer) error { return HTML(w, rep, HTMLData{Records: recs}) }},
	}
	for _, file := range files {
		f, err := os.Create(filepath.Join(dir, file.name))
		if err != nil {
			return err
		}
		err = file.render(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			// A cut file (an empty summary.json on a full disk) must
			// not read as a report: none is better than half of one.
			os.Remove(f.Name())
			return fmt.Errorf("%s: %w", file.name, err)
		}
	}
	return nil
}
