package browsertest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// checkTeaching runs issue 30's checks on the pages that need no runs,
// served at base (knee ui, or the exported site on a static server).
func checkTeaching(t *testing.T, b *browser, base, prefix string) {
	t.Helper()
	b.do(chromedp.EmulateViewport(1400, 1000))

	// --- Simulator default: users out of step, p50 < p95 ---
	b.do(chromedp.Navigate(base + "/#sim"))
	b.waitFor(`Number(document.getElementById('sim-results')?.dataset.seq) > 0 && !!document.getElementById('m-ttft-p95')`)
	q := eval[map[string]float64](b, `(() => { const v = id => Number(document.getElementById(id).dataset.value);
	  return {load: Number(document.getElementById('load').value), ttft50: v('m-ttft-p50'), ttft95: v('m-ttft-p95'), q50: v('m-queue-p50'), q95: v('m-queue-p95')}; })()`)
	t.Logf("simulator default (%v users): TTFT p50 %.1f p95 %.1f ms, queue p50 %.1f p95 %.1f ms", q["load"], q["ttft50"], q["ttft95"], q["q50"], q["q95"])
	if !(q["ttft50"] < q["ttft95"]) || !(q["q50"] < q["q95"]) {
		t.Errorf("simulator default in lockstep: %v", q)
	}
	// Each headline figure carries the range knee's held-out errors give it.
	rg := eval[map[string]any](b, `(() => { const r = document.getElementById('r-ttft-p95');
	  return r ? {low: Number(r.dataset.low), high: Number(r.dataset.high), value: Number(document.getElementById('m-ttft-p95').dataset.value),
	    text: document.getElementById('m-ttft-p95').textContent, boxes: document.querySelectorAll('#sim-results .metric .range').length} : {}; })()`)
	t.Logf("simulator default, p95 TTFT with its held-out range: %v", rg)
	if lo, hi, v := num(rg["low"]), num(rg["high"]), num(rg["value"]); !(lo > 0 && lo < v && v < hi) || !strings.Contains(fmt.Sprint(rg["text"]), "on hosts knee has not seen") || num(rg["boxes"]) < 5 {
		t.Errorf("the simulator does not show the held-out prediction range beside its figures: %v", rg)
	}
	// The labels over the sweep charts: knee and SLO-safe on both, the
	// objective's line on the TTFT chart.
	b.waitFor(`document.querySelectorAll('#curve-throughput .chart-label').length >= 2 && document.querySelectorAll('#curve-ttft .chart-label').length >= 3`)
	b.shot(prefix + "simulator-default")
	checkLayout(t, b, prefix+"simulator")
	// On a phone the results come after every control that changes them.
	b.do(chromedp.EmulateViewport(390, 844))
	b.do(chromedp.Sleep(400 * time.Millisecond))
	above := eval[[]string](b, `(() => { const top = document.getElementById('sim-results').getBoundingClientRect().top + scrollY;
	  return [...document.querySelectorAll('#sim-controls input, #sim-controls select')].filter(c => c.getBoundingClientRect().bottom + scrollY > top).map(c => c.id); })()`)
	if len(above) > 0 {
		t.Errorf("on a phone the simulator's results sit above controls that change them: %v", above)
	}
	b.do(chromedp.EmulateViewport(1400, 1000))

	// --- Learn §3: flat past saturation at every slider setting ---
	b.do(chromedp.Navigate(base + "/#learn"))
	b.waitFor(`document.getElementById('page').dataset.ready === '1'`)
	b.waitFor(`!!document.getElementById('cv-throughput')?.dataset.rps`)
	curve := eval[[]string](b, `[document.getElementById('cv-throughput').dataset.loads, document.getElementById('cv-throughput').dataset.rps]`)
	loads, rps := floats(curve[0]), floats(curve[1])
	t.Logf("Learn §3 curve: users %v → req/s %v", loads, rps)
	flatPast(t, "the curve", loads, rps, 256)
	var sl, sr []float64
	for _, u := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024} {
		st := setStep(b, "cv-users", u, "cv-out")
		sl, sr = append(sl, float64(u)), append(sr, st.Figures["cv-rps"])
	}
	t.Logf("Learn §3 slider: users %v → req/s %v", sl, sr)
	flatPast(t, "the slider's figures", sl, sr, 256)
	// The lesson's pair (its six numbers, both verdicts) and its table.
	b.waitFor(`!!document.querySelector('#lp-lesson-b[data-verdict]') && !!document.querySelector('#learn-lesson tbody tr')`)
	checkLesson(t, b, "lp")
	b.shot(prefix + "learn")
	checkLayout(t, b, prefix+"learn")

	// --- Lifecycle: the default queues in most samples ---
	b.do(chromedp.Navigate(base + "/#lifecycle"))
	b.waitFor(`document.getElementById('lc-status')?.dataset.ready === '1'`)
	n := eval[[]float64](b, `(() => {
	  const s = document.getElementById('lc-time');
	  document.getElementById('lc-play').getAttribute('aria-pressed') === 'true' && document.getElementById('lc-play').click();
	  let queued = 0, samples = 0;
	  for (let v = 0; v < 1000; v += 12.5) {
	    s.value = v; s.dispatchEvent(new Event('input', {bubbles: true}));
	    samples++;
	    if (Number(document.getElementById('count-queue').dataset.count) > 0) queued++;
	  }
	  return [queued, samples]; })()`)
	t.Logf("lifecycle default: queue lane non-empty in %.0f of %.0f samples", n[0], n[1])
	if n[0] <= n[1]/2 {
		t.Errorf("lifecycle default: queue lane non-empty in %.0f of %.0f samples, want most", n[0], n[1])
	}
	if ax := eval[string](b, `document.getElementById('lc-axis').textContent`); ax == "" {
		t.Error("the lifecycle timeline has no time axis")
	}
	b.waitFor(`!!document.querySelector('#pair-lesson-b[data-verdict]')`)
	checkLesson(t, b, "pair")
	b.shot(prefix + "lifecycle-default")
	checkLayout(t, b, prefix+"lifecycle")

	// --- Lab: the sweep marks knee, SLO-safe and highest throughput ---
	b.do(chromedp.Navigate(base + "/#lab"))
	b.waitFor(`!!document.getElementById('lab-sweep')`)
	b.do(chromedp.Click("#lab-sweep"))
	b.waitFor(`!!document.querySelector('#lab-sweep-table tbody tr') && !!document.querySelector('#lesson-table tbody tr')`)
	marks := eval[string](b, `[...document.querySelectorAll('#lab-sweep-table tbody tr')].map(r => r.dataset.mark).filter(Boolean).join(' | ')`)
	why := eval[string](b, `document.getElementById('lab-highest').textContent`)
	t.Logf("lab sweep marks: %s; %s", marks, why)
	for _, m := range []string{"knee", "SLO-safe", "highest throughput"} {
		if !strings.Contains(marks, m) {
			t.Errorf("the lab sweep marks no %q row: %s", m, marks)
		}
	}
	if !strings.Contains(why, "not a healthy operating point") {
		t.Errorf("the lab does not say why the highest throughput is not healthy: %s", why)
	}
	lesson := eval[string](b, `[...document.querySelectorAll('#lesson-table tbody tr')].map(r => r.dataset.load + ':' + r.dataset.mark).join(' ')`)
	t.Logf("lab: the lesson's table: %s", lesson)
	if !strings.Contains(lesson, "25:knee, SLO-safe") || !strings.Contains(lesson, "45:highest throughput") {
		t.Errorf("the lesson's table beside the lab sweep: %s, want knee and SLO-safe at 25, highest throughput at 45", lesson)
	}
	b.shot(prefix + "lab-sweep-marks")
	checkLayout(t, b, prefix+"lab")
}

// num reads a number eval returned (0 when it is not one).
func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func floats(s string) []float64 {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, _ := strconv.ParseFloat(f, 64)
		out = append(out, v)
	}
	return out
}

// flatPast fails when, at or past from users, a throughput is under 90% of
// the highest.
func flatPast(t *testing.T, what string, loads, rps []float64, from float64) {
	t.Helper()
	best := 0.0
	for _, v := range rps {
		best = max(best, v)
	}
	for i, l := range loads {
		if l >= from && rps[i] < 0.9*best {
			t.Errorf("%s: %v users serve %.1f req/s, under 90%% of the highest %.1f: throughput falls past saturation", what, l, rps[i], best)
		}
	}
}

// checkLesson reads the lesson's pair as the page shows it.
func checkLesson(t *testing.T, b *browser, prefix string) {
	t.Helper()
	got := eval[string](b, fmt.Sprintf(`['a', 'b'].map(n => { const e = document.getElementById('%s-lesson-' + n).dataset;
	  return [e.queue, e.prefill, e.decode, e.total, e.verdict].join(' '); }).join(' | ')`, prefix))
	want := "2.5 0.4 1.1 4 queue_pressure | 0.1 0.4 3.5 4 decode_bound"
	if got != want {
		t.Errorf("the lesson's pair (%s): %q, want %q", prefix, got, want)
	}
}

// checkLayout compares element boxes at 1400×1000 and 390×844: no text
// element sticks out of the page, no control cuts its own text, and no two
// text elements overlap.
func checkLayout(t *testing.T, b *browser, name string) {
	t.Helper()
	for _, vp := range [][2]int64{{1400, 1000}, {390, 844}} {
		b.do(chromedp.EmulateViewport(vp[0], vp[1]))
		b.do(chromedp.Sleep(400 * time.Millisecond))
		bad := eval[[]string](b, `(() => {
		  const out = [], W = document.documentElement.clientWidth;
		  const vis = e => { const r = e.getBoundingClientRect(); const s = getComputedStyle(e);
		    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'; };
		  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' "' + (e.textContent || e.value || '').trim().slice(0, 30) + '"';
		  const inScroller = e => !!e.closest('.table-wrap, .bars, .u-wrap, .lanes');
		  if (document.documentElement.scrollWidth > W + 1) out.push('page scrolls sideways: ' + document.documentElement.scrollWidth + ' px in ' + W);
		  for (const s of document.querySelectorAll('select')) {
		    if (!vis(s)) continue;
		    const c = document.createElement('span'); c.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap;font:' + getComputedStyle(s).font;
		    c.textContent = s.options[s.selectedIndex]?.text || ''; document.body.append(c);
		    const need = c.getBoundingClientRect().width; c.remove();
		    if (need > s.clientWidth - 8) out.push('select cut off: ' + name(s) + ' needs ' + need.toFixed(0) + ' px, has ' + s.clientWidth);
		  }
		  const texts = [...document.querySelectorAll('#page h1, #page h2, #page h3, #page label, #page button, #page p, #page li, #page legend, #page output, #page .badge, #page .chart-label')].filter(e => vis(e) && !inScroller(e));
		  // A chart's labels (knee, SLO-safe, the objective) stay inside its
		  // plot and off its curves.
		  for (const l of document.querySelectorAll('#page .chart-label')) {
		    const host = l.closest('.chart'), r = l.getBoundingClientRect(), o = host.querySelector('.u-over').getBoundingClientRect();
		    if (r.left < o.left - 1 || r.right > o.right + 1 || r.top < o.top - 1 || r.bottom > o.bottom + 1) out.push('chart label outside its plot: ' + name(l));
		    const inside = (x, y) => x >= r.left && x <= r.right && y >= r.top && y <= r.bottom;
		    let hit = false;
		    for (const pts of host.chartCurves()) for (let i = 0; i < pts.length && !hit; i++) {
		      const a = pts[i], q = pts[i + 1] || a;
		      if (!a) continue;
		      for (let k = 0; k <= 50 && !hit; k++) hit = inside(a[0] + (q[0] - a[0]) * k / 50, a[1] + (q[1] - a[1]) * k / 50);
		    }
		    if (hit) out.push('chart label on the curve: ' + name(l) + ' in #' + host.id);
		  }
		  for (const e of texts) {
		    const r = e.getBoundingClientRect();
		    if (r.right > W + 1 || r.left < -1) out.push('cut off at the page edge: ' + name(e) + ' ' + r.left.toFixed(0) + '..' + r.right.toFixed(0));
		  }
		  for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
		    const a = texts[i], c = texts[j];
		    if (a.contains(c) || c.contains(a)) continue;
		    const r = a.getBoundingClientRect(), s = c.getBoundingClientRect();
		    const w = Math.min(r.right, s.right) - Math.max(r.left, s.left), h = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
		    if (w > 2 && h > 2) out.push('overlap: ' + name(a) + ' and ' + name(c));
		  }
		  return out.slice(0, 15); })()`)
		for _, m := range bad {
			t.Errorf("%s at %dx%d: %s", name, vp[0], vp[1], m)
		}
		if vp[0] == 390 {
			b.shot(name + "-phone")
		}
	}
	b.do(chromedp.EmulateViewport(1400, 1000))
}

// TestTeachingInBrowser: issue 30's checks against knee ui.
func TestTeachingInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := startUI(t, filepath.Join(dir, "knee.db"))
	b := newBrowser(t, exe, dir)
	checkTeaching(t, b, base, "")
	b.checkClean()
}

// TestTeachingExportedInBrowser: the same checks against the exported site
// served by a plain static file server, nothing leaving loopback.
func TestTeachingExportedInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := serveExport(t, dir)
	b := newBrowser(t, exe, dir)
	checkTeaching(t, b, base, "export-")
	b.checkClean()
}
