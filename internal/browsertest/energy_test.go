package browsertest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Energy per output token on the Simulator's figures and in Learn's batch
// lesson (issue 45 item 5): from the GPU preset's power model, fewer joules
// a token as the batch fills, then no fewer past the SLO-safe point while
// the objective breaks. Figures are read from the page.
func TestEnergyPerTokenInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := startUI(t, filepath.Join(dir, "knee.db"))
	b := newBrowser(t, exe, dir)

	b.do(chromedp.Navigate(base + "/#sim"))
	b.waitFor(`Number(document.getElementById('sim-results')?.dataset.seq) > 0 && !!document.getElementById('pressure')`)
	setSim(b, "max-num-seqs", "256")
	energyAt := func(load string) (mj, perJ, watts float64) {
		setSim(b, "load", load)
		v := eval[map[string]float64](b, `(() => { const v = id => Number(document.getElementById(id)?.dataset.value);
		  return {mj: v('m-mj-per-token'), perj: v('m-tokens-per-j'), w: v('m-power')}; })()`)
		return v["mj"], v["perj"], v["w"]
	}
	mj1, perJ1, w1 := energyAt("1")
	mj256, perJ256, w256 := energyAt("256")
	t.Logf("Simulator: 1 user %.1f mJ per output token (%.2f tok/J, %.0f W per GPU); 256 users %.1f mJ (%.2f tok/J, %.0f W)", mj1, perJ1, w1, mj256, perJ256, w256)
	for _, c := range [][3]float64{{mj1, perJ1, w1}, {mj256, perJ256, w256}} {
		if !(c[0] > 0) || !(c[2] > 0) || abs(c[0]*c[1]/1000-1) > 1e-6 {
			t.Errorf("energy boxes %v: want mJ per token × tokens per J = 1000 and a power", c)
		}
	}
	if !(mj256 < mj1/5) || !(w256 > w1) {
		t.Errorf("256 users: %.1f mJ per token at %.0f W against 1 user's %.1f mJ at %.0f W: want a fuller batch to draw more power and spend at least 5 times fewer joules a token", mj256, w256, mj1, w1)
	}

	// The sweep names its most energy-efficient load beside the knee.
	b.waitFor(`!!document.getElementById('energy-verdict')`)
	ev := eval[map[string]string](b, `(() => { const d = document.getElementById('energy-verdict'); return {load: d.dataset.load, loads: d.dataset.loads, mjs: d.dataset.mjs, text: d.textContent}; })()`)
	t.Logf("Simulator sweep: %q", ev["text"])
	evLoads, evMJ := floats(ev["loads"]), floats(ev["mjs"])
	best := 0
	for i := range evMJ {
		if evMJ[i] < evMJ[best] {
			best = i
		}
	}
	if len(evLoads) < 5 || len(evLoads) != len(evMJ) || fmt.Sprint(evLoads[best]) != ev["load"] || !strings.Contains(ev["text"], "at "+ev["load"]+" users") {
		t.Errorf("the energy verdict names load %s, but the sweep's fewest mJ per token are at %v (%v over %v)", ev["load"], evLoads[best], evMJ, evLoads)
	}

	b.do(chromedp.Navigate(base + "/#learn"))
	b.waitFor(`!!document.getElementById('cv-knee') && !!document.getElementById('cv-energy')?.dataset.mj && document.getElementById('cv-energy-text').textContent !== ''`)
	v := eval[map[string]string](b, `(() => ({mj: document.getElementById('cv-energy').dataset.mj, loads: document.getElementById('cv-energy').dataset.loads,
	  safe: document.getElementById('cv-throughput').dataset.safe, text: document.getElementById('cv-energy-text').textContent,
	  canvas: String(document.querySelectorAll('#cv-energy canvas').length)}))()`)
	t.Logf("Learn §3: loads %s, mJ per token %s, SLO-safe %s; %q", v["loads"], v["mj"], v["safe"], v["text"])
	loads, mjs := floats(v["loads"]), floats(v["mj"])
	safe := -1
	for i, l := range loads {
		if fmt.Sprint(l) == v["safe"] {
			safe = i
		}
	}
	if v["canvas"] != "1" || safe < 1 || len(mjs) != len(loads) {
		t.Fatalf("the energy chart or the SLO-safe point is missing: %v", v)
	}
	for i := 1; i <= safe; i++ {
		if !(mjs[i] < mjs[i-1]) {
			t.Errorf("%v users: %.1f mJ per token, not fewer than %.1f at %v users", loads[i], mjs[i], mjs[i-1], loads[i-1])
		}
	}
	for i := safe + 1; i < len(mjs); i++ {
		if mjs[i] < 0.95*mjs[safe] {
			t.Errorf("%v users, past the SLO-safe point: %.1f mJ per token, more than 5%% below its %.1f: the lesson says a full batch saves no more", loads[i], mjs[i], mjs[safe])
		}
	}
	// The sentence quotes the chart's own figures.
	for _, i := range []int{0, safe, len(mjs) - 1} {
		if want := jsFmt(mjs[i]) + " mJ"; !strings.Contains(v["text"], want) {
			t.Errorf("the lesson's text does not quote %s (at %v users): %q", want, loads[i], v["text"])
		}
	}
	b.shotOf("#learn-curve", "learn-energy")
	b.checkClean()
}

// shotOf keeps a screenshot of the element sel alone, readable where a
// whole page's would be scaled down past reading.
func (b *browser) shotOf(sel, name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.Screenshot(sel))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	b.keepShot(name, png)
}

// jsFmt writes v as the page's fmt does (api.js): no decimals from 100,
// one from 10, two below.
func jsFmt(v float64) string {
	switch a := abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
