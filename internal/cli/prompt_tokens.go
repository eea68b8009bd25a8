package cli

import (
	"context"
	"fmt"

	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/prompttok"
	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/workload"
)

// prompts is the flags' prompt choice (prompttok: prompts exact in the
// server's own tokens).
func (w *workloadFlags) promptChoice() *prompttok.Choice {
	return &prompttok.Choice{Tokenizer: w.Tokenizer, Given: w.fs != nil && w.fs.Changed("tokenizer"), Server: w.prompts.Server, Overhead: w.prompts.Overhead}
}

// resolvePrompts decides what builds the prompts against a real server
// and measures what it adds to every prompt; notes for the report.
func (w *workloadFlags) resolvePrompts(ctx context.Context, target, apiKey, model, api string) []string {
	c := w.promptChoice()
	notes := c.Resolve(ctx, target, apiKey, model, api)
	w.prompts = loadsetup.Prompts{Server: c.Server, Overhead: c.Overhead}
	return notes
}

func (w *workloadFlags) promptsNote() string { return w.promptChoice().Note() }
func (w *workloadFlags) promptOffNote(pc *stats.PromptCheck) string {
	return w.promptChoice().OffNote(pc)
}

// promptWatch warns on the live output, once, when the first completed
// requests already show served prompt lengths off (stats.PromptWatch).
type promptWatch struct {
	w    stats.PromptWatch
	warn func(medianPct float64)
}

func (p *promptWatch) add(r *record.Request) {
	if med, warn := p.w.Add(r); warn {
		p.warn(med)
	}
}

// promptsFor resolves how prompts are built against a real target and
// returns the generator built that way, with notes for the report.
func (w *workloadFlags) promptsFor(ctx context.Context, target, apiKey, model, api string) (*workload.Generator, []string, error) {
	notes := w.resolvePrompts(ctx, target, apiKey, model, api)
	gen, err := w.generator()
	if err != nil && w.prompts.Server != nil {
		// The server's tokenizer cannot build prompts (no single-token
		// words): build with the local one; the usage check still runs.
		notes = append(notes, fmt.Sprintf("the server's tokenizer cannot build exact prompts (%v): built with %s instead", err, w.Tokenizer))
		w.prompts.Server = nil
		gen, err = w.generator()
	}
	if err != nil {
		return nil, nil, err
	}
	return gen, append(notes, w.promptChoice().Verify(gen)...), nil
}
