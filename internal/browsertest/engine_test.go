package browsertest

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestEngineViewInBrowser: the Simulator's batch gauge and its followed
// request, read as drawn (element boxes) against the figures printed
// beside them (issue 44, Build: draw the batch, follow one request).
func TestEngineViewInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := startUI(t, filepath.Join(dir, "knee.db"))
	b := newBrowser(t, exe, dir)
	b.do(chromedp.EmulateViewport(1400, 1000))
	b.do(chromedp.Navigate(base + "/#sim"))
	b.waitFor(`Number(document.getElementById('sim-engine')?.dataset.ready) > 0`)
	checkEngineView(t, b, "16", false)
	checkEngineView(t, b, "512", true)
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('sim-engine').scrollIntoView()`))
	b.shot("simulator-engine")

	// The plain verdict under the curves is the curves' own figures: from
	// the knee to the last load, throughput's growth and p95 TTFT's factor.
	b.waitFor(`!!document.getElementById('knee-verdict') && document.getElementById('curve-throughput').dataset.knee !== ''`)
	v := eval[map[string]string](b, `(() => { const t = document.getElementById('curve-throughput').dataset, l = document.getElementById('curve-ttft').dataset;
	  return {text: document.getElementById('knee-verdict').textContent, knee: t.knee, loads: t.loads, rps: t.rps, ttft: l.ttft,
	    detail: document.getElementById('knee-detail').textContent, open: String(document.getElementById('knee-detail').open)}; })()`)
	m := regexp.MustCompile(`^Knee at (\d+) users: beyond it, up to (\d+), throughput (grows|falls) (\d+)% while p95 TTFT grows ×([0-9.]+)`).FindStringSubmatch(v["text"])
	if m == nil {
		t.Fatalf("the plain verdict does not read as one: %q", v["text"])
	}
	loads, rps, ttft := strings.Split(v["loads"], ","), strings.Split(v["rps"], ","), strings.Split(v["ttft"], ",")
	ki, li := slices.Index(loads, m[1]), len(loads)-1
	if m[1] != v["knee"] || ki < 0 || m[2] != loads[li] {
		t.Errorf("the verdict names the knee %s and the last load %s; the curve's are %s and %s", m[1], m[2], v["knee"], loads[li])
	} else {
		f := func(s []string, i int) float64 { x, _ := strconv.ParseFloat(s[i], 64); return x }
		grow, slow := f(rps, li)/f(rps, ki)-1, f(ttft, li)/f(ttft, ki)
		said, _ := strconv.ParseFloat(m[4], 64)
		if m[3] == "falls" {
			said = -said
		}
		saidSlow, _ := strconv.ParseFloat(m[5], 64)
		t.Logf("verdict %q; the curves: throughput %+.1f%%, p95 TTFT ×%.1f", v["text"], 100*grow, slow)
		if math.Abs(said-100*grow) > 0.51 || math.Abs(saidSlow-slow) > 0.051*slow {
			t.Errorf("the verdict says %s%% and ×%s; the curves say %+.1f%% and ×%.2f", m[4], m[5], 100*grow, slow)
		}
	}
	if v["open"] != "false" || !strings.Contains(v["detail"], "Kneedle") {
		t.Errorf("Kneedle's detail is not behind a closed disclosure: open %s, %q", v["open"], v["detail"])
	}

	// The throughput-against-TTFT curve: a point a swept load, drawn where
	// its figures put it on the axes, the knee and the objective marked.
	tr := eval[map[string]any](b, `(() => { const el = document.getElementById('curve-tradeoff'), sc = JSON.parse(el.dataset.scale), t = document.getElementById('curve-throughput').dataset;
	  const pts = [...el.querySelectorAll('circle.t-point')].map(c => ({x: Number(c.dataset.x), y: Number(c.dataset.y), label: c.dataset.label, cx: Number(c.getAttribute('cx')), cy: Number(c.getAttribute('cy')), knee: c.classList.contains('t-knee')}));
	  const o = el.querySelector('line.t-objective');
	  return {sc, pts, loads: t.loads, rps: t.rps, ttft: document.getElementById('curve-ttft').dataset.ttft, knee: t.knee, objY: o ? Number(o.getAttribute('y1')) : -1, obj: o ? Number(o.dataset.y) : -1}; })()`)
	sc := tr["sc"].(map[string]any)
	at := func(k string) float64 { return num(sc[k]) }
	pts := tr["pts"].([]any)
	loads, rpsList, ttftList := strings.Split(fmt.Sprint(tr["loads"]), ","), strings.Split(fmt.Sprint(tr["rps"]), ","), strings.Split(fmt.Sprint(tr["ttft"]), ",")
	if len(pts) != len(loads) {
		t.Fatalf("the tradeoff curve has %d points for %d swept loads", len(pts), len(loads))
	}
	yPos := func(v float64) float64 {
		return at("T") + at("H")*(1-(math.Log10(v)-at("y0"))/(at("y1")-at("y0")))
	}
	for i, p := range pts {
		q := p.(map[string]any)
		x, y := num(q["x"]), num(q["y"])
		wantX, _ := strconv.ParseFloat(rpsList[i], 64)
		wantY, _ := strconv.ParseFloat(ttftList[i], 64)
		if q["label"] != loads[i] || math.Abs(x-wantX) > 0.006 || y != wantY {
			t.Errorf("tradeoff point %d: load %v at (%v, %v); the curves say load %s at (%v, %v)", i, q["label"], x, y, loads[i], wantX, wantY)
		}
		if cx := at("L") + at("W")*x/at("x1"); math.Abs(num(q["cx"])-cx) > 0.5 || math.Abs(num(q["cy"])-yPos(y)) > 0.5 {
			t.Errorf("tradeoff point %s drawn at (%.1f, %.1f), its figures put it at (%.1f, %.1f)", loads[i], num(q["cx"]), num(q["cy"]), cx, yPos(y))
		}
		if q["knee"] == true && q["label"] != tr["knee"] {
			t.Errorf("the tradeoff curve marks %v as the knee, the sweep's is %v", q["label"], tr["knee"])
		}
	}
	if num(tr["obj"]) != 2000 || math.Abs(num(tr["objY"])-yPos(2000)) > 0.5 {
		t.Errorf("the objective's line is drawn at %.1f for %v ms, want %.1f for 2000 ms", num(tr["objY"]), tr["obj"], yPos(2000))
	}

	// The Lifecycle: the same gauge on its clock, and its step-through
	// follows one request: the clock moves to where it enters each phase,
	// its dot is in the lane in focus, its bar is marked.
	b.do(chromedp.Navigate(base + "/#lifecycle"))
	b.waitFor(`document.getElementById('lc-status')?.dataset.ready === '1' && !!document.querySelector('#lc-bars .bar.followed')`)
	here := 0
	for i := range 6 {
		b.do(chromedp.Click("#step-next"))
		s := eval[map[string]string](b, `(() => { const st = document.getElementById('step-text'), g = document.getElementById('lc-gauge');
		  const lanes = [...document.querySelectorAll('.lane')];
		  return {step: st.dataset.step, at: st.dataset.at, here: st.dataset.here, clock: document.getElementById('lc-clock').dataset.t, text: st.textContent,
		    focus: lanes.filter(l => l.classList.contains('focus')).map(l => l.dataset.phase).join(','),
		    dot: lanes.filter(l => !l.querySelector('.dot.followed').hidden).map(l => l.dataset.phase).join(','),
		    bar: document.querySelector('#lc-bars .bar.followed').dataset.id,
		    gauge: document.getElementById('lc-gauge-text').textContent, running: g.dataset.running, max: g.dataset.max,
		    fill: String(g.querySelector('.fill').getBoundingClientRect().width / g.clientWidth)}; })()`)
		if s["step"] != strconv.Itoa(i+1) || s["clock"] != s["at"] {
			t.Errorf("lifecycle step %d: step %s, clock %s, the phase starts at %s", i+1, s["step"], s["clock"], s["at"])
		}
		if !strings.Contains(s["text"], "Request "+s["bar"]+" ") {
			t.Errorf("lifecycle step %d: the text follows another request than the marked bar %s: %q", i+1, s["bar"], s["text"])
		}
		if s["here"] == "true" {
			here++
			if s["dot"] != s["focus"] {
				t.Errorf("lifecycle step %d: the followed dot is in lane %q, the lane in focus is %q", i+1, s["dot"], s["focus"])
			}
		}
		running, _ := strconv.ParseFloat(s["running"], 64)
		maxSeqs, _ := strconv.ParseFloat(s["max"], 64)
		fill, _ := strconv.ParseFloat(s["fill"], 64)
		if !strings.HasPrefix(s["gauge"], fmt.Sprintf("running %s of %s", s["running"], s["max"])) || math.Abs(fill-running/maxSeqs) > 0.002 {
			t.Errorf("lifecycle step %d: the gauge says %q, drawn %.3f full for %v of %v", i+1, s["gauge"], fill, running, maxSeqs)
		}
		t.Logf("lifecycle step %s (%s): request %s, dot in %q, %s", s["step"], s["focus"], s["bar"], s["dot"], s["gauge"])
	}
	if here < 5 {
		t.Errorf("the followed request was in only %d of the six phases it was stepped to", here)
	}
	b.shot("lifecycle-follow")

	// Learn §3: the batch, averaged over each run, fills as users are
	// added, then the queue beside it grows.
	b.do(chromedp.Navigate(base + "/#learn"))
	b.waitFor(`document.getElementById('page').dataset.ready === '1' && Number(document.getElementById('cv-out').dataset.seq) > 0`)
	for _, u := range []int{64, 1024} {
		setStep(b, "cv-users", u, "cv-out")
		g := eval[map[string]any](b, `(() => { const g = document.getElementById('cv-batch-gauge'), q = document.getElementById('cv-batch-queue');
		  return {text: document.getElementById('cv-batch-gauge-text').textContent, queue: document.getElementById('cv-batch-queue-text').textContent,
		    running: Number(g.dataset.running), max: Number(g.dataset.max), waiting: Number(q.dataset.waiting),
		    fill: g.querySelector('.fill').getBoundingClientRect().width / g.clientWidth}; })()`)
		running, maxSeqs, waiting := num(g["running"]), num(g["max"]), num(g["waiting"])
		t.Logf("Learn §3 at %d users: %v, %v", u, g["text"], g["queue"])
		shown := fmt.Sprintf("on average running %.1f of %.0f", running, maxSeqs)
		if running == math.Trunc(running) {
			shown = fmt.Sprintf("on average running %.0f of %.0f", running, maxSeqs)
		}
		if !strings.HasPrefix(fmt.Sprint(g["text"]), shown) || math.Abs(num(g["fill"])-min(running, maxSeqs)/maxSeqs) > 0.002 {
			t.Errorf("Learn §3 at %d users: the gauge says %q, drawn %.3f full for %.2f of %.0f", u, g["text"], num(g["fill"]), running, maxSeqs)
		}
		switch {
		case u == 64 && (running > 0.5*maxSeqs || waiting > 1):
			t.Errorf("Learn §3 at 64 users: the batch averages %.1f of %.0f with %.1f waiting: want room and no queue", running, maxSeqs, waiting)
		case u == 1024 && (running < 0.95*maxSeqs || waiting < maxSeqs):
			t.Errorf("Learn §3 at 1,024 users: the batch averages %.1f of %.0f with %.1f waiting: want it full and a queue of more than a batch", running, maxSeqs, waiting)
		}
	}
	b.checkClean()
}

// checkEngineView sets the load, steps the followed request through its
// phases and checks at each that the gauge, the clock, the request's bar
// and its token strip agree with the figures beside them.
func checkEngineView(t *testing.T, b *browser, load string, saturated bool) {
	t.Helper()
	ready := eval[string](b, `document.getElementById('sim-engine').dataset.ready`)
	setSim(b, "load", load)
	b.waitFor(fmt.Sprintf(`document.getElementById('sim-engine').dataset.ready !== %q`, ready))
	notes := eval[string](b, `document.getElementById('sim-results').textContent`)
	m := regexp.MustCompile(`max (\d+) sequences`).FindStringSubmatch(notes)
	if m == nil {
		t.Fatalf("the results do not say the engine's max sequences: %q", notes)
	}
	maxSeqs, _ := strconv.Atoi(m[1])
	figs := eval[map[string]float64](b, `Object.fromEntries([...document.querySelectorAll('#eng-figs .metric')].map(e => [e.id.slice(4), Number(e.dataset.value)]))`)
	t.Logf("%s users: the followed request's figures %v", load, figs)
	// The phases as the figures give them, from the bar's own left edge.
	type drawn struct {
		Phase, Gauge, Queue string
		From, To, Clock     float64
		Running, Max        float64
		FillFrac, SegFrac   float64
		SegLeft, CursorLeft float64
		BarW                float64
	}
	fullSeen := false
	var phases []string
	for range 8 {
		b.do(chromedp.Click("#eng-next"))
		d := eval[drawn](b, `(() => { const pt = document.getElementById('eng-phase-text').dataset, g = document.querySelector('#eng-gauge');
		  const gr = g.getBoundingClientRect(), fr = g.querySelector('.fill').getBoundingClientRect();
		  const bar = document.getElementById('eng-req-bar').getBoundingClientRect(), seg = document.querySelector('#eng-req-bar span.focus');
		  const sr = seg ? seg.getBoundingClientRect() : null, cr = document.querySelector('#eng-req-bar .cursor').getBoundingClientRect();
		  return {phase: pt.phase, from: Number(pt.from), to: Number(pt.to), clock: Number(document.getElementById('eng-clock').dataset.t),
		    gauge: document.getElementById('eng-gauge-text').textContent, queue: document.getElementById('eng-queue-text').textContent,
		    running: Number(g.dataset.running), max: Number(g.dataset.max), fillfrac: fr.width / g.clientWidth,
		    segfrac: sr ? sr.width / bar.width : -1, segleft: sr ? sr.left - bar.left : -1, cursorleft: cr.left + cr.width / 2 - bar.left, barw: bar.width}; })()`)
		phases = append(phases, d.Phase)
		if d.Clock != d.From {
			t.Errorf("%s users, %s: the clock reads %.3f ms, the phase starts at %.3f ms", load, d.Phase, d.Clock, d.From)
		}
		if int(d.Max) != maxSeqs || d.Gauge != fmt.Sprintf("running %d of %d", int(d.Running), maxSeqs) && d.Gauge != fmt.Sprintf("running %d of %d (full)", int(d.Running), maxSeqs) {
			t.Errorf("%s users, %s: the gauge says %q, its data %v of %v, the engine's max %d", load, d.Phase, d.Gauge, d.Running, d.Max, maxSeqs)
		}
		if math.Abs(d.FillFrac-d.Running/d.Max) > 1.5/800 {
			t.Errorf("%s users, %s: the gauge is drawn %.3f full for %v of %v", load, d.Phase, d.FillFrac, d.Running, d.Max)
		}
		if d.Running >= d.Max {
			fullSeen = true
		}
		// In its prefill and decode the request is one of the batch.
		if (d.Phase == "prefill" || d.Phase == "decode") && d.Running < 1 {
			t.Errorf("%s users, %s: the followed request is in the engine, yet the gauge shows %v running", load, d.Phase, d.Running)
		}
		if d.SegFrac >= 0 {
			// The highlighted segment is the phase's share of the request's
			// life, and the clock's cursor stands at its start.
			want := (d.To - d.From) / (figs["wait"] + figs["e2e"])
			if math.Abs(d.SegFrac-want) > 1.5/d.BarW {
				t.Errorf("%s users, %s: the phase is drawn %.4f of the bar, its figures make it %.4f", load, d.Phase, d.SegFrac, want)
			}
			if math.Abs(d.CursorLeft-d.SegLeft) > 1.5 {
				t.Errorf("%s users, %s: the clock's cursor at %.1f px, the phase starts at %.1f px", load, d.Phase, d.CursorLeft, d.SegLeft)
			}
		}
		t.Logf("%s users: %s at %.1f ms: %s, %s", load, d.Phase, d.From, d.Gauge, d.Queue)
		if d.Phase == "complete" {
			break
		}
	}
	if phases[len(phases)-1] != "complete" {
		t.Errorf("%s users: Next phase went %v and never reached complete", load, phases)
	}
	// The token strip: the TTFT pause, then one tick a token one TPOT apart.
	s := eval[map[string]float64](b, `(() => { const st = document.getElementById('eng-strip'), r = st.getBoundingClientRect();
	  const ticks = [...st.querySelectorAll('.tick')].map(t => t.getBoundingClientRect().left - r.left);
	  const p = st.querySelector('.pause').getBoundingClientRect();
	  return {n: ticks.length, every: Number(st.dataset.every), first: ticks[0], last: ticks[ticks.length - 1], pauseL: p.left - r.left, pauseW: p.width, w: r.width}; })()`)
	span := figs["wait"] + figs["e2e"]
	px := s["w"] / span
	if want := math.Ceil(figs["out"] / s["every"]); s["n"] != want {
		t.Errorf("%s users: %v ticks (one every %v tokens) for %v output tokens", load, s["n"], s["every"], figs["out"])
	}
	if math.Abs(s["pauseW"]-figs["ttft"]*px) > 1.5 || math.Abs(s["first"]-(s["pauseL"]+s["pauseW"])) > 1.5 {
		t.Errorf("%s users: the TTFT pause is %.1f px (TTFT %.1f ms is %.1f px) and the first tick at %.1f px, the pause ends at %.1f px", load, s["pauseW"], figs["ttft"], figs["ttft"]*px, s["first"], s["pauseL"]+s["pauseW"])
	}
	if s["n"] > 1 {
		gap := (s["last"] - s["first"]) / (s["n"] - 1)
		if want := figs["tpot"] * s["every"] * px; math.Abs(gap-want) > 0.05*want+0.2 {
			t.Errorf("%s users: ticks %.2f px apart, TPOT %.2f ms is %.2f px", load, gap, figs["tpot"], want)
		}
	}
	if saturated && !fullSeen {
		// Past saturation the batch is full somewhere in the request's life.
		full := eval[bool](b, `(() => { const s = document.getElementById('eng-time'); for (let v = 0; v <= 1000; v += 5) {
		  s.value = v; s.dispatchEvent(new Event('input')); const g = document.getElementById('eng-gauge'); if (g.dataset.running === g.dataset.max) return true; } return false; })()`)
		if !full {
			t.Errorf("%s users: the gauge never shows the batch full", load)
		}
	}
}
