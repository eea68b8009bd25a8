package browsertest

import (
	"strconv"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"

	"github.com/chromedp/chromedp"
)

// tickTimer starts a 10 ms timer on the page that records every gap
// between its ticks over 100 ms (window.__late) and the longest
// (window.__maxGap); stopTimer returns them.
const (
	tickTimer = `(() => { window.__late = []; window.__maxGap = 0; window.__ticks = 0; let last = performance.now();
	  window.__timer = setInterval(() => { const now = performance.now(), gap = now - last; last = now; window.__ticks++;
	    window.__maxGap = Math.max(window.__maxGap, gap); if (gap > 100) window.__late.push(Math.round(gap)); }, 10); })()`
	stopTimer = `(() => { clearInterval(window.__timer); return {late: window.__late, maxGap: window.__maxGap, ticks: window.__ticks}; })()`
)

type timerGaps struct {
	Late   []float64 `json:"late"`
	MaxGap float64   `json:"maxGap"`
	Ticks  int       `json:"ticks"`
}

// TestExportedSimulatorKeepsPageResponsive: in the static copy the
// simulator runs in a Web Worker, so the page's own thread stays free
// while a sweep and the lab's sweep are computed and streamed to it a step
// at a time (issue 44: the module on the page's thread held it 5.2 s on
// Learn's first load, 1.1–1.6 s a sweep). The module is loaded by the first
// call, inside the measurement.
//
// What the page's thread did is measured directly: its CPU time in tasks
// (Chrome's TaskDuration in thread time, which a thread the machine holds
// back does not add to) must stay under a tenth of the computation's time
// (about 85 ms of 5.5 s measured: a timer tick and a message a step; a
// page spinning for 1 s of wall time on this loaded machine measured
// 346 ms, so a page that ran the module would show about a third), and
// its 10 ms timer must keep ticking. A tick over 100 ms late is logged, not
// failed: on this 2-core machine shared with other builds (load average
// 13-15) the operating system holds the page's thread back behind the
// worker's and others' now and then — gaps of 102-369 ms were measured
// during runs, 40-126 ms with the page idle — whatever the page does.
func TestExportedSimulatorKeepsPageResponsive(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := serveExport(t, dir)
	b := newBrowser(t, exe, dir)
	b.do(chromedp.Navigate(base + "/#runs")) // a page that calls no simulator
	b.waitFor(`document.getElementById('page').textContent.includes('knee ui')`)
	// The page's main thread's own CPU time in tasks (not the time the
	// machine held it back): Chrome's TaskDuration in thread ticks.
	if _, err := chromedp.Call(b.ctx, performance.Enable, performance.EnableParams{TimeDomain: performance.EnableTimeDomainThreadTicks}); err != nil {
		t.Fatal(err)
	}
	taskCPU := func() float64 {
		m, err := chromedp.Call(b.ctx, performance.GetMetrics, cdp.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range m.Metrics {
			if x.Name == "TaskDuration" {
				return x.Value * 1000
			}
		}
		t.Fatal("no TaskDuration metric")
		return 0
	}
	eval[any](b, tickTimer)
	cpu0 := taskCPU()
	eval[any](b, `(() => { window.__done = (async () => {
	  const {apiSteps} = await import('./static/api.js');
	  const t0 = performance.now();
	  let streamed = 0;
	  const sw = await apiSteps('/api/sweep', {load_kind: 'concurrency', load: 16, input_tokens: '512', output_tokens: '128', tp: 1, max_num_seqs: 256, replicas: 1}, () => streamed++);
	  const lab = await apiSteps('/api/lab', {scenario: 'sweep'}, () => streamed++);
	  return {ms: performance.now() - t0, steps: sw.steps.length, labSteps: lab.sweep.steps.length, streamed};
	})(); })()`)
	r := eval[map[string]float64](b, `window.__done`)
	cpu := taskCPU() - cpu0
	busy := eval[timerGaps](b, stopTimer)
	t.Logf("the simulator loaded its module and ran a sweep (%v steps) and the lab sweep (%v steps), %v steps streamed, in %.0f ms; the page's main thread spent %.1f ms of CPU in tasks; its 10 ms timer ticked %d times, longest gap %.1f ms, gaps over 100 ms: %v",
		r["steps"], r["labSteps"], r["streamed"], r["ms"], cpu, busy.Ticks, busy.MaxGap, busy.Late)
	if r["steps"] < 5 || r["labSteps"] < 5 || r["streamed"] != r["steps"]+r["labSteps"] {
		t.Fatalf("the simulator did not answer, or not a step at a time: %v", r)
	}
	// A page whose thread ran the module spends the whole computation in
	// one task; this one takes a message a step and ticks its timer.
	if cpu > 0.1*r["ms"] {
		t.Errorf("the page's main thread was busy %.0f ms of the %.0f ms the simulator ran: want under a tenth", cpu, r["ms"])
	}
	if float64(busy.Ticks) < r["ms"]/100 {
		t.Errorf("the page's timer ticked %d times in %.0f ms: the page froze", busy.Ticks, r["ms"])
	}
	if len(busy.Late) > 0 {
		eval[any](b, tickTimer)
		eval[any](b, `new Promise(ok => setTimeout(ok, `+strconv.Itoa(int(r["ms"]))+`))`)
		idle := eval[timerGaps](b, stopTimer)
		t.Logf("the timer missed 100 ms %d times while the worker ran (the page's thread busy %.0f ms in all); for comparison, the same page idle for as long: longest gap %.1f ms, gaps over 100 ms: %v",
			len(busy.Late), cpu, idle.MaxGap, idle.Late)
	}
	b.checkClean()
}
