package browsertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// fitsPhone lists what leaves a 390 px screen sideways or cannot be read:
// the page scrolling sideways, a table, chart, figure, gauge or bar past
// either edge, a table or its wrapper scrolling sideways inside its box
// (a column hidden in a scroller), a figure in type under 12 px, and two
// elements with one id.
const fitsPhone = `(() => {
  const bad = [], W = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > W + 1) bad.push('the page is ' + document.documentElement.scrollWidth + ' px wide');
  const name = e => e.id ? '#' + e.id : e.tagName.toLowerCase() + '.' + [...e.classList].join('.');
  for (const e of document.querySelectorAll('#page table, #page .table-wrap, #page .chart, #page canvas, #page .metric, #page .gauge, #page .bar, #page .token-strip, #page .badge, #page .key-strip')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.left < -0.5 || r.right > W + 0.5) bad.push(name(e) + ' spans ' + r.left.toFixed(0) + '–' + r.right.toFixed(0) + ' px');
    if ((e.tagName === 'TABLE' || e.classList.contains('table-wrap')) && e.scrollWidth > e.clientWidth + 1) bad.push(name(e) + ' scrolls sideways (' + e.scrollWidth + ' px in ' + e.clientWidth + ')');
  }
  for (const e of document.querySelectorAll('#page .metric .value, #page td, #page .gauge-text, #page .key-strip b')) {
    const fs = parseFloat(getComputedStyle(e).fontSize);
    if (e.getBoundingClientRect().width > 0 && fs < 12) bad.push(name(e) + ' in ' + fs + ' px type');
  }
  // A chart drawn in SVG is not shrunk below its own units (its 12 px type
  // would shrink with it).
  for (const e of document.querySelectorAll('#page svg[viewBox]')) {
    const vb = e.viewBox.baseVal, r = e.getBoundingClientRect();
    if (vb && vb.width > 0 && r.width < 0.99 * vb.width) bad.push(name(e) + ' drawn at ' + (100 * r.width / vb.width).toFixed(0) + '% of its size');
  }
  // Two elements of one id: a figure read by id could be the wrong one.
  const seen = new Set();
  for (const e of document.querySelectorAll('[id]')) { if (seen.has(e.id)) bad.push('id ' + e.id + ' twice'); seen.add(e.id); }
  return bad.slice(0, 12);
})()`

// TestPhoneLayoutInBrowser: every page at 390×844 (issue 44, Build:
// phone): nothing overflows sideways, tables stack as cards, every figure
// is in readable type, and on the Simulator a slim pinned slider carries
// the badge and four key figures, the same as the results below say. Then
// Learn on a desktop: each live element beside its text.
func TestPhoneLayoutInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := startUI(t, filepath.Join(dir, "knee.db"))
	b := newBrowser(t, exe, dir)
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	check := func(page string) {
		t.Helper()
		if bad := eval[[]string](b, fitsPhone); len(bad) > 0 {
			t.Errorf("%s at 390×844:\n  %s", page, strings.Join(bad, "\n  "))
		}
		b.shot("phone-" + page)
	}

	b.do(chromedp.Navigate(base + "/#sim"))
	b.waitFor(`Number(document.getElementById('sim-results')?.dataset.seq) > 0 && !!document.getElementById('key-level') && Number(document.getElementById('sim-engine')?.dataset.ready) > 0`)
	setSim(b, "load", "512")
	b.waitFor(`!!document.querySelector('#curve-ttft canvas')`)
	k := eval[map[string]any](b, `(() => { const p = document.querySelector('fieldset.load').getBoundingClientRect(), key = document.getElementById('sim-key').getBoundingClientRect();
	  const v = id => document.getElementById(id).dataset.value, txt = id => document.querySelector('#' + id + ' .value').textContent;
	  return {panel: p.height, keyBottom: key.bottom, keyRight: key.right, level: document.getElementById('key-level').dataset.level, badge: document.getElementById('pressure').dataset.level,
	    pairs: ['ttft-p95', 'tpot-p50', 'rps', 'queue-p50'].map(id => [v('key-' + id), v('m-' + id), document.querySelector('#key-' + id + ' b').textContent, txt('m-' + id)])}; })()`)
	t.Logf("simulator at 390×844: pinned panel %.0f px (%.0f%% of the screen), key figures end %.0f px down: %v", num(k["panel"]), 100*num(k["panel"])/844, num(k["keyBottom"]), k["pairs"])
	if num(k["panel"]) > 0.15*844 {
		t.Errorf("the pinned panel is %.0f px, %.0f%% of the screen (want at most 15%%)", num(k["panel"]), 100*num(k["panel"])/844)
	}
	if num(k["keyBottom"]) > 844 || num(k["keyRight"]) > 390 {
		t.Errorf("the badge and key figures are not on the first screen: they end at %.0f px down, %.0f px across", num(k["keyBottom"]), num(k["keyRight"]))
	}
	if k["level"] != k["badge"] {
		t.Errorf("the pinned badge says %v, the results' badge %v", k["level"], k["badge"])
	}
	for _, p := range k["pairs"].([]any) {
		q := p.([]any)
		if q[0] != q[1] || q[2] != q[3] {
			t.Errorf("a pinned figure differs from the results': %v", q)
		}
	}
	// Scrolled down to the settings, the key figures stay in sight.
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('max-num-seqs').scrollIntoView({block: 'center'})`))
	if top := eval[float64](b, `document.getElementById('sim-key').getBoundingClientRect().top`); top < 0 || top > 844 {
		t.Errorf("scrolled to the engine limits, the key figures are %.0f px down the screen", top)
	}
	b.screen("phone-simulator-scrolled")
	b.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	b.screen("phone-simulator-first-screen")
	check("simulator")

	b.do(chromedp.Navigate(base + "/#lifecycle"))
	b.waitFor(`document.getElementById('lc-status')?.dataset.ready === '1' && !!document.querySelector('#pair-queue[data-verdict]') && !!document.getElementById('lesson-table')`)
	// The worked pair fits one screen: both sides, their bars and verdicts.
	pair := eval[[]float64](b, `(() => { const a = document.getElementById('pair-queue').getBoundingClientRect(), d = document.getElementById('pair-decode').getBoundingClientRect();
	  return [Math.min(a.top, d.top), Math.max(a.bottom, d.bottom)]; })()`)
	t.Logf("lifecycle at 390×844: the worked pair spans %.0f px", pair[1]-pair[0])
	if pair[1]-pair[0] > 844 {
		t.Errorf("the worked pair is %.0f px tall on a 844 px screen", pair[1]-pair[0])
	}
	check("lifecycle")

	b.do(chromedp.Navigate(base + "/#lab"))
	b.waitFor(`document.getElementById('lab-verdict')?.textContent === 'queue_pressure'`)
	check("lab-queue")
	b.do(chromedp.Click("#lab-sweep"))
	b.waitFor(`!!document.getElementById('lab-sweep-table') && document.querySelectorAll('#lab-throughput canvas').length == 1 && !!document.getElementById('lesson-table')`)
	// The sweep's table stacks: each row a card, its mark ("knee says")
	// readable with its name.
	marks := eval[[]string](b, `[...document.querySelectorAll('#lab-sweep-table tr.marked td:last-child')].map(td => getComputedStyle(td, '::before').content + ' ' + td.textContent)`)
	t.Logf("lab sweep's marked rows on a phone: %v", marks)
	if len(marks) == 0 || !strings.Contains(fmt.Sprint(marks), "knee says") {
		t.Errorf("the lab sweep's marks are not shown with their column's name on a phone: %v", marks)
	}
	check("lab-sweep")

	b.do(chromedp.Navigate(base + "/#learn"))
	b.waitFor(`document.getElementById('page').dataset.ready === '1' && !!document.getElementById('lesson-table')`)
	check("learn")

	// On a desktop, Learn's live elements stand beside their text, not
	// under it (docs/ui.md: "each beside a live element").
	b.do(chromedp.EmulateViewport(1400, 1000))
	b.do(chromedp.Reload())
	b.waitFor(`document.getElementById('page').dataset.ready === '1' && !!document.getElementById('lesson-table')`)
	beside := eval[[]string](b, `[...document.querySelectorAll('.learn-grid')].map(g => {
	  const p = g.querySelector('.learn-prose').getBoundingClientRect(), l = g.querySelector('.learn-live').getBoundingClientRect();
	  return g.closest('section').id + ': text ' + p.left.toFixed(0) + '–' + p.right.toFixed(0) + ' px from ' + p.top.toFixed(0) + ', live ' + l.left.toFixed(0) + '–' + l.right.toFixed(0) + ' px from ' + l.top.toFixed(0) +
	    (l.left >= p.right && Math.abs(l.top - p.top) < 2 ? '' : ' NOT BESIDE'); })`)
	t.Logf("Learn at 1400×1000:\n  %s", strings.Join(beside, "\n  "))
	if len(beside) < 5 || strings.Contains(strings.Join(beside, ""), "NOT BESIDE") {
		t.Errorf("Learn at 1400×1000: a live element is not beside its text: %v", beside)
	}
	b.shot("learn-desktop")
	b.checkClean()
}

// screen keeps what the screen shows now (not the whole page) as name.png.
func (b *browser) screen(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := filepath.Join(artifactDir(), "ui")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
