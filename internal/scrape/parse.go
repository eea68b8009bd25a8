package scrape

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Limits bound what one scrape may cost.
type Limits struct {
	// MaxBodyBytes is how much of a response is read at most; a longer one
	// is reported and skipped (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxKeptBytes is how much of the known families' text is kept for the
	// parser (0: DefaultMaxKeptBytes). Unknown families are dropped as the
	// body streams by, so a large exposition full of other series costs
	// little memory.
	MaxKeptBytes int
}

// Defaults: vLLM's own /metrics is tens of kilobytes.
const (
	DefaultMaxBodyBytes = 64 << 20
	DefaultMaxKeptBytes = 4 << 20
	maxLineBytes        = 64 << 10 // a longer line is dropped as malformed
	maxParseRetries     = 16       // malformed lines dropped before a scrape is given up
)

// ErrTooLarge says a response or its known part went beyond the Limits.
var ErrTooLarge = errors.New("metrics response too large")

// Parsed is one exposition read into knee's metrics.
type Parsed struct {
	Server string // the table that matched (vllm, sglang, tgi, llamacpp, knee); "" when none did
	Sample Sample // TMS is left for the caller
	// Families counts the metric families the response exposed (known or
	// not), to say what an unknown server did expose.
	Families int
	// Malformed lists the lines the parser refused, each dropped so the
	// rest could be read.
	Malformed []string
}

// Parse reads one Prometheus text exposition within lim. Only families
// named in the server tables are kept and handed to expfmt's parser; a line
// it refuses is dropped and reported, and the rest parsed again.
func Parse(r io.Reader, lim Limits) (*Parsed, error) {
	mfs, families, malformed, err := readKnown(r, lim, knownBytes)
	if err != nil {
		return nil, err
	}
	p := &Parsed{Families: families, Malformed: malformed}
	p.Server, p.Sample = extract(mfs)
	return p, nil
}

// readKnown reads one exposition within lim, keeps the lines of the
// families known says it wants and parses them; families counts the
// families the body exposed, malformed the lines dropped.
func readKnown(r io.Reader, lim Limits, known func([]byte) bool) (map[string]*dto.MetricFamily, int, []string, error) {
	if lim.MaxBodyBytes <= 0 {
		lim.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if lim.MaxKeptBytes <= 0 {
		lim.MaxKeptBytes = DefaultMaxKeptBytes
	}
	lr := &io.LimitedReader{R: r, N: lim.MaxBodyBytes + 1}
	br := bufio.NewReaderSize(lr, maxLineBytes)
	var kept bytes.Buffer
	families := 0
	var malformed []string
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// Longer than any real exposition line: skip it whole.
			malformed = appendNote(malformed, fmt.Sprintf("a line longer than %d KiB (%.40q…) was skipped", maxLineBytes>>10, line[:40]))
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			line = nil
		}
		if len(line) > 0 {
			name, isType := lineName(line)
			if isType {
				families++
			}
			if len(name) > 0 && known(name) {
				if kept.Len()+len(line) > lim.MaxKeptBytes {
					return nil, 0, nil, fmt.Errorf("%w: more than %d MiB of known series", ErrTooLarge, lim.MaxKeptBytes>>20)
				}
				kept.Write(bytes.TrimRight(line, "\r\n"))
				kept.WriteByte('\n')
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, 0, nil, err
		}
	}
	if lr.N <= 0 {
		return nil, 0, nil, fmt.Errorf("%w: more than %d MiB", ErrTooLarge, lim.MaxBodyBytes>>20)
	}
	mfs, bad, err := parseKept(kept.Bytes())
	malformed = append(malformed, bad...)
	if err != nil {
		return nil, 0, nil, err
	}
	return mfs, families, malformed, nil
}

func appendNote(notes []string, s string) []string {
	if len(notes) < 20 {
		notes = append(notes, s)
	}
	return notes
}

// lineName is the metric name a line is about: the sample's name, or the
// name in a # TYPE / # HELP comment (isType for TYPE). Other comments and
// blank lines give "".
// It allocates nothing: it runs on every line of the body.
func lineName(line []byte) (name []byte, isType bool) {
	line = bytes.TrimLeft(line, " \t")
	if len(line) == 0 {
		return nil, false
	}
	if line[0] == '#' {
		rest := bytes.TrimLeft(line[1:], " \t")
		var word []byte
		switch {
		case bytes.HasPrefix(rest, []byte("TYPE")):
			word, isType = rest[4:], true
		case bytes.HasPrefix(rest, []byte("HELP")):
			word = rest[4:]
		default:
			return nil, false
		}
		word = bytes.TrimLeft(word, " \t")
		end := bytes.IndexAny(word, " \t\r\n")
		if end < 0 {
			end = len(word)
		}
		return word[:end], isType
	}
	end := bytes.IndexAny(line, "{ \t\r\n")
	if end < 0 {
		end = len(line)
	}
	return line[:end], false
}

// parseKept hands the kept lines to expfmt, dropping each line it refuses.
func parseKept(text []byte) (map[string]*dto.MetricFamily, []string, error) {
	var bad []string
	var lines [][]byte
	for try := 0; ; try++ {
		if lines != nil {
			text = append(bytes.Join(lines, []byte{'\n'}), '\n')
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(bytes.NewReader(text))
		if err == nil {
			return mfs, bad, nil
		}
		var pe expfmt.ParseError
		if lines == nil {
			lines = bytes.Split(bytes.TrimSuffix(text, []byte{'\n'}), []byte{'\n'})
		}
		if !errors.As(err, &pe) || pe.Line < 1 || pe.Line > len(lines) || try >= maxParseRetries {
			return nil, bad, fmt.Errorf("unreadable exposition: %w", err)
		}
		bad = appendNote(bad, fmt.Sprintf("%s: %.60q", pe.Msg, lines[pe.Line-1]))
		lines = append(lines[:pe.Line-1:pe.Line-1], lines[pe.Line:]...)
	}
}

// extract picks the server table that matches best and reads its metrics,
// summing series over their labels (engines, finish reasons) except the
// 0..1 ratios, which are averaged.
func extract(mfs map[string]*dto.MetricFamily) (string, Sample) {
	best, bestN := -1, 0
	for i, t := range tables {
		n := 0
		for _, e := range t.entries {
			if findFamily(mfs, e) != nil {
				n++
			}
		}
		// knee serve is vLLM plus one family of its own: it wins only
		// when that family is there.
		if t.server == "knee" && findFamily(mfs, t.entries[0]) == nil {
			continue
		}
		if n > bestN {
			best, bestN = i, n
		}
	}
	s := Sample{}
	if best < 0 {
		return "", s
	}
	t := tables[best]
	for _, e := range t.entries {
		mf := findFamily(mfs, e)
		if mf == nil {
			continue
		}
		switch e.kind {
		case gauge, counter:
			v, n := 0.0, 0
			for _, m := range mf.GetMetric() {
				if x, ok := scalar(m); ok {
					v += x
					n++
				}
			}
			if n == 0 {
				continue
			}
			if e.kind == gauge && (e.metric == KVUsage || e.metric == PrefixHitRate) {
				v /= float64(n)
			}
			if s.Values == nil {
				s.Values = map[Metric]float64{}
			}
			s.Values[e.metric] = v
		case sumOf:
			if h := mergeHist(mf); h != nil {
				if s.Values == nil {
					s.Values = map[Metric]float64{}
				}
				s.Values[e.metric] = h.Sum
			}
		case histogram:
			if h := mergeHist(mf); h != nil {
				if s.Hists == nil {
					s.Hists = map[Metric]*Hist{}
				}
				s.Hists[e.metric] = h
			}
		}
	}
	return t.server, s
}

// findFamily is the first of e's names present, trying counters with and
// without _total.
func findFamily(mfs map[string]*dto.MetricFamily, e entry) *dto.MetricFamily {
	for _, n := range e.names {
		cands := []string{n}
		if e.kind == counter {
			if b, ok := cutTotal(n); ok {
				cands = append(cands, b)
			} else {
				cands = append(cands, n+"_total")
			}
		}
		for _, c := range cands {
			if mf := mfs[c]; mf != nil && len(mf.GetMetric()) > 0 {
				return mf
			}
		}
	}
	return nil
}

func cutTotal(n string) (string, bool) {
	if len(n) > 6 && n[len(n)-6:] == "_total" {
		return n[:len(n)-6], true
	}
	return n, false
}

func scalar(m *dto.Metric) (float64, bool) {
	var v float64
	switch {
	case m.Gauge != nil:
		v = m.Gauge.GetValue()
	case m.Counter != nil:
		v = m.Counter.GetValue()
	case m.Untyped != nil:
		v = m.Untyped.GetValue()
	default:
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// mergeHist sums a histogram (or summary) family's series; series whose
// bucket bounds differ from the first are left out.
func mergeHist(mf *dto.MetricFamily) *Hist {
	var out *Hist
	for _, m := range mf.GetMetric() {
		var h Hist
		switch {
		case m.Histogram != nil:
			for _, b := range m.Histogram.GetBucket() {
				if math.IsInf(b.GetUpperBound(), 1) {
					continue
				}
				h.LE = append(h.LE, b.GetUpperBound())
				h.Cum = append(h.Cum, float64(b.GetCumulativeCount()))
			}
			h.Count, h.Sum = float64(m.Histogram.GetSampleCount()), m.Histogram.GetSampleSum()
			if h.Count == 0 && m.Histogram.SampleCountFloat != nil {
				h.Count = m.Histogram.GetSampleCountFloat()
			}
		case m.Summary != nil:
			h.Count, h.Sum = float64(m.Summary.GetSampleCount()), m.Summary.GetSampleSum()
		default:
			continue
		}
		if math.IsNaN(h.Sum) || math.IsInf(h.Sum, 0) {
			continue
		}
		sortBuckets(&h)
		if out == nil {
			c := h
			out = &c
			continue
		}
		if !sameBounds(out.LE, h.LE) {
			continue
		}
		for i := range out.Cum {
			out.Cum[i] += h.Cum[i]
		}
		out.Count += h.Count
		out.Sum += h.Sum
	}
	return out
}

func sortBuckets(h *Hist) {
	idx := make([]int, len(h.LE))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return h.LE[idx[a]] < h.LE[idx[b]] })
	le, cum := make([]float64, len(idx)), make([]float64, len(idx))
	for i, j := range idx {
		le[i], cum[i] = h.LE[j], h.Cum[j]
	}
	h.LE, h.Cum = le, cum
}

func sameBounds(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
