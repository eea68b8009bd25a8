package report

import (
	"bufio"
	"io"
	"slices"
	"strings"

	"github.com/knee-dev/knee/internal/redact"
)

// textWidth is where long values (definitions, notes) wrap.
const textWidth = 100

// Text writes the full report: the one screen Glance prints, then the
// detail (every statistic, the server view, token shapes, notes,
// configuration and the definitions of every metric shown).
func Text(w io.Writer, run *Run) error {
	bw := bufio.NewWriter(redact.ControlWriter(w))
	if err := writeGlance(bw, run); err != nil {
		return err
	}
	bw.WriteString("\nDetail\n======\n")
	var detail []section
	for _, s := range build(run) {
		switch {
		case s.title == "SLOs", strings.HasPrefix(s.title, "Prediction ranges"), strings.HasPrefix(s.title, "Per class"):
			// at a glance already, verbatim
		case s.title == "Notes":
			// The glance's Warnings stated the warnings already: once is enough.
			s.bullets = slices.DeleteFunc(s.bullets, func(b string) bool { return slices.Contains(warnings(run), b) })
			if len(s.bullets) > 0 {
				detail = append(detail, s)
			}
		default:
			detail = append(detail, s)
		}
	}
	detail[0].title = "Run"
	writeSections(bw, detail)
	return bw.Flush()
}

// Glance writes the one screen a person reads first (what ran, SLO
// verdicts and goodput, throughput, latency p50/p95/p99, errors, warnings)
// and ends with more, the line that says where the detail is.
func Glance(w io.Writer, run *Run, more string) error {
	bw := bufio.NewWriter(redact.ControlWriter(w))
	if err := writeGlance(bw, run); err != nil {
		return err
	}
	if more != "" {
		bw.WriteString("\n")
		writeWrapped(bw, "", "", more)
	}
	return bw.Flush()
}

func writeGlance(bw *bufio.Writer, run *Run) error {
	t := title(run)
	bw.WriteString(t + "\n" + strings.Repeat("=", len([]rune(t))) + "\n")
	if run.Sweep != nil {
		// A sweep opens with its steps, knee and SLO-safe point; the summary
		// of one step follows, named.
		bw.WriteString("\n")
		if err := SweepText(bw, run.Sweep); err != nil {
			return err
		}
		if run.Step != "" {
			h := "Step " + run.Step
			bw.WriteString("\n" + h + "\n" + strings.Repeat("-", len([]rune(h))) + "\n")
		}
	}
	sections := glance(run)
	if run.Sweep != nil {
		sections[0].title = " " // keep the blank line after the step heading
	}
	writeSections(bw, sections)
	return nil
}

// writeSections lays sections out one after another, a blank line between.
func writeSections(bw *bufio.Writer, sections []section) {
	for i, s := range sections {
		if i > 0 || s.title != "" {
			bw.WriteString("\n")
		}
		if strings.TrimSpace(s.title) != "" {
			writeWrapped(bw, "", "", s.title) // a long title wraps as any line
		}
		writeKV(bw, s.kv)
		if s.table != nil {
			cells := s.table.cells()
			widths := make([]int, len(cells[0]))
			for i, c := range cells[0] {
				widths[i] = len([]rune(c)) // padded: every row's width
			}
			for g, cols := range columnGroups(widths, max(s.table.left, 1), false, 2, 2) {
				if g > 0 {
					bw.WriteString("\n")
				}
				for _, row := range cells {
					picked := make([]string, len(cols))
					for j, c := range cols {
						picked[j] = row[c]
					}
					bw.WriteString(strings.TrimRight("  "+strings.Join(picked, "  "), " ") + "\n")
				}
			}
		}
		for _, b := range s.bullets {
			writeWrapped(bw, "  - ", "    ", b)
		}
	}
}

func writeKV(bw *bufio.Writer, kv [][2]string) {
	width := 0
	for _, p := range kv {
		width = max(width, len([]rune(p[0])))
	}
	for _, p := range kv {
		key := "  " + p[0] + strings.Repeat(" ", width-len([]rune(p[0]))) + "  "
		writeWrapped(bw, key, strings.Repeat(" ", len([]rune(key))), p[1])
	}
}

// writeWrapped writes text after first, wrapping at textWidth with later
// lines indented by rest.
func writeWrapped(bw *bufio.Writer, first, rest, text string) {
	line, n := first, len([]rune(first))
	words := strings.Fields(text)
	for i, word := range words {
		wl := len([]rune(word))
		if i > 0 && n+1+wl > textWidth {
			bw.WriteString(line + "\n")
			line, n = rest+word, len([]rune(rest))+wl
			continue
		}
		if i > 0 {
			line += " "
			n++
		}
		line += word
		n += wl
	}
	bw.WriteString(line + "\n")
}

// Write prints a run's report as a command does: the summary JSON with
// asJSON, the full text with detail, else the one screen, ending with
// where the detail is (out: the --out folder, "" for none).
func Write(w io.Writer, run *Run, asJSON, detail bool, out string) error {
	switch {
	case asJSON:
		return JSON(w, run)
	case detail:
		return Text(w, run)
	}
	more := "detail (every statistic, server view, notes, configuration, definitions): --detail"
	if out != "" {
		more += ", or report.md in " + out
	} else {
		more += ", or --out DIR for Markdown and HTML reports"
	}
	return Glance(w, run, more)
}

// columnGroups splits a table's columns (their widths) into groups that
// each fit textWidth, laid out after indent with gap between columns, every
// group repeating the first keep columns (the row names) and, with
// keepLast, the last (a sweep's knee marks): a wide table reads as narrower
// ones, one under the other. One group when the table fits, or when the
// repeated columns leave no room.
func columnGroups(widths []int, keep int, keepLast bool, indent, gap int) [][]int {
	keep = min(keep, len(widths))
	width := func(cols []int) int {
		w := indent
		for j, c := range cols {
			if j > 0 {
				w += gap
			}
			w += widths[c]
		}
		return w
	}
	all := make([]int, len(widths))
	for i := range all {
		all[i] = i
	}
	kept, rest, tail := all[:keep], all[keep:], []int(nil)
	if keepLast && len(rest) > 0 {
		rest, tail = rest[:len(rest)-1], rest[len(rest)-1:]
	}
	if width(all) <= textWidth || len(rest) == 0 || width(append(slices.Clone(kept), tail...)) > textWidth*3/4 {
		return [][]int{all}
	}
	var groups [][]int
	cur := slices.Clone(kept)
	for _, c := range rest {
		if len(cur) > keep && width(append(append(slices.Clone(cur), c), tail...)) > textWidth {
			groups = append(groups, append(cur, tail...))
			cur = slices.Clone(kept)
		}
		cur = append(cur, c)
	}
	return append(groups, append(cur, tail...))
}
