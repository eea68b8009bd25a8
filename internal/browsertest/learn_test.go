package browsertest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// liveState is what one live element of the Learn page shows: the figures
// it holds (element id → data-value) and its badge, if any.
type liveState struct {
	Figures map[string]float64 `json:"figures"`
	Level   string             `json:"level"`
	Seq     int                `json:"seq"`
}

func readLive(out string) string {
	return fmt.Sprintf(`(() => { const o = document.getElementById(%q), f = {};
  for (const e of o.querySelectorAll('[id][data-value]')) f[e.id] = Number(e.dataset.value);
  const b = o.querySelector('.badge');
  return {figures: f, level: b ? b.dataset.level : '', seq: Number(o.dataset.seq)}; })()`, out)
}

// setStep moves a step slider of the Learn page to value as a user would and
// waits for its live element (out) to show the answer.
func setStep(b *browser, id string, value int, out string) liveState {
	b.t.Helper()
	return eval[liveState](b, fmt.Sprintf(`(async () => {
  const el = document.getElementById(%[1]q), o = document.getElementById(%[3]q), before = o.dataset.seq;
  const i = el.dataset.values.split(',').map(Number).indexOf(%[2]d);
  if (i < 0) throw new Error('%[1]s has no step %[2]d');
  el.value = i;
  el.dispatchEvent(new Event('input', {bubbles: true}));
  await new Promise((ok, bad) => {
    const w = new MutationObserver(() => { if (o.dataset.seq !== before) { w.disconnect(); ok(); } });
    w.observe(o, {attributes: true});
    setTimeout(() => bad(new Error('%[3]s did not update within 5 s')), 5000);
  });
  return %[4]s; })()`, id, value, out, readLive(out)))
}

func TestLearnPageInBrowser(t *testing.T) {
	exe := needChromium(t)
	started := time.Now()
	dir := t.TempDir()
	// A small real trace (Mooncake's format, 40 requests) for section 4's replay.
	trace, err := filepath.Abs(filepath.Join("..", "workload", "testdata", "trace_mooncake.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	base := startUI(t, filepath.Join(dir, "knee.db"), "--trace", trace)
	b := newBrowser(t, exe, dir)
	b.do(chromedp.Navigate(base + "/#learn"))
	b.waitFor(`document.getElementById('page').dataset.ready === '1'`)

	// Every claim the page states is checked on the engine as it loads.
	b.waitFor(`document.querySelectorAll('.claims li').length > 0 && document.querySelectorAll('.claims li[data-holds=""]').length === 0`)
	claims := eval[[]string](b, `[...document.querySelectorAll('.claims li')].map(l => l.dataset.holds + ' ' + l.id + ' ' + l.querySelector('.check').textContent)`)
	for _, c := range claims {
		t.Logf("claim: %s", c)
		if !strings.HasPrefix(c, "true ") {
			t.Errorf("the page shows a claim the engine does not bear out: %s", c)
		}
	}

	// 1. Prompt tokens move TTFT, output tokens move E2E and requests/s.
	tok0 := eval[liveState](b, readLive("tok-out"))
	tokP := setStep(b, "tok-prompt", 4096, "tok-out")
	ttftX, tpotX := tokP.Figures["tok-ttft"]/tok0.Figures["tok-ttft"], tokP.Figures["tok-tpot"]/tok0.Figures["tok-tpot"]
	t.Logf("section 1, prompt 512→4096: TTFT ×%.2f, TPOT ×%.2f", ttftX, tpotX)
	if !(ttftX > 3*tpotX) {
		t.Errorf("prompt slider: TTFT ×%.2f, TPOT ×%.2f; want TTFT to move far more", ttftX, tpotX)
	}
	setStep(b, "tok-prompt", 512, "tok-out")
	tokO := setStep(b, "tok-output", 1024, "tok-out")
	e2eX, rpsX := tokO.Figures["tok-e2e"]/tok0.Figures["tok-e2e"], tokO.Figures["tok-rps"]/tok0.Figures["tok-rps"]
	t.Logf("section 1, output 128→1024: E2E ×%.2f, requests/s ×%.2f", e2eX, rpsX)
	if !(e2eX > 3 && rpsX < 0.4) {
		t.Errorf("output slider: E2E ×%.2f, requests/s ×%.2f; want E2E up several-fold and requests/s down", e2eX, rpsX)
	}
	setStep(b, "tok-output", 128, "tok-out")

	// 2. Past what 32 sequences serve, TTFT grows and TPOT does not.
	ph0 := eval[liveState](b, readLive("ph-out"))
	ph1 := setStep(b, "ph-rate", 40, "ph-out")
	t.Logf("section 2, 20→40 req/s: p95 TTFT %.0f→%.0f ms, TPOT %.1f→%.1f ms", ph0.Figures["ph-ttft"], ph1.Figures["ph-ttft"], ph0.Figures["ph-tpot"], ph1.Figures["ph-tpot"])
	if !(ph1.Figures["ph-ttft"] > 5*ph0.Figures["ph-ttft"] && ph1.Figures["ph-tpot"] < 1.5*ph0.Figures["ph-tpot"]) {
		t.Errorf("rate slider: p95 TTFT %v → %v, TPOT %v → %v", ph0.Figures["ph-ttft"], ph1.Figures["ph-ttft"], ph0.Figures["ph-tpot"], ph1.Figures["ph-tpot"])
	}
	b.waitFor(`!!document.querySelector('#lp-queue[data-verdict]')`)
	if v := eval[string](b, `document.getElementById('lp-queue').dataset.verdict + ' ' + document.getElementById('lp-decode').dataset.verdict`); v != "queue_pressure decode_slowdown" {
		t.Errorf("worked pair on the Learn page: %q, want queue_pressure decode_slowdown", v)
	}

	// 3. The badge moves along the curve; the sweep marks the knee.
	var levels []string
	for _, u := range []int{16, 512} {
		s := setStep(b, "cv-users", u, "cv-out")
		levels = append(levels, s.Level)
		t.Logf("section 3, %d users: %.1f req/s, p95 TTFT %.0f ms, %s", u, s.Figures["cv-rps"], s.Figures["cv-ttft-p95"], s.Level)
	}
	if levels[0] != "healthy" || levels[1] != "saturated" {
		t.Errorf("badge at 16 and 512 users: %v, want healthy, saturated", levels)
	}
	b.waitFor(`document.querySelectorAll('#cv-throughput canvas, #cv-ttft canvas').length === 2 && document.getElementById('cv-throughput').dataset.knee !== ''`)
	t.Logf("section 3: %s", eval[string](b, `document.getElementById('cv-knee').textContent`))

	// 4. Fixed and varied lengths side by side, at another rate.
	rl := setStep(b, "rl-rate", 30, "rl-out")
	fixed, varied := rl.Figures["rl-fixed-e2e-p99"], rl.Figures["rl-varied-e2e-p99"]
	t.Logf("section 4, 30 req/s: p99 E2E fixed %.0f ms, varied %.0f ms; errors %v/%v", fixed, varied, rl.Figures["rl-fixed-errors"], rl.Figures["rl-varied-errors"])
	if !(varied > 1.5*fixed) {
		t.Errorf("varied lengths: p99 E2E %.0f ms against fixed %.0f ms, want a longer tail", varied, fixed)
	}
	// The trace's columns: the replay and fixed lengths at its means.
	trFixed, trReplay := rl.Figures["rl-trace-fixed-e2e-p99"], rl.Figures["rl-trace-e2e-p99"]
	t.Logf("section 4, trace at 30 req/s: %v requests replayed; p99 E2E fixed at its means %.0f ms, replay %.0f ms; p99 TTFT %.0f / %.0f ms",
		rl.Figures["rl-trace-requests"], trFixed, trReplay, rl.Figures["rl-trace-fixed-ttft-p99"], rl.Figures["rl-trace-ttft-p99"])
	if rl.Figures["rl-trace-requests"] != 40 || !(trReplay > 0 && trFixed > 0) {
		t.Errorf("trace replay column: %v", rl.Figures)
	}

	// 5. A trap's button moves the control that shows it.
	tr0 := eval[liveState](b, readLive("tr-out"))
	b.do(chromedp.Click("#trap-short"))
	b.waitFor(fmt.Sprintf(`Number(document.getElementById('tr-out').dataset.seq) > %d`, tr0.Seq))
	tr1 := eval[liveState](b, readLive("tr-out"))
	t.Logf("section 5, prompts 512→2048 at 256 users: %.1f → %.1f req/s", tr0.Figures["tr-rps"], tr1.Figures["tr-rps"])
	if !(tr1.Figures["tr-rps"] < 0.6*tr0.Figures["tr-rps"]) {
		t.Errorf("trap button: requests/s %v → %v, want it to fall", tr0.Figures["tr-rps"], tr1.Figures["tr-rps"])
	}
	b.do(chromedp.Click("#trap-busy"))
	b.waitFor(`document.getElementById('cv-users').dataset.value === '1024' && document.activeElement.id === 'cv-users'`)
	b.shot("learn")

	// Knowledge check: unanswered until chosen, then the explanation and its link.
	if s := eval[string](b, `document.getElementById('why-knee').hidden + ' ' + document.getElementById('q-knee').dataset.answered`); s != "true " {
		t.Errorf("before an answer: hidden+answered = %q, want the explanation hidden", s)
	}
	b.do(chromedp.Click("#q-knee-bend"))
	b.waitFor(`!document.getElementById('why-knee').hidden`)
	if v := eval[string](b, `document.getElementById('verdict-knee').dataset.correct`); v != "true" {
		t.Errorf("right answer judged %q", v)
	}
	b.do(chromedp.Click("#q-rps-misleads-mean"))
	if v := eval[string](b, `document.getElementById('verdict-rps-misleads').textContent`); !strings.HasPrefix(v, "Not quite") {
		t.Errorf("wrong answer judged %q", v)
	}
	b.do(chromedp.Click("#see-knee"))
	b.waitFor(`document.activeElement.id === 'cv-users' && location.hash === '#learn/curve'`)
	b.do(chromedp.Click("#read-tokens"))

	// A lab scenario run on the lab page counts too.
	b.do(chromedp.Navigate(base + "/#lab"))
	b.waitFor(`document.getElementById('lab-verdict')?.textContent === 'queue_pressure'`)

	// Progress survives a reload, then resets.
	b.do(chromedp.Navigate(base + "/#learn"))
	b.waitFor(`document.getElementById('page').dataset.ready === '1'`)
	kept := eval[string](b, `(() => { const p = document.getElementById('learn-progress').dataset;
	  return [p.read, p.answered, p.lab, document.getElementById('read-tokens').checked, document.getElementById('q-knee-bend').checked, document.getElementById('why-knee').hidden].join(' '); })()`)
	t.Logf("after a reload: read, answered, lab, checkbox, answer, explanation hidden = %s", kept)
	if kept != "1 2 1 true true false" {
		t.Errorf("progress after a reload: %q, want \"1 2 1 true true false\"", kept)
	}
	b.do(chromedp.Click("#learn-reset"))
	b.do(chromedp.Reload())
	b.waitFor(`document.getElementById('page').dataset.ready === '1'`)
	cleared := eval[string](b, `(() => { const p = document.getElementById('learn-progress').dataset;
	  return [p.read, p.answered, p.lab, document.getElementById('read-tokens').checked, document.getElementById('why-knee').hidden, localStorage.length].join(' '); })()`)
	if cleared != "0 0 0 false true 0" {
		t.Errorf("after reset and reload: %q, want \"0 0 0 false true 0\"", cleared)
	}

	// Keyboard alone: Tab to the prompt slider and move it, then on to the
	// first question and answer it.
	b.do(chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)`))
	tabTo := func(want string, limit int) int {
		for i := 1; i <= limit; i++ {
			b.do(chromedp.KeyEvent(kb.Tab))
			if strings.HasPrefix(eval[string](b, `document.activeElement.id`), want) {
				return i
			}
		}
		t.Fatalf("%d Tabs never reached %s (last focus: %q)", limit, want, eval[string](b, `document.activeElement.id`))
		return 0
	}
	n := tabTo("tok-prompt", 40)
	seq := eval[liveState](b, readLive("tok-out")).Seq
	b.do(chromedp.KeyEvent(kb.ArrowRight))
	b.waitFor(fmt.Sprintf(`Number(document.getElementById('tok-out').dataset.seq) > %d && document.getElementById('tok-prompt').dataset.value === '1024'`, seq))
	m := tabTo("q-ttft-flat-decode-", 80)
	b.do(chromedp.KeyEvent(" "))
	b.waitFor(`!document.getElementById('why-ttft-flat-decode').hidden`)
	t.Logf("keyboard: %d Tabs to the prompt slider (Arrow Right: 512 → 1024 tokens), %d more to the first question (Space answered it)", n, m)

	// Phone width: one column, no sideways scrolling.
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
	b.do(chromedp.Sleep(300 * time.Millisecond))
	if w := eval[float64](b, `document.documentElement.scrollWidth`); w > 400 {
		t.Errorf("at phone width the Learn page is %v px wide (scrolls sideways)", w)
	}
	b.do(chromedp.EmulateViewport(1280, 1000))
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('h-quiz').scrollIntoView()`))
	b.shot("learn-quiz")

	b.checkClean()
	took := time.Since(started)
	t.Logf("Learn page browser test took %v", took.Round(time.Millisecond))
}
