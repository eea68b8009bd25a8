package browsertest

import (
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestContradictionsInBrowser: issue 44's "contradictions to remove", each
// read from the page as a learner sees it (figures and sentences in the
// DOM, not the API's answers).
func TestContradictionsInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := startUI(t, filepath.Join(dir, "knee.db"))
	b := newBrowser(t, exe, dir)
	checkContradictions(t, b, base, "")
}

// TestContradictionsExportedInBrowser: the same checks against the exported
// site (the API in WebAssembly) on a plain static file server.
func TestContradictionsExportedInBrowser(t *testing.T) {
	exe := needChromium(t)
	dir := t.TempDir()
	base := serveExport(t, dir)
	b := newBrowser(t, exe, dir)
	checkContradictions(t, b, base, "export-")
}

func checkContradictions(t *testing.T, b *browser, base, prefix string) {
	b.do(chromedp.EmulateViewport(1400, 1000))

	// --- Simulator ---
	b.do(chromedp.Navigate(base + "/#sim"))
	b.waitFor(`Number(document.getElementById('sim-results')?.dataset.seq) > 0 && !!document.getElementById('pressure')`)

	// 4. The sentence about the TTFT percentiles says what the figures
	// beside it show, in and out of saturation.
	spread := func(load string) (p50, p95 float64, text string) {
		setSim(b, "load", load)
		r := eval[[]string](b, `(() => { const v = id => document.getElementById(id); return [v('m-ttft-p50').dataset.value, v('m-ttft-p95').dataset.value,
		  v('m-ttft-p50').querySelector('.value').textContent, v('m-ttft-p95').querySelector('.value').textContent, v('out-of-step').textContent]; })()`)
		p50, _ = strconv.ParseFloat(r[0], 64)
		p95, _ = strconv.ParseFloat(r[1], 64)
		if !strings.Contains(r[4], "p50 ("+r[2]+")") || !strings.Contains(r[4], "p95 TTFT ("+r[3]+")") {
			t.Errorf("%s users: the sentence does not quote the figures beside it (p50 %s, p95 %s): %q", load, r[2], r[3], r[4])
		}
		return p50, p95, r[4]
	}
	branches := map[bool]bool{}
	for _, load := range []string{"16", "1024"} {
		p50, p95, text := spread(load)
		apart := p95 > 1.05*p50
		branches[apart] = true
		t.Logf("%s users: TTFT p50 %.1f ms, p95 %.1f ms: %q", load, p50, p95, text)
		if says := strings.Contains(text, "sits above"); says != apart {
			t.Errorf("%s users: TTFT p50 %.1f ms, p95 %.1f ms, yet the page says %q", load, p50, p95, text)
		}
	}
	if len(branches) != 2 {
		t.Errorf("16 and 1,024 users did not show both a spread and closed-up percentiles: %v", branches)
	}

	// 3. One definition of the queue: the badge's "waiting" and the Queue
	// figures count the same wait; the front end is a phase of its own.
	setSim(b, "load", "1")
	q := eval[map[string]any](b, `(() => { const v = id => Number(document.getElementById(id)?.dataset.value);
	  return {reason: document.querySelector('#pressure span').textContent, q50: v('m-queue-p50'), fe50: v('m-front-end-p50'),
	    ttft50: v('m-ttft-p50'), title: document.getElementById('m-queue-p50').title}; })()`)
	t.Logf("1 user: %v", q)
	share := regexp.MustCompile(`waiting is ([0-9.]+)% of the time to first token`).FindStringSubmatch(fmt.Sprint(q["reason"]))
	if share == nil {
		t.Fatalf("the badge does not say how much of TTFT is waiting: %v", q["reason"])
	}
	pct, _ := strconv.ParseFloat(share[1], 64)
	q50, fe50, ttft50 := num(q["q50"]), num(q["fe50"]), num(q["ttft50"])
	// The badge's share is of means, the box a median: they agree within a
	// few points of TTFT, not 0% against a tenth of it.
	if math.Abs(100*q50/ttft50-pct) > 5 {
		t.Errorf("1 user: the badge says waiting is %.1f%% of TTFT, yet Queue p50 is %.1f ms of a %.1f ms TTFT", pct, q50, ttft50)
	}
	if !(fe50 > 0) || !strings.Contains(fmt.Sprint(q["title"]), "badge") {
		t.Errorf("1 user: the front end is not shown as its own phase (front end p50 %v), or the queue box does not say what it counts (%q)", q["fe50"], q["title"])
	}

	// 1. The current setting's dot lies on the sweep curve at a swept load.
	for _, load := range []string{"64", "256"} {
		s := setSim(b, "load", load)
		b.waitFor(fmt.Sprintf(`document.getElementById('curve-ttft')?.dataset.at === '%s' && !!document.getElementById('curve-ttft').dataset.ttft`, load))
		c := eval[map[string]any](b, curvePoint("curve-throughput", "curve-ttft", load))
		t.Logf("%s users: dot %.2f (the curve's throughput unit), p95 TTFT %.1f ms (box %.1f ms); curve %.2f, %.1f ms", load, num(c["dotRps"]), num(c["dotTTFT"]), s.TTFT, num(c["rps"]), num(c["ttft"]))
		if !onCurve(c) || num(c["dotTTFT"]) != s.TTFT {
			t.Errorf("%s users: the current point is not on the curve: %v (p95 TTFT box %.1f)", load, c, s.TTFT)
		}
	}
	b.shot(prefix + "contradictions-simulator")

	// --- Lab ---
	// 6. The sweep's sentence says what its table shows: the throughput's
	// best and its last row, and why the last is lower where it is.
	b.do(chromedp.Navigate(base + "/#lab"))
	b.waitFor(`!!document.getElementById('lab-sweep')`)
	b.do(chromedp.Click("#lab-sweep"))
	b.waitFor(`!!document.getElementById('lab-sweep-table') && !!document.getElementById('lab-lesson-text')`)
	lab := eval[map[string]any](b, `(() => { const rows = [...document.querySelectorAll('#lab-sweep-table tbody tr')].map(r => [...r.cells].map(c => c.textContent));
	  return {rows, text: document.getElementById('lab-lesson-text').textContent}; })()`)
	text := fmt.Sprint(lab["text"])
	var bestRPS, lastRPS float64
	var bestText, lastText string
	for i, row := range lab["rows"].([]any) {
		cells := row.([]any)
		v, _ := strconv.ParseFloat(fmt.Sprint(cells[1]), 64)
		if v > bestRPS {
			bestRPS, bestText = v, fmt.Sprint(cells[1])
		}
		if i == len(lab["rows"].([]any))-1 {
			lastRPS, lastText = v, fmt.Sprint(cells[1])
		}
	}
	dip := 1 - lastRPS/bestRPS
	t.Logf("Lab sweep: best %s req/s, last %s req/s (%.1f%% less): %q", bestText, lastText, 100*dip, text)
	if !strings.Contains(text, bestText+" req/s") || !strings.Contains(text, lastText+" req/s") {
		t.Errorf("the Lab sweep's text does not quote its table's best (%s) and last (%s) throughput: %q", bestText, lastText, text)
	}
	if dip > 0.02 && (strings.Contains(text, "flattens") || !strings.Contains(text, "warm-up")) {
		t.Errorf("the Lab sweep's throughput falls %.1f%% past its best, yet the text does not say why: %q", 100*dip, text)
	}

	// --- Learn ---
	b.do(chromedp.Navigate(base + "/#learn"))
	b.waitFor(`document.getElementById('page').dataset.ready === '1'`)

	// 2. The users slider shows every level the text names, in its order.
	b.waitFor(`Number(document.getElementById('cv-out').dataset.seq) > 0`)
	said := eval[string](b, `document.getElementById('cv-levels-text').textContent`)
	values := eval[string](b, `document.getElementById('cv-users').dataset.values`)
	var seen []string
	for _, v := range strings.Split(values, ",") {
		u, _ := strconv.Atoi(v)
		s := setStep(b, "cv-users", u, "cv-out")
		if len(seen) == 0 || seen[len(seen)-1] != s.Level {
			seen = append(seen, s.Level)
		}
	}
	var named []string
	for _, m := range regexp.MustCompile(`Healthy|Strained|Saturated`).FindAllString(said, -1) {
		named = append(named, strings.ToLower(m))
	}
	t.Logf("Learn §3 users %s: badge %v; the text: %q", values, seen, said)
	if strings.Join(named, ",") != strings.Join(seen, ",") {
		t.Errorf("Learn §3 says %v (%q) but the slider shows %v", named, said, seen)
	}

	// 1 again, on Learn §3: at every swept load the dot is on the curve.
	b.waitFor(`!!document.getElementById('cv-ttft')?.dataset.ttft`)
	for _, u := range []int{64, 256} {
		setStep(b, "cv-users", u, "cv-out")
		b.waitFor(fmt.Sprintf(`document.getElementById('cv-ttft').dataset.at === '%d'`, u))
		c := eval[map[string]any](b, curvePoint("cv-throughput", "cv-ttft", strconv.Itoa(u)))
		t.Logf("Learn §3, %d users: %v", u, c)
		if !onCurve(c) {
			t.Errorf("Learn §3, %d users: the slider's point is not on the curve: %v", u, c)
		}
	}

	// 5. The seed's load table names its load as offered req/s, and says why.
	b.waitFor(`!!document.getElementById('lesson-load-head')`)
	// (The note may say "users in flight" to explain why not; the head,
	// the rows and knee's sentences may not.)
	tab := eval[[]string](b, `(() => { const t = document.getElementById('lesson-table'), note = document.getElementById('lesson-load-note');
	  return [document.getElementById('lesson-load-head').textContent, note.textContent, t.textContent.replace(note.textContent, '')]; })()`)
	t.Logf("the seed's table: head %q; note %q", tab[0], tab[1])
	if !strings.Contains(tab[0], "req/s") || !strings.Contains(tab[1], "Little's law") || strings.Contains(tab[2], "in flight") || strings.Contains(tab[2], "users") {
		t.Errorf("the seed's load table reads its load as users: %q", tab[2])
	}

	// 8. The quiz cannot be gamed: every option chosen in turn (an answer
	// can be changed), each explained in words of its own; the right one is
	// at a different position and a different length rank in every question.
	type option struct {
		id, text, why string
		right         bool
	}
	qids := eval[[]string](b, `[...document.querySelectorAll('#learn-quiz fieldset.question')].map(f => f.id.slice(2))`)
	if len(qids) < 4 {
		t.Fatalf("the quiz has %d questions", len(qids))
	}
	posRight, rankRight := map[int][]string{}, map[int][]string{}
	for _, qid := range qids {
		opts := eval[[]string](b, fmt.Sprintf(`[...document.querySelectorAll('#q-%s input[type=radio]')].map(i => i.value)`, qid))
		var os []option
		for _, o := range opts {
			b.do(chromedp.Click(fmt.Sprintf("#q-%s-%s", qid, o)))
			r := eval[[]string](b, fmt.Sprintf(`(() => { const i = document.getElementById('q-%[1]s-%[2]s');
			  return [i.parentElement.querySelector('.choice-text').textContent, document.getElementById('option-why-%[1]s').textContent,
			    document.getElementById('verdict-%[1]s').dataset.correct, String(i.checked), document.getElementById('option-why-%[1]s').dataset.choice]; })()`, qid, o))
			if r[3] != "true" || r[4] != o {
				t.Errorf("%s: choosing %s after another answer did not take (checked %s, explained %s)", qid, o, r[3], r[4])
			}
			os = append(os, option{id: o, text: r[0], why: r[1], right: r[2] == "true"})
		}
		right, minLen, maxLen := -1, math.MaxInt, 0
		whys := map[string]bool{}
		for i, o := range os {
			if o.right {
				if right >= 0 {
					t.Errorf("%s: two right answers", qid)
				}
				right = i
			}
			minLen, maxLen = min(minLen, len([]rune(o.text))), max(maxLen, len([]rune(o.text)))
			if len(o.why) < 40 || whys[o.why] {
				t.Errorf("%s: option %s is not explained in words of its own: %q", qid, o.id, o.why)
			}
			whys[o.why] = true
		}
		if right < 0 {
			t.Fatalf("%s: no right answer among %v", qid, os)
		}
		if float64(maxLen) > 1.35*float64(minLen) {
			t.Errorf("%s: options from %d to %d characters: the odd length stands out", qid, minLen, maxLen)
		}
		// Length rank of the right answer: 1 for the longest.
		lens := make([]int, len(os))
		for i, o := range os {
			lens[i] = len([]rune(o.text))
		}
		sorted := append([]int(nil), lens...)
		sort.Sort(sort.Reverse(sort.IntSlice(sorted)))
		rank := sort.Search(len(sorted), func(i int) bool { return sorted[i] <= lens[right] }) + 1
		posRight[right] = append(posRight[right], qid)
		rankRight[rank] = append(rankRight[rank], qid)
		t.Logf("%s: right answer %q at position %d, length rank %d of %v", qid, os[right].id, right+1, rank, lens)
	}
	for p, qs := range posRight {
		if len(qs) > 1 {
			t.Errorf("position %d is the right answer in %v: position gives it away", p+1, qs)
		}
	}
	for r, qs := range rankRight {
		if len(qs) > 1 {
			t.Errorf("length rank %d is the right answer in %v: length gives it away", r, qs)
		}
	}
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('h-quiz').scrollIntoView()`))
	b.shot(prefix + "contradictions-quiz")
	b.checkClean()
}

// curvePoint reads a throughput chart (tput) and a p95 TTFT chart (ttft):
// their curves at load and the current setting's dot drawn on each.
func curvePoint(tput, ttft, load string) string {
	return fmt.Sprintf(`(() => { const t = document.getElementById(%q).dataset, l = document.getElementById(%q).dataset;
	  const i = t.loads.split(',').map(Number).indexOf(%s);
	  return {i, rps: Number(t.rps.split(',')[i]), ttft: Number(l.ttft.split(',')[i]), dotRps: Number(t.dot), dotTTFT: Number(l.dot)}; })()`, tput, ttft, load)
}

// onCurve: the load is a swept one and the dot sits on both curves (the
// throughput curve's figures are written to two decimals).
func onCurve(c map[string]any) bool {
	return num(c["i"]) >= 0 && math.Abs(num(c["dotRps"])-num(c["rps"])) <= 0.006 && num(c["dotTTFT"]) == num(c["ttft"]) && num(c["dotTTFT"]) > 0
}
