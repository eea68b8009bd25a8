package browsertest

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// drawnGuided is what a runs page drew of a guided sweep, read from the
// SVG's and the table's attributes.
type drawnGuided struct {
	After                    string
	BandX, BandLow, BandHigh string // the throughput band's path
	TTFTX, TTFTLow, TTFTHigh string // the TTFT band's path
	Rows                     []map[string]string
	Measured                 []map[string]string // throughput chart's filled dots
	Predicted                []map[string]string // throughput chart's range bars
	Widths                   []string
}

func readGuided(holder string) string {
	return `(() => { const q = s => document.querySelector('` + holder + ` ' + s), all = s => [...document.querySelectorAll('` + holder + ` ' + s)];
	  const band = q('#guided-throughput .guided-band'), ttft = q('#guided-ttft .guided-band'), a = (el, k) => el ? el.getAttribute(k) : '';
	  const attrs = el => Object.fromEntries([...el.attributes].filter(x => x.name.startsWith('data-')).map(x => [x.name.slice(5), x.value]));
	  return {After: q('#guided').dataset.after, BandX: a(band, 'data-x'), BandLow: a(band, 'data-low'), BandHigh: a(band, 'data-high'),
	    TTFTX: a(ttft, 'data-x'), TTFTLow: a(ttft, 'data-low'), TTFTHigh: a(ttft, 'data-high'),
	    Rows: all('#guided-band-table tbody tr').map(r => ({...r.dataset})),
	    Measured: all('#guided-throughput .guided-measured').map(attrs), Predicted: all('#guided-throughput .guided-prediction').map(attrs),
	    Widths: all('#guided-widths li').map(li => li.dataset.width)}; })()`
}

func nums(t *testing.T, csv string) []float64 {
	t.Helper()
	var out []float64
	for _, f := range strings.Split(csv, ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("a drawn figure %q of %q is no number", f, csv)
		}
		out = append(out, v)
	}
	return out
}

func figure(t *testing.T, s string) float64 {
	t.Helper()
	return nums(t, s)[0]
}

// The UI's runs pages draw a guided sweep's model as the HTML report does
// (issue 42): a short guided sweep against the embedded server is stored,
// and both the stored run's page and its live view shade the latest
// refit's curve as a band whose figures are the stored curve's, exactly;
// the filled dots are the measured steps (one per step, at the measured
// throughput) and the range bars the predictions made before the steps,
// at their stored ranges; each refit's band width is listed as stored.
func TestGuidedBandInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "knee.db")
	sw := knee(t, "sweep", "--guided", "--db", db, "--max", "24", "--slo", "p95(ttft)<120ms", "--requests", "24",
		"--input-tokens", "2048", "--output-tokens", "4", "--seed", "1", "--quiet")
	if err := sw.Run(); err != nil {
		t.Fatalf("knee sweep --guided: %v", err)
	}
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.SweepResult(1)
	st.Close()
	if err != nil || res == nil {
		t.Fatalf("the stored sweep: %v, %v", res, err)
	}
	var steps []*sweep.GuidedStep
	for _, s := range res.Steps {
		if s.Guided != nil {
			steps = append(steps, s.Guided)
		}
	}
	slices.SortFunc(steps, func(a, b *sweep.GuidedStep) int { return a.Order - b.Order })
	var last *sweep.GuidedStep
	refits := 0
	for _, s := range steps {
		if s.Curve != nil {
			last = s
			refits++
		}
	}
	if len(steps) < 3 || last == nil || refits < 2 {
		t.Fatalf("the guided sweep stored %d guided steps, %d refitted curves: want at least 3 steps and 2 curves to draw a narrowing band", len(steps), refits)
	}

	base := startUI(t, db)
	b := newBrowser(t, exe, dir)
	check := func(where, holder string) {
		t.Helper()
		g := eval[drawnGuided](b, readGuided(holder))
		if g.After != strconv.Itoa(last.Order) {
			t.Errorf("%s: the band is the refit after step %s, want the latest, %d", where, g.After, last.Order)
		}
		x, lo, hi := nums(t, g.BandX), nums(t, g.BandLow), nums(t, g.BandHigh)
		fx, flo, fhi := nums(t, g.TTFTX), nums(t, g.TTFTLow), nums(t, g.TTFTHigh)
		if len(x) != len(last.Curve) || len(g.Rows) != len(last.Curve) {
			t.Fatalf("%s: the band has %d points and its table %d rows, the stored curve %d", where, len(x), len(g.Rows), len(last.Curve))
		}
		fi := 0
		for i, c := range last.Curve {
			if x[i] != c.Load || lo[i] != c.Throughput.Low || hi[i] != c.Throughput.High {
				t.Errorf("%s: band point %d drawn at %v from %v to %v, stored %v from %v to %v", where, i, x[i], lo[i], hi[i], c.Load, c.Throughput.Low, c.Throughput.High)
			}
			r := g.Rows[i]
			if figure(t, r["load"]) != c.Load || figure(t, r["tv"]) != c.Throughput.Value || figure(t, r["fl"]) != c.TTFTP95.Low || figure(t, r["fh"]) != c.TTFTP95.High {
				t.Errorf("%s: table row %d %v, stored %+v", where, i, r, c)
			}
			if c.TTFTP95.Value > 0 { // the TTFT band leaves out loads the model drew none for
				if fi >= len(fx) || fx[fi] != c.Load || flo[fi] != c.TTFTP95.Low || fhi[fi] != c.TTFTP95.High {
					t.Errorf("%s: TTFT band point %d does not match the stored %+v", where, fi, c.TTFTP95)
				}
				fi++
			}
		}
		// Every filled dot is a measured step, at its measured figure;
		// every bar is a prediction made before a step, at its range.
		if len(g.Measured) != len(steps) {
			t.Errorf("%s: %d measured dots for %d measured steps", where, len(g.Measured), len(steps))
		}
		for _, m := range g.Measured {
			o, _ := strconv.Atoi(m["order"])
			if o < 1 || o > len(steps) || figure(t, m["y"]) != steps[o-1].Measured.Throughput || figure(t, m["x"]) != steps[o-1].Load.Value {
				t.Errorf("%s: a measured dot %v is no measured step's figure", where, m)
			}
		}
		predicted := 0
		for _, s := range steps {
			if s.Predicted != nil {
				predicted++
			}
		}
		if len(g.Predicted) != predicted || predicted == 0 {
			t.Errorf("%s: %d prediction bars for %d steps with a prediction", where, len(g.Predicted), predicted)
		}
		for _, p := range g.Predicted {
			o, _ := strconv.Atoi(p["order"])
			if o < 1 || o > len(steps) || steps[o-1].Predicted == nil {
				t.Errorf("%s: a prediction bar %v names no predicted step", where, p)
				continue
			}
			f := steps[o-1].Predicted.Throughput
			if figure(t, p["low"]) != f.Low || figure(t, p["high"]) != f.High || figure(t, p["value"]) != f.Value {
				t.Errorf("%s: step %d's bar %v, stored prediction %+v", where, o, p, f)
			}
		}
		// The widths listed are the stored curves' (whether the refit
		// narrows the band is the model's to decide, not the page's).
		if len(g.Widths) != refits {
			t.Errorf("%s: %d band widths listed for %d refits", where, len(g.Widths), refits)
		} else {
			i := 0
			for _, s := range steps {
				if s.Curve == nil {
					continue
				}
				want := 0.0
				for _, c := range s.Curve {
					want += (c.Throughput.High - c.Throughput.Low) / c.Throughput.Value / float64(len(s.Curve))
				}
				if got := figure(t, g.Widths[i]); math.Abs(got-want) > 1e-9*want {
					t.Errorf("%s: the band after step %d is listed %v wide, the stored curve %v", where, s.Order, got, want)
				}
				i++
			}
		}
		t.Logf("%s: band after step %s over %d loads, %d measured dots, %d prediction bars, widths %v", where, g.After, len(x), len(g.Measured), len(g.Predicted), g.Widths)
	}

	b.do(chromedp.Navigate(base + "/#runs/report/1"))
	b.waitFor(`document.getElementById('guided-holder')?.dataset.ready === '1'`)
	check("the run's page", "#guided-holder")
	b.shotOf("#guided", "runs-guided-band")

	b.do(chromedp.Navigate(base + "/#runs/live/1"))
	b.waitFor(`document.getElementById('live-state')?.dataset.finished === '1' && !!document.querySelector('#live-guided #guided')`)
	check("the live view", "#live-guided")
	b.checkClean()
}
