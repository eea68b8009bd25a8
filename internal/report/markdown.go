package report

import (
	"bufio"
	"io"
	"strings"
	"unicode"

	"github.com/knee-dev/knee/internal/redact"
)

// Markdown writes the same report as Text, as Markdown (report.md).
func Markdown(w io.Writer, run *Run) error {
	bw := bufio.NewWriter(redact.ControlWriter(w))
	bw.WriteString("# " + mdEscape(title(run)) + "\n")
	if run.Sweep != nil {
		bw.WriteString("\n")
		if err := sweepMarkdownBody(bw, run.Sweep, "## "); err != nil {
			return err
		}
		if run.Step != "" {
			bw.WriteString("\n## Step " + mdEscape(run.Step) + "\n")
		}
	}
	for _, s := range build(run) {
		bw.WriteString("\n")
		if s.title != "" {
			bw.WriteString("## " + mdEscape(s.title) + "\n\n")
		}
		if len(s.kv) > 0 {
			for _, p := range s.kv {
				bw.WriteString("- **" + mdEscape(p[0]) + "**: " + mdEscape(p[1]) + "\n")
			}
		}
		if t := s.table; t != nil {
			if len(s.kv) > 0 {
				bw.WriteString("\n")
			}
			mdRow(bw, t.header)
			align := make([]string, len(t.header))
			for i := range align {
				if i < max(t.left, 1) {
					align[i] = ":--"
				} else {
					align[i] = "--:"
				}
			}
			bw.WriteString("|" + strings.Join(align, "|") + "|\n")
			for _, row := range t.rows {
				mdRow(bw, row)
			}
		}
		for _, b := range s.bullets {
			bw.WriteString("- " + mdEscape(b) + "\n")
		}
	}
	return bw.Flush()
}

func mdRow(bw *bufio.Writer, cells []string) {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = mdEscape(c)
	}
	bw.WriteString("| " + strings.Join(esc, " | ") + " |\n")
}

// mdEscape keeps text literal in Markdown while leaving it readable in the
// source: pipes, backslashes, stars and backticks are escaped; "<" only
// where it could open an HTML tag; "_" only where it could start or end
// emphasis (never inside a word such as error_rate).
func mdEscape(s string) string {
	var b strings.Builder
	rs := []rune(s)
	alnum := func(i int) bool {
		return i >= 0 && i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]))
	}
	for i, r := range rs {
		switch r {
		case '\\', '|', '*', '`':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			if i+1 < len(rs) && (unicode.IsLetter(rs[i+1]) || strings.ContainsRune("/!?", rs[i+1])) {
				b.WriteString("&lt;")
			} else {
				b.WriteRune(r)
			}
		case '_':
			if !alnum(i-1) || !alnum(i+1) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '\n':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
