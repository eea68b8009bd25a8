package browsertest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// watchComputed records every value that elements matching
// window.__watch give data-computed (a sweep's "steps drawn/steps
// planned"), in order, from now on.
const watchComputed = `(() => { const seen = window.__computed = []; window.__watch = 'none';
  new MutationObserver(() => { for (const el of document.querySelectorAll(window.__watch)) {
      const v = el.dataset.computed; if (v && seen[seen.length - 1] !== v) seen.push(v); } })
    .observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-computed']}); })()`

// watch starts recording what sel shows and opens hash.
func watch(b *browser, sel, hash string) {
	b.t.Helper()
	eval[any](b, `(() => { window.__computed.length = 0; window.__watch = `+strconv.Quote(sel)+`; location.hash = `+strconv.Quote(hash)+`; })()`)
}

// checkDrawnAsComputed reads what watchComputed saw: the page drew the
// sweep a step at a time (partial counts before the whole, rising), not all
// at the end.
//
// every: each step must have been drawn on its own (the exported copy: each
// step is its own message from the Web Worker, a task of its own on the
// page). Live, the native simulator computes a sweep in about 0.3 s, so
// steps that land in one network read are drawn in one task and the page
// shows the last of them; there at least one partial curve must come first.
func checkDrawnAsComputed(t *testing.T, b *browser, where string, every bool) {
	t.Helper()
	seen := eval[[]string](b, `window.__computed`)
	t.Logf("%s: the sweep's drawn/planned steps, as the page showed them: %s", where, strings.Join(seen, " "))
	partial, last := 0, 0
	for _, s := range seen {
		var k, n int
		if _, err := fmt.Sscanf(s, "%d/%d", &k, &n); err != nil || n == 0 {
			t.Fatalf("%s: data-computed %q: want k/n", where, s)
		}
		if k < last {
			t.Errorf("%s: %d steps drawn after %d", where, k, last)
		}
		last = k
		if k < n {
			partial++
		}
	}
	if every && (partial != last-1 || len(seen) != last) {
		t.Errorf("%s: %v: want every step drawn, one at a time", where, seen)
	}
	if partial < 1 {
		t.Errorf("%s: %d partial curves drawn before the whole sweep (%v): the steps were not shown as they were computed", where, partial, seen)
	}
}

// A sweep in the UI is drawn a step at a time as the simulator finishes
// each (issue 44: "results stream in as they are computed"): the
// Simulator's and Learn's curves and the Lab's sweep, live and from the
// exported copy, where the steps come from the Web Worker.
func TestSweepDrawnAsComputedInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	for _, site := range []struct {
		name, base string
		every      bool
	}{
		{"live", startUI(t, filepath.Join(dir, "knee.db")), false},
		{"export", serveExport(t, dir), true},
	} {
		t.Run(site.name, func(t *testing.T) {
			b := newBrowser(t, exe, dir)
			b.do(chromedp.Navigate(site.base + "/#runs")) // a page that sweeps nothing
			b.waitFor(`!!document.querySelector('#page h1')`)
			eval[any](b, watchComputed)

			watch(b, "#curve-throughput", "#sim")
			b.waitFor(`!!document.getElementById('knee-verdict')`)
			checkDrawnAsComputed(t, b, site.name+" simulator", site.every)

			watch(b, "#cv-throughput", "#learn")
			b.waitFor(`!!document.getElementById('cv-knee')`)
			checkDrawnAsComputed(t, b, site.name+" learn", site.every)

			watch(b, "#lab-progress", "#lab")
			b.waitFor(`!!document.querySelector('#lab-result h2')`) // the first scenario, shown on arrival
			eval[any](b, `document.getElementById('lab-sweep').click()`)
			b.waitFor(`!!document.getElementById('lab-sweep-table')`)
			checkDrawnAsComputed(t, b, site.name+" lab", site.every)
			b.checkClean()
		})
	}
}
