// Package prompttok makes prompts exact in the server's own tokens: with
// --tokenizer, prompts are built with that tokenizer; without it, against
// a real server, knee asks the server's /tokenize (vLLM, SGLang,
// llama.cpp) and builds with it, else uses the default tokenizer. Either
// way one tiny request measures what the server adds to every prompt (its
// chat template), and every request's usage.prompt_tokens is compared with
// what was asked (stats.PromptCheck); the notes here explain the outcome.
package prompttok

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
)

// probeText is the text of the overhead probe: one token in every
// tokenizer knee meets, so the probe measures the template, not the text.
const probeText = "hello"

// Choice is what builds a run's prompts.
type Choice struct {
	Tokenizer string                    // --tokenizer (or its default)
	Given     bool                      // --tokenizer was given (flag or scenario)
	Server    *workload.ServerTokenizer // the server's, when Resolve found a usable /tokenize
	Overhead  int                       // tokens the server adds to every prompt
}

// Resolve decides what builds the prompts for a run against a real server
// and measures the server's per-prompt overhead; the generator built next
// uses both. The notes say what was decided, for the report.
func (c *Choice) Resolve(ctx context.Context, target, apiKey, model, api string) []string {
	client := &http.Client{Timeout: 30 * time.Second}
	var notes []string
	if !c.Given && api != openai.APIOllama {
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
				c.Server = tk
			} else {
				err = terr
			}
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("the server offers no usable /tokenize (%v): prompts are built with %s, which may count differently from the server (--tokenizer takes the server's tokenizer.json)", err, c.Tokenizer))
		}
	}
	var tk workload.Tokenizer
	if c.Server != nil {
		tk = c.Server
	} else {
		local, err := workload.LoadTokenizer(c.Tokenizer)
		if err != nil {
			return notes // building the generator reports the bad --tokenizer
		}
		tk = local
	}
	endpoint, err := openai.Endpoint(target, api)
	if err != nil {
		return notes
	}
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	served, err := openai.PromptTokens(pctx, client, endpoint, apiKey, model, api, probeText)
	cancel()
	switch own := tk.Count(probeText); {
	case err != nil:
		notes = append(notes, fmt.Sprintf("could not measure what the server adds to every prompt (%v): prompts are built as if it added nothing", err))
	case own > 0 && served >= own:
		c.Overhead = served - own
	}
	return notes
}

// Note names what built the prompts and what the server adds.
func (c *Choice) Note() string {
	name := c.Tokenizer
	if c.Server != nil {
		name = c.Server.Name()
	}
	s := "prompts built with " + name
	if c.Overhead > 0 {
		s += fmt.Sprintf("; the server adds %d %s to every prompt (chat template, measured with one request), included in prompt_tokens_requested", c.Overhead, plural(c.Overhead, "token", "tokens"))
	}
	return s
}

// Verify checks, once, that prompts counted from their pieces count the
// same when the server counts them whole.
func (c *Choice) Verify(gen *workload.Generator) []string {
	if c.Server == nil || gen.DatasetSize() > 0 {
		return nil
	}
	samples := make([]string, 3)
	for i := range samples {
		samples[i] = gen.Item(int64(i)).Prompt
	}
	var notes []string
	if err := c.Server.VerifyAdditive(samples); err != nil {
		notes = append(notes, err.Error())
	}
	if err := c.Server.Err(); err != nil {
		notes = append(notes, fmt.Sprintf("warning: %s: %v", c.Server.Name(), err))
	}
	return notes
}

// OffNote says why served prompt lengths are off, when they are, and when
// a tokenizer could only come within one token.
func (c *Choice) OffNote(pc *stats.PromptCheck) string {
	switch {
	case pc == nil:
		return ""
	case pc.Off():
		why := "the prompts were built with " + c.Tokenizer + ", which counts differently from the server's own tokenizer (give --tokenizer the server's tokenizer.json, or use a server with /tokenize)"
		if c.Server != nil {
			why = "the prompts were built with " + c.Server.Name() + ", whose counts disagree with the server's usage (another model behind the same URL, or a template /tokenize does not apply)"
		} else if c.Given {
			why = "the prompts were built with --tokenizer " + c.Tokenizer + ", which does not count like the server (a tokenizer.json of another model?)"
		}
		return fmt.Sprintf("why served prompt lengths are %+.1f%% off: %s", pc.MedianOffPct, why)
	case pc.Exact < pc.Compared && pc.WithinOne == pc.Compared:
		return fmt.Sprintf("%d of %d requests were served one token off the requested prompt length: the tokenizer cannot make those lengths exactly from whole words", pc.Compared-pc.Exact, pc.Compared)
	}
	return ""
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
