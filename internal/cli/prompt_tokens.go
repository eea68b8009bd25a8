package cli

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
	"github.com/spf13/pflag"
)

// Prompts exact in the server's own tokens: with --tokenizer, prompts are
// built with that tokenizer; without it, against a real server, knee asks
// the server's /tokenize (vLLM, SGLang, llama.cpp) and builds with it, else
// uses the default tokenizer. Either way one tiny request measures what the
// server adds to every prompt (its chat template), and every request's
// usage.prompt_tokens is compared with what was asked (stats.PromptCheck).

// promptProbeText is the text of the overhead probe: one token in every
// tokenizer knee meets, so the probe measures the template, not the text.
const promptProbeText = "hello"

// tokenizerGiven reports whether --tokenizer was set (flag or scenario).
func (w *workloadFlags) tokenizerGiven() bool {
	given := false
	w.fs.Visit(func(f *pflag.Flag) { given = given || f.Name == "tokenizer" })
	return given
}

// resolvePrompts decides what builds the prompts for a run against a real
// server and measures the server's per-prompt overhead; the generator
// built next uses both. The notes say what was decided, for the report.
func (w *workloadFlags) resolvePrompts(ctx context.Context, target, apiKey, model, api string) []string {
	client := &http.Client{Timeout: 30 * time.Second}
	var notes []string
	if !w.tokenizerGiven() && api != openai.APIOllama {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		st, err := openai.ProbeTokenize(pctx, client, target, apiKey, model, api)
		cancel()
		if err == nil {
			tk, terr := workload.NewServerTokenizer(st.Describe(), func(s string) (int, error) {
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				return st.Count(cctx, s)
			})
			if terr == nil {
				w.serverTok = tk
			} else {
				err = terr
			}
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("the server offers no usable /tokenize (%v): prompts are built with %s, which may count differently from the server (--tokenizer takes the server's tokenizer.json)", err, w.tokenizer))
		}
	}
	var tk workload.Tokenizer
	if w.serverTok != nil {
		tk = w.serverTok
	} else {
		local, err := workload.LoadTokenizer(w.tokenizer)
		if err != nil {
			return notes // generator() reports the bad --tokenizer
		}
		tk = local
	}
	endpoint, err := openai.Endpoint(target, api)
	if err != nil {
		return notes
	}
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	served, err := openai.PromptTokens(pctx, client, endpoint, apiKey, model, api, promptProbeText)
	cancel()
	switch own := tk.Count(promptProbeText); {
	case err != nil:
		notes = append(notes, fmt.Sprintf("could not measure what the server adds to every prompt (%v): prompts are built as if it added nothing", err))
	case own > 0 && served >= own:
		w.promptOverhead = served - own
	}
	return notes
}

// promptsNote names what built the prompts and what the server adds.
func (w *workloadFlags) promptsNote() string {
	name := w.tokenizer
	if w.serverTok != nil {
		name = w.serverTok.Name()
	}
	s := "prompts built with " + name
	if w.promptOverhead > 0 {
		s += fmt.Sprintf("; the server adds %d %s to every prompt (chat template, measured with one request), included in prompt_tokens_requested", w.promptOverhead, plural(w.promptOverhead, "token", "tokens"))
	}
	return s
}

// verifyServerPrompts checks, once, that prompts counted from their pieces
// count the same when the server counts them whole.
func (w *workloadFlags) verifyServerPrompts(gen *workload.Generator) []string {
	if w.serverTok == nil || gen.DatasetSize() > 0 {
		return nil
	}
	samples := make([]string, 3)
	for i := range samples {
		samples[i] = gen.Item(int64(i)).Prompt
	}
	var notes []string
	if err := w.serverTok.VerifyAdditive(samples); err != nil {
		notes = append(notes, err.Error())
	}
	if err := w.serverTok.Err(); err != nil {
		notes = append(notes, fmt.Sprintf("warning: %s: %v", w.serverTok.Name(), err))
	}
	return notes
}

// promptOffNote says why served prompt lengths are off, when they are,
// and when a tokenizer could only come within one token.
func (w *workloadFlags) promptOffNote(pc *stats.PromptCheck) string {
	switch {
	case pc == nil:
		return ""
	case pc.Off():
		why := "the prompts were built with " + w.tokenizer + ", which counts differently from the server's own tokenizer (give --tokenizer the server's tokenizer.json, or use a server with /tokenize)"
		if w.serverTok != nil {
			why = "the prompts were built with " + w.serverTok.Name() + ", whose counts disagree with the server's usage (another model behind the same URL, or a template /tokenize does not apply)"
		} else if w.tokenizerGiven() {
			why = "the prompts were built with --tokenizer " + w.tokenizer + ", which does not count like the server (a tokenizer.json of another model?)"
		}
		return fmt.Sprintf("why served prompt lengths are %+.1f%% off: %s", pc.MedianOffPct, why)
	case pc.Exact < pc.Compared && pc.WithinOne == pc.Compared:
		return fmt.Sprintf("%d of %d requests were served one token off the requested prompt length: the tokenizer cannot make those lengths exactly from whole words", pc.Compared-pc.Exact, pc.Compared)
	}
	return ""
}

// promptWatch warns on the live output, once, when the first completed
// requests already show served prompt lengths more than 2% off.
type promptWatch struct {
	mu     sync.Mutex
	off    []float64
	warned bool
	warn   func(medianPct float64)
}

const promptWatchAfter = 16

func (p *promptWatch) add(r *record.Request) {
	if !r.OK() || r.TokenSource != record.TokensFromUsage || r.PromptTokensRequested <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.warned {
		return
	}
	p.off = append(p.off, float64(r.InputTokens-r.PromptTokensRequested)/float64(r.PromptTokensRequested))
	if len(p.off) < promptWatchAfter {
		return
	}
	med := 100 * stats.Median(p.off)
	if math.Abs(med) > stats.PromptOffLimitPct {
		p.warned = true
		p.warn(med)
	}
	p.off = p.off[:0]
}

// promptsFor resolves how prompts are built against a real target and
// returns the generator built that way, with notes for the report.
func (w *workloadFlags) promptsFor(ctx context.Context, target, apiKey, model, api string) (*workload.Generator, []string, error) {
	notes := w.resolvePrompts(ctx, target, apiKey, model, api)
	gen, err := w.generator()
	if err != nil && w.serverTok != nil {
		// The server's tokenizer cannot build prompts (no single-token
		// words): build with the local one; the usage check still runs.
		notes = append(notes, fmt.Sprintf("the server's tokenizer cannot build exact prompts (%v): built with %s instead", err, w.tokenizer))
		w.serverTok = nil
		gen, err = w.generator()
	}
	if err != nil {
		return nil, nil, err
	}
	return gen, append(notes, w.verifyServerPrompts(gen)...), nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
