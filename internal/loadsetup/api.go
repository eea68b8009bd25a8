package loadsetup

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/slo"
)

// CheckAPI checks --api for bench and sweep.
func CheckAPI(api string) error {
	if slices.Contains(openai.APIs, api) {
		return nil
	}
	return badinput.Errorf("--api %q: want one of %s", api, strings.Join(openai.APIs, ", "))
}

// Grace checks --grace and --request-timeout and returns the grace for
// loadgen, where 0 means its default: --grace 0 is no grace at all.
func Grace(grace, requestTimeout time.Duration) (time.Duration, error) {
	switch {
	case grace < 0:
		return 0, badinput.Errorf("--grace %v: want 0 (cancel in-flight requests when the run ends) or a positive duration", grace)
	case requestTimeout < 0:
		return 0, badinput.Errorf("--request-timeout %v: want a positive duration (0: none)", requestTimeout)
	case grace == 0:
		return -1, nil
	}
	return grace, nil
}

// EOS is --ignore-eos: true, false, or (Auto) what a probe of the server
// finds it accepts.
type EOS struct{ Auto, Value bool }

// ParseEOS reads --ignore-eos.
func ParseEOS(s string) (EOS, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return EOS{Auto: true}, nil
	case "true", "1", "yes":
		return EOS{Value: true}, nil
	case "false", "0", "no":
		return EOS{}, nil
	}
	return EOS{}, badinput.Errorf("--ignore-eos %q: want auto, true or false", s)
}

// ForAPI is what is asked of api: ignore_eos and min_tokens mean something
// only to the OpenAI-compatible generation APIs, so for the others true is
// refused and nothing is sent. note says what Ollama's native API does
// instead.
func (e EOS) ForAPI(api string) (sent EOS, note string, err error) {
	switch {
	case api == openai.APIOllama:
		if e.Value && !e.Auto {
			return EOS{}, "", badinput.Errorf("--ignore-eos true: Ollama's native API has no ignore_eos (outputs end at EOS or at max tokens, sent as options.num_predict); use auto or false")
		}
		return EOS{}, "Ollama's native API has no ignore_eos or min_tokens: outputs may end at EOS before the requested length", nil
	case !EOSApplies(api):
		// Anthropic's API has no such fields; embeddings and rerank
		// generate nothing.
		if e.Value && !e.Auto {
			return EOS{}, "", badinput.Errorf("--ignore-eos true: --api %s has no ignore_eos or min_tokens (messages: outputs end at the model's stop or max_tokens; embeddings and rerank generate nothing); use auto or false", api)
		}
		return EOS{}, "", nil
	}
	return e, "", nil
}

// EOSApplies reports whether ignore_eos and min_tokens mean anything to
// api: only the OpenAI-compatible generation APIs take them.
func EOSApplies(api string) bool { return api == openai.APIChat || api == openai.APICompletions }

// Apply sets cfg's ignore_eos and min_tokens: as given, or (Auto) what a
// probe of the server at target finds it accepts. The notes say what the
// probe found.
func (e EOS) Apply(ctx context.Context, cfg *loadgen.Config, api, target, apiKey, model string) ([]string, error) {
	sent, note, err := e.ForAPI(api)
	if err != nil {
		return nil, err
	}
	cfg.IgnoreEOS, cfg.MinTokens = sent.Value, sent.Value
	if note != "" {
		return []string{note}, nil
	}
	if !sent.Auto {
		return nil, nil
	}
	endpoint, err := openai.Endpoint(target, api)
	if err != nil {
		return nil, badinput.Errorf("--url %q: %v", target, err)
	}
	probeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	pr, err := openai.Probe(probeCtx, http.DefaultClient, endpoint, apiKey, model, api)
	cancel()
	if err != nil {
		return []string{fmt.Sprintf("probe for ignore_eos/min_tokens failed (%v); not sending them", err)}, nil
	}
	cfg.IgnoreEOS, cfg.MinTokens = pr.IgnoreEOS, pr.MinTokens
	if !pr.IgnoreEOS && !pr.MinTokens {
		return []string{"the server accepts neither ignore_eos nor min_tokens: outputs may be shorter than requested"}, nil
	}
	return nil, nil
}

// CheckAPIObjectives refuses objectives an API cannot be judged by: an
// embeddings or rerank answer comes whole, with no first token and no
// gaps between tokens.
func CheckAPIObjectives(api string, set slo.Set) error {
	if !openai.ItemsAPI(api) {
		return nil
	}
	for _, o := range set {
		switch o.Metric {
		case "ttft", "ttft_sched", "itl", "tpot":
			return badinput.Errorf("--slo %s: --api %s is answered whole, with no first token or token gaps, so it has no %s; judge it by e2e, e.g. 'p95(e2e)<500ms'", o, api, o.Metric)
		}
	}
	return nil
}

// Endpoints shape the requests of the APIs beyond chat and completions:
// embeddings' batches, rerank's documents and path, and image prompts.
// Zero means not given, so a flag given to an API it does not apply to
// is refused.
type Endpoints struct {
	BatchSize, Documents int
	RerankPath           string
	Images               int
	ImageSize            string
	ImageFormat          string
	ImageTokens          int // what the target counts per image (0: Qwen2-VL's rule)
	// resolved holds the checked values (Check) for Set.
	resolved loadgen.Config
}

// ConfigKV is what the report's configuration says of the flags given.
func (e *Endpoints) ConfigKV() [][2]string {
	var out [][2]string
	r := &e.resolved
	if e.BatchSize > 0 {
		out = append(out, [2]string{"batch_size", strconv.Itoa(e.BatchSize)})
	}
	if e.Documents > 0 {
		out = append(out, [2]string{"documents", strconv.Itoa(e.Documents)})
	}
	if r.RerankPath != "" {
		out = append(out, [2]string{"rerank_path", r.RerankPath})
	}
	if r.Images > 0 {
		out = append(out, [2]string{"images", fmt.Sprintf("%d × %dx%d %s, counted as %d prompt tokens each", r.Images, r.ImageWidth, r.ImageHeight, r.ImageFormat, r.ImageTokens)},
			// The report's first screen shows the workload line.
			[2]string{"workload", fmt.Sprintf("%d %dx%d images per prompt (%d tokens each, in the requested input)", r.Images, r.ImageWidth, r.ImageHeight, r.ImageTokens)})
	}
	return out
}

// Set puts the checked values into cfg.
func (e *Endpoints) Set(cfg *loadgen.Config) {
	r := &e.resolved
	cfg.Items, cfg.RerankPath = r.Items, r.RerankPath
	cfg.Images, cfg.ImageWidth, cfg.ImageHeight, cfg.ImageFormat, cfg.ImageSeed = r.Images, r.ImageWidth, r.ImageHeight, r.ImageFormat, r.ImageSeed
	cfg.ImageTokens = r.ImageTokens
}

// Check checks the flags against the APIs the run speaks (--api, and a
// mix's classes') and keeps their values for Set; seed draws the
// images.
func (e *Endpoints) Check(apis []string, seed uint64) error {
	cfg := &e.resolved
	*cfg = loadgen.Config{}
	api := strings.Join(apis, ", ")
	need := func(flag string, given bool, want ...string) error {
		if given && !slices.ContainsFunc(apis, func(a string) bool { return slices.Contains(want, a) }) {
			return badinput.Errorf("%s applies to --api %s, not %s", flag, strings.Join(want, " or "), api)
		}
		return nil
	}
	for _, c := range []struct {
		flag  string
		given bool
		apis  []string
	}{
		{"--batch-size", e.BatchSize != 0, []string{openai.APIEmbeddings}},
		{"--documents", e.Documents != 0, []string{openai.APIRerank}},
		{"--rerank-path", e.RerankPath != "", []string{openai.APIRerank}},
		{"--images", e.Images != 0, []string{openai.APIChat, openai.APIMessages}},
	} {
		if err := need(c.flag, c.given, c.apis...); err != nil {
			return err
		}
	}
	switch {
	case e.BatchSize < 0:
		return badinput.Errorf("--batch-size %d: want 1 or more inputs per request", e.BatchSize)
	case e.Documents < 0:
		return badinput.Errorf("--documents %d: want 1 or more documents per request", e.Documents)
	case e.Images < 0:
		return badinput.Errorf("--images %d: want 0 or more images per prompt", e.Images)
	case e.ImageTokens < 0:
		return badinput.Errorf("--image-tokens %d: want 0 (⌈W/28⌉·⌈H/28⌉ from the size) or more", e.ImageTokens)
	case e.Images == 0 && e.ImageTokens != 0:
		return badinput.Errorf("--image-tokens needs --images N")
	case e.Images == 0 && (e.ImageSize != "" || e.ImageFormat != ""):
		return badinput.Errorf("--image-size and --image-format need --images N")
	}
	if e.RerankPath != "" {
		if err := openai.CheckRerankPath(e.RerankPath); err != nil {
			return badinput.Errorf("--rerank-path %q: want %s (vLLM's request shape) or %s (TEI's)", e.RerankPath, openai.RerankVLLM, openai.RerankTEI)
		}
	}
	cfg.Items = max(e.BatchSize, e.Documents)
	cfg.RerankPath = e.RerankPath
	if e.Images == 0 {
		return nil
	}
	w, h, err := openai.ParseImageSize(e.ImageSize)
	if err != nil {
		return badinput.Errorf("--image-size %q: %v", e.ImageSize, err)
	}
	format := e.ImageFormat
	if format == "" {
		format = "png"
	}
	if !slices.Contains(openai.ImageFormats, format) {
		return badinput.Errorf("--image-format %q: want png or jpeg", format)
	}
	cfg.Images, cfg.ImageWidth, cfg.ImageHeight, cfg.ImageFormat, cfg.ImageSeed = e.Images, w, h, format, seed
	// As Qwen2-VL counts an image (one token per 28-pixel patch, 2×2 merged
	// 14-pixel ones), and knee serve by default.
	cfg.ImageTokens = openai.QwenImageTokens(w, h)
	if e.ImageTokens > 0 {
		cfg.ImageTokens = e.ImageTokens
	}
	return nil
}

// ProbeRerank settles the rerank path when the run speaks rerank and
// --rerank-path was not given: one probe of each path (openai's
// ProbeRerankPath), its finding kept for Set and the report's
// configuration, and said in a note. A server answering neither keeps
// vLLM's path; the run's records then show how it answers.
func (e *Endpoints) ProbeRerank(ctx context.Context, apis []string, target, apiKey, model string) []string {
	if e.RerankPath != "" || !slices.Contains(apis, openai.APIRerank) {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	path, err := openai.ProbeRerankPath(pctx, http.DefaultClient, target, apiKey, model)
	if err != nil {
		e.resolved.RerankPath = openai.RerankVLLM
		return []string{fmt.Sprintf("rerank path: probing found none (%v); sending vLLM's shape to %s", err, openai.RerankVLLM)}
	}
	e.resolved.RerankPath = path
	shape := "vLLM's request shape"
	if path == openai.RerankTEI {
		shape = "TEI's request shape"
	}
	return []string{fmt.Sprintf("rerank path: %s (%s), probed: no --rerank-path given, the server answered a rerank there", path, shape)}
}
