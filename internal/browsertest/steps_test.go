package browsertest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// stepState is what the step view shows of the step on screen.
type stepState struct {
	Step, Decode, Prefill, PrefillTokens, Waiting, Preempted, Slots, Budget int
	Busy, Drawn                                                             int // cells coloured decode or prefill; slot cells
	Text                                                                    string
}

const readStep = `(() => { const d = document.getElementById('engine-steps').dataset, n = k => Number(d[k]);
  return {Step: n('step'), Decode: n('decode'), Prefill: n('prefill'), PrefillTokens: n('prefillTokens'), Waiting: n('waiting'), Preempted: n('preempted'),
    Slots: n('slots'), Budget: n('budget'), Busy: document.querySelectorAll('#es-slots .es-d, #es-slots .es-p').length,
    Drawn: document.querySelectorAll('#es-slots .es-cell').length, Text: document.getElementById('es-text').textContent}; })()`

// The CS264-style view of the engine on the Lifecycle page (issue 44):
// the simulated run's own engine steps, one at a time — the first step
// prefills only, the slots fill, a prefill chunk joins a decode batch, and
// with long requests the KV cache runs out and a step preempts. Every
// figure is read from the page and checked against the engine's limits
// shown beside it.
func TestEngineStepViewInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := startUI(t, filepath.Join(dir, "knee.db"))
	b := newBrowser(t, exe, dir)
	b.do(chromedp.Navigate(base + "/#lifecycle"))
	b.waitFor(`document.getElementById('lc-status')?.dataset.ready === '1' && !!document.getElementById('engine-steps')?.dataset.step`)
	check := func(s stepState) {
		t.Helper()
		if s.Decode+s.Prefill > s.Slots || s.Decode+s.PrefillTokens > s.Budget || (s.Prefill > 0) != (s.PrefillTokens > 0) ||
			(s.Slots == s.Drawn && s.Busy != s.Decode+s.Prefill) {
			t.Errorf("step %d: %+v: want decode + prefill requests within the slots (and drawn so), their tokens within the budget", s.Step, s)
		}
	}
	first := eval[stepState](b, readStep)
	t.Logf("first step: %s", first.Text)
	check(first)
	if first.Step != 0 || first.Decode != 0 || first.Prefill == 0 {
		t.Errorf("the first step %+v: want step 0, prefill only", first)
	}
	mixed, most := false, 0
	for i := 0; i < 60 && !mixed; i++ {
		b.do(chromedp.Click("#es-next"))
		s := eval[stepState](b, readStep)
		check(s)
		if s.Step != i+1 {
			t.Fatalf("after %d presses of Next step the view shows step %d", i+1, s.Step)
		}
		most = max(most, s.Decode+s.Prefill)
		if s.Decode > 0 && s.Prefill > 0 {
			mixed = true
			t.Logf("a prefill chunk joins a decode batch: %s", s.Text)
		}
	}
	if !mixed || most <= first.Prefill {
		t.Errorf("60 steps on, no step mixed prefill into a decode batch (%v) or the batch never grew past the first step's %d (most %d)", mixed, first.Prefill, most)
	}
	b.shotOf("#engine-steps", "lifecycle-engine-steps")

	// Long prompts and answers overflow the KV cache: a step preempts.
	b.do(chromedp.Navigate(base + "/#sim"))
	b.waitFor(`Number(document.getElementById('sim-results')?.dataset.seq) > 0`)
	setSim(b, "input-tokens", "4096")
	setSim(b, "output-tokens", "2048")
	b.do(chromedp.Navigate(base + "/#lifecycle"))
	b.waitFor(`document.getElementById('lc-status')?.dataset.ready === '1' && !!document.getElementById('engine-steps')?.dataset.step`)
	b.do(chromedp.Click("#es-preempt"))
	s := eval[stepState](b, readStep)
	t.Logf("4096-token prompts, 2048-token answers: %s", s.Text)
	check(s)
	if s.Preempted == 0 {
		t.Errorf("Next preemption found none in the steps shown: %+v", s)
	}
	b.shotOf("#engine-steps", "lifecycle-engine-steps-preempt")
	b.do(chromedp.EmulateViewport(390, 844))
	b.do(chromedp.Sleep(300 * time.Millisecond)) // the layout settles
	b.shotOf("#engine-steps", "lifecycle-engine-steps-phone")
	b.checkClean()
}
