// Package slo parses service-level objectives such as p95(ttft)<2s and
// error_rate<1%, evaluates them against a run's summary, and decides per
// request whether it met them (for goodput).
//
// Reading order: Objective and Parse (this file, with the grammar), then
// Evaluate and Good (eval.go).
//
// Grammar (whitespace allowed between tokens, names case-insensitive):
//
//	latency:    STAT "(" METRIC ")" ("<" | "<=") NUMBER UNIT
//	            STAT   = mean | p50 | p90 | p95 | p99 | p999 (or p99.9) | max
//	            METRIC = ttft | ttft_sched | itl | tpot | e2e | lag
//	            UNIT   = ns | us | µs | ms | s | m
//	rate:       (error_rate | rejection_rate) ("<" | "<=") NUMBER ["%"]
//	            without "%" the number is a fraction 0..1
//	throughput: (goodput | request_throughput) (">" | ">=") NUMBER ["rps" | "req/s"]
//	            output_throughput (">" | ">=") NUMBER ["tps" | "tok/s"]
package slo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind says what an objective constrains.
type Kind int

const (
	Latency    Kind = iota // a statistic of a latency distribution: an upper bound
	Rate                   // error_rate, rejection_rate (fractions): an upper bound
	Throughput             // goodput, request_throughput, output_throughput: a lower bound
)

// Metrics, statistics and units the grammar accepts, in the order error
// messages list them.
var (
	LatencyMetrics    = []string{"ttft", "ttft_sched", "itl", "tpot", "e2e", "lag"}
	RateMetrics       = []string{"error_rate", "rejection_rate"}
	ThroughputMetrics = []string{"goodput", "request_throughput", "output_throughput"}
	Stats             = []string{"mean", "p50", "p90", "p95", "p99", "p999", "max"}
	units             = []struct {
		name string
		d    time.Duration
	}{{"ns", time.Nanosecond}, {"us", time.Microsecond}, {"µs", time.Microsecond}, {"μs", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}}
)

// Objective is one parsed objective.
type Objective struct {
	Kind   Kind
	Stat   string // latency only: mean, p50, …, p999, max
	Metric string // ttft, …, error_rate, goodput, …
	Op     string // <, <=, >, >=
	// Threshold in the summary's units: milliseconds for latency, a
	// fraction 0..1 for rates, per second for throughput.
	Threshold float64
	// Unit is the unit as written (normalised: "us" for µs), used to show
	// values the way the user wrote the objective; "%" or "" for rates.
	Unit string
	num  string // the number as written, for String
}

// String is the objective in canonical form; Parse(o.String()) gives o back.
func (o Objective) String() string {
	switch o.Kind {
	case Latency:
		return fmt.Sprintf("%s(%s)%s%s%s", o.Stat, o.Metric, o.Op, o.num, o.Unit)
	default:
		return o.Metric + o.Op + o.num + o.Unit
	}
}

// ParseError says what was wrong with an objective and where.
type ParseError struct {
	Expr   string
	Column int    // 1-based, in characters; 0 when the whole expression is at fault
	Msg    string // what was found
	Want   string // what was expected
}

func (e *ParseError) Error() string {
	s := e.Expr + ": " + e.Msg
	if e.Column > 0 {
		s += fmt.Sprintf(" at column %d", e.Column)
	}
	if e.Want != "" {
		s += "; want " + e.Want
	}
	return s
}

// Set is a list of objectives; a request or run meets the set when it meets
// every objective.
type Set []Objective

// ParseAll parses every expression; one flag value may hold several
// separated by commas. An empty list gives an empty set.
func ParseAll(exprs []string) (Set, error) {
	var s Set
	for _, e := range exprs {
		for _, part := range strings.Split(e, ",") {
			if strings.TrimSpace(part) == "" && strings.Contains(e, ",") {
				continue
			}
			o, err := Parse(part)
			if err != nil {
				return nil, err
			}
			s = append(s, o)
		}
	}
	return s, nil
}

// lexer walks the expression by runes, tracking the column.
type lexer struct {
	expr string
	pos  int // byte offset
}

func (l *lexer) col() int { return utf8.RuneCountInString(l.expr[:l.pos]) + 1 }

func (l *lexer) skipSpace() {
	for l.pos < len(l.expr) {
		r, n := utf8.DecodeRuneInString(l.expr[l.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		l.pos += n
	}
}

func (l *lexer) errf(col int, want, format string, args ...any) *ParseError {
	return &ParseError{Expr: strings.TrimSpace(l.expr), Column: col, Msg: fmt.Sprintf(format, args...), Want: want}
}

// word reads [A-Za-z0-9_.] (a name, or p99.9).
func (l *lexer) word() string {
	start := l.pos
	for l.pos < len(l.expr) {
		c := l.expr[l.pos]
		if c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			l.pos++
			continue
		}
		break
	}
	return l.expr[start:l.pos]
}

// found describes the text at the cursor for an error message.
func (l *lexer) found() string {
	if l.pos >= len(l.expr) {
		return "end of expression"
	}
	r, _ := utf8.DecodeRuneInString(l.expr[l.pos:])
	return strconv.QuoteRune(r)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func oneOf(list []string) string { return "one of " + strings.Join(list, ", ") }

// Forms lists every kind of objective with an example, for help texts and
// for errors that do not know which kind was meant.
var Forms = "a latency objective STAT(METRIC)<N UNIT such as p95(ttft)<2s (STAT: " + strings.Join(Stats, ", ") +
	"; METRIC: " + strings.Join(LatencyMetrics, ", ") + "; UNIT: ms, s, ...), an error objective error_rate<1% or rejection_rate<1%, " +
	"or a throughput objective goodput>5rps, request_throughput>5rps or output_throughput>500tok/s"

// example is an objective on a rate or throughput metric, for hints.
func example(metric string) string {
	switch metric {
	case "error_rate", "rejection_rate":
		return metric + "<1%"
	case "output_throughput":
		return metric + ">500tok/s"
	}
	return metric + ">5rps"
}

// Parse parses one objective.
func Parse(expr string) (Objective, error) {
	l := &lexer{expr: expr}
	var o Objective
	l.skipSpace()
	if l.pos >= len(expr) {
		return o, &ParseError{Expr: expr, Msg: "empty objective", Want: Forms}
	}
	nameCol := l.col()
	name := strings.ToLower(l.word())
	l.skipSpace()
	switch {
	case l.pos < len(expr) && expr[l.pos] == '(':
		if name == "p99.9" {
			name = "p999"
		}
		if !contains(Stats, name) {
			if name == "" {
				return o, l.errf(nameCol, oneOf(Stats), "missing statistic before \"(\"")
			}
			return o, l.errf(nameCol, oneOf(Stats), "unknown statistic %q", name)
		}
		o.Kind, o.Stat = Latency, name
		l.pos++
		l.skipSpace()
		mcol := l.col()
		m := strings.ToLower(l.word())
		if !contains(LatencyMetrics, m) {
			if m == "" {
				return o, l.errf(mcol, oneOf(LatencyMetrics), "found %s instead of a metric", l.found())
			}
			if contains(RateMetrics, m) || contains(ThroughputMetrics, m) {
				return o, l.errf(mcol, "it without a statistic, as in "+example(m), "%s is a property of the run, not a latency", m)
			}
			return o, l.errf(mcol, oneOf(LatencyMetrics)+" (or, without a statistic: error_rate, rejection_rate, goodput, request_throughput, output_throughput)", "unknown metric %q", m)
		}
		o.Metric = m
		l.skipSpace()
		if l.pos >= len(expr) || expr[l.pos] != ')' {
			return o, l.errf(l.col(), `")"`, "found %s", l.found())
		}
		l.pos++
	case contains(RateMetrics, name):
		o.Kind, o.Metric = Rate, name
	case contains(ThroughputMetrics, name):
		o.Kind, o.Metric = Throughput, name
	case contains(Stats, name) || name == "p99.9":
		return o, l.errf(l.col(), `"(" and a metric, as in `+name+"(ttft)", "found %s after %q", l.found(), name)
	case contains(LatencyMetrics, name):
		return o, l.errf(nameCol, "a statistic around the metric, as in p95("+name+")", "latency metric %q without a statistic", name)
	case name == "":
		return o, l.errf(nameCol, Forms, "found %s", l.found())
	default:
		return o, l.errf(nameCol, Forms, "unknown metric %q", name)
	}

	l.skipSpace()
	opCol := l.col()
	switch {
	case strings.HasPrefix(expr[l.pos:], "<="), strings.HasPrefix(expr[l.pos:], ">="):
		o.Op = expr[l.pos : l.pos+2]
		l.pos += 2
	case strings.HasPrefix(expr[l.pos:], "<"), strings.HasPrefix(expr[l.pos:], ">"):
		o.Op = expr[l.pos : l.pos+1]
		l.pos++
	default:
		return o, l.errf(opCol, "a comparison: <, <=, > or >=", "found %s", l.found())
	}
	upper := o.Op[0] == '<'
	if o.Kind == Throughput && upper {
		return o, l.errf(opCol, "> or >= (a throughput objective is a lower bound)", "%q is an upper bound", o.Op)
	}
	if o.Kind != Throughput && !upper {
		return o, l.errf(opCol, "< or <= (a latency or error objective is an upper bound)", "%q is a lower bound", o.Op)
	}

	l.skipSpace()
	numCol := l.col()
	start := l.pos
	digits := 0
	for l.pos < len(expr) && (expr[l.pos] >= '0' && expr[l.pos] <= '9' || expr[l.pos] == '.') {
		if expr[l.pos] != '.' {
			digits++
		}
		l.pos++
	}
	o.num = expr[start:l.pos]
	v, err := strconv.ParseFloat(o.num, 64)
	if digits == 0 || err != nil || math.IsInf(v, 0) {
		l.pos = start
		return o, l.errf(numCol, "a non-negative number such as 2 or 0.5", "found %s", l.found())
	}
	l.skipSpace()
	ucol := l.col()
	unit := strings.TrimSpace(expr[l.pos:])
	l.pos = len(expr)
	switch o.Kind {
	case Latency:
		var d time.Duration
		for _, u := range units {
			if unit == u.name {
				d, o.Unit = u.d, u.name
			}
		}
		if o.Unit == "µs" || o.Unit == "μs" {
			o.Unit = "us"
		}
		if d == 0 {
			want := "a unit: ns, us, µs, ms, s or m"
			if unit == "" {
				return o, l.errf(ucol, want, "missing unit after %s", o.num)
			}
			return o, l.errf(ucol, want, "unknown unit %q", unit)
		}
		o.Threshold = v * float64(d) / float64(time.Millisecond)
	case Rate:
		switch unit {
		case "%":
			o.Unit = "%"
			if v > 100 {
				return o, l.errf(numCol, "a percentage from 0% to 100%", "%s%% is more than 100%%", o.num)
			}
			o.Threshold = v / 100
		case "":
			if v > 1 {
				return o, l.errf(numCol, "a fraction from 0 to 1, or a percentage such as "+o.num+"%", "%s is more than 1", o.num)
			}
			o.Threshold = v
		default:
			return o, l.errf(ucol, `"%" or nothing (a fraction)`, "unknown unit %q", unit)
		}
	case Throughput:
		want := `"rps", "req/s" or nothing`
		ok := unit == "" || unit == "rps" || unit == "req/s"
		if o.Metric == "output_throughput" {
			want = `"tps", "tok/s" or nothing`
			ok = unit == "" || unit == "tps" || unit == "tok/s"
		}
		if !ok {
			return o, l.errf(ucol, want, "unknown unit %q", unit)
		}
		o.Unit, o.Threshold = unit, v
	}
	return o, nil
}
