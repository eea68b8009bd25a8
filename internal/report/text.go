package report

import (
	"bufio"
	"io"
	"strings"
)

// textWidth is where long values (definitions, notes) wrap.
const textWidth = 100

// Text writes the report a terminal user sees after knee bench: the run,
// throughput, latency tables, errors, SLO verdicts, notes, and the
// definitions of every metric shown.
func Text(w io.Writer, run *Run) error {
	bw := bufio.NewWriter(w)
	t := title(run)
	bw.WriteString(t + "\n" + strings.Repeat("=", len([]rune(t))) + "\n")
	if run.Sweep != nil {
		// A sweep opens with its steps, knee and SLO-safe point; the full
		// summary of one step follows, named.
		bw.WriteString("\n")
		if err := SweepText(bw, run.Sweep); err != nil {
			return err
		}
		if run.Step != "" {
			h := "Step " + run.Step
			bw.WriteString("\n" + h + "\n" + strings.Repeat("-", len([]rune(h))) + "\n")
		}
	}
	for i, s := range build(run) {
		if i > 0 || s.title != "" || run.Sweep != nil {
			bw.WriteString("\n")
		}
		if s.title != "" {
			bw.WriteString(s.title + "\n")
		}
		writeKV(bw, s.kv)
		if s.table != nil {
			for _, row := range s.table.cells() {
				bw.WriteString(strings.TrimRight("  "+strings.Join(row, "  "), " ") + "\n")
			}
		}
		for _, b := range s.bullets {
			writeWrapped(bw, "  - ", "    ", b)
		}
	}
	return bw.Flush()
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
