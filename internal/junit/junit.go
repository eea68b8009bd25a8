// Package junit writes knee's verdicts — SLOs of a run, SLOs of each sweep
// step, metrics of a comparison — as JUnit XML, the test-report format that
// Jenkins, GitLab and GitHub test reporters read.
//
// Reading order: Suite, Case and Write (this file: the XML shape, counts
// derived from the cases so they can never disagree), then the builders in
// verdict.go that turn knee's results into cases.
//
// Outcomes: a verdict that was judged and not met is a failure; a verdict
// that could not be judged (no data: nothing completed, or a metric without
// values) is an error, so a CI gate never passes silently; a sweep step above
// the SLO-safe point that misses is skipped with its values, because finding
// where the SLOs break is what a sweep is for.
package junit

import (
	"encoding/xml"
	"fmt"
	"io"
	"time"
)

// Suite is one testsuite: a run, a sweep step, or a comparison.
type Suite struct {
	Name       string
	Timestamp  time.Time // when the run started (zero: left out)
	Duration   time.Duration
	Properties [][2]string // run id, configuration: name, value
	Cases      []Case
}

// Case is one verdict.
type Case struct {
	Name      string // e.g. "p95(ttft)<2s"
	Classname string // e.g. "knee.bench" or "knee.sweep.concurrency=16"
	Failure   *Problem
	Error     *Problem
	Skipped   *Problem
	SystemOut string // what was measured, for cases that passed too
}

// Problem is a failure, an error or a skip: a one-line message, a type and
// a longer text.
type Problem struct {
	Message string
	Type    string
	Text    string
}

type xmlSuites struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Name     string     `xml:"name,attr"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Errors   int        `xml:"errors,attr"`
	Skipped  int        `xml:"skipped,attr"`
	Time     string     `xml:"time,attr"`
	Suites   []xmlSuite `xml:"testsuite"`
}

type xmlSuite struct {
	Name       string    `xml:"name,attr"`
	Tests      int       `xml:"tests,attr"`
	Failures   int       `xml:"failures,attr"`
	Errors     int       `xml:"errors,attr"`
	Skipped    int       `xml:"skipped,attr"`
	Time       string    `xml:"time,attr"`
	Timestamp  string    `xml:"timestamp,attr,omitempty"`
	Properties *xmlProps `xml:"properties,omitempty"`
	Cases      []xmlCase `xml:"testcase"`
}

type xmlProps struct {
	Props []xmlProp `xml:"property"`
}

type xmlProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type xmlCase struct {
	Name      string      `xml:"name,attr"`
	Classname string      `xml:"classname,attr"`
	Time      string      `xml:"time,attr"`
	Failure   *xmlProblem `xml:"failure,omitempty"`
	Error     *xmlProblem `xml:"error,omitempty"`
	Skipped   *xmlProblem `xml:"skipped,omitempty"`
	SystemOut string      `xml:"system-out,omitempty"`
}

type xmlProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func problem(p *Problem) *xmlProblem {
	if p == nil {
		return nil
	}
	return &xmlProblem{Message: p.Message, Type: p.Type, Text: p.Text}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// Counts are a report's totals.
type Counts struct{ Tests, Failures, Errors, Skipped int }

// Count totals the cases of suites.
func Count(suites []Suite) Counts {
	var c Counts
	for _, s := range suites {
		for _, k := range s.Cases {
			c.Tests++
			switch {
			case k.Error != nil:
				c.Errors++
			case k.Failure != nil:
				c.Failures++
			case k.Skipped != nil:
				c.Skipped++
			}
		}
	}
	return c
}

// Write writes suites as one <testsuites> document named name.
func Write(w io.Writer, name string, suites []Suite) error {
	doc := xmlSuites{Name: name}
	var total time.Duration
	for _, s := range suites {
		xs := xmlSuite{Name: s.Name, Time: seconds(s.Duration)}
		if !s.Timestamp.IsZero() {
			xs.Timestamp = s.Timestamp.UTC().Format("2006-01-02T15:04:05")
		}
		if len(s.Properties) > 0 {
			xs.Properties = &xmlProps{}
			for _, p := range s.Properties {
				xs.Properties.Props = append(xs.Properties.Props, xmlProp{Name: p[0], Value: p[1]})
			}
		}
		c := Count([]Suite{s})
		xs.Tests, xs.Failures, xs.Errors, xs.Skipped = c.Tests, c.Failures, c.Errors, c.Skipped
		for _, k := range s.Cases {
			xc := xmlCase{Name: k.Name, Classname: k.Classname, Time: "0.000", SystemOut: k.SystemOut}
			// One outcome per case: an error outranks a failure, which outranks a skip.
			switch {
			case k.Error != nil:
				xc.Error = problem(k.Error)
			case k.Failure != nil:
				xc.Failure = problem(k.Failure)
			case k.Skipped != nil:
				xc.Skipped = problem(k.Skipped)
			}
			xs.Cases = append(xs.Cases, xc)
		}
		doc.Tests += c.Tests
		doc.Failures += c.Failures
		doc.Errors += c.Errors
		doc.Skipped += c.Skipped
		total += s.Duration
		doc.Suites = append(doc.Suites, xs)
	}
	doc.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
