package cli

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/simserver"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/spf13/pflag"
)

// apiUsage is the --api help of the commands that measure a target.
const apiUsage = "API: chat (/v1/chat/completions), completions (/v1/completions), ollama (Ollama's native /api/chat, which reports per-request server durations), embeddings (/v1/embeddings), rerank (--rerank-path) or messages (Anthropic's /v1/messages)"

// checkAPI validates --api for bench and sweep.
func checkAPI(api string) error {
	if slices.Contains(openai.APIs, api) {
		return nil
	}
	return Usagef("--api %q: want one of %s", api, strings.Join(openai.APIs, ", "))
}

// ollamaEOS says what --ignore-eos means with --api ollama: the native API
// has neither ignore_eos nor min_tokens, so only auto and false make sense.
func ollamaEOS(eos triState) (note string, err error) {
	if eos.value && !eos.auto {
		return "", Usagef("--ignore-eos true: Ollama's native API has no ignore_eos (outputs end at EOS or at max tokens, sent as options.num_predict); use auto or false")
	}
	return "Ollama's native API has no ignore_eos or min_tokens: outputs may end at EOS before the requested length", nil
}

// optFloat is a float flag that may be left unset.
type optFloat struct {
	v   float64
	set bool
}

func (o *optFloat) String() string {
	if !o.set {
		return ""
	}
	return strconv.FormatFloat(o.v, 'g', -1, 64)
}

func (o *optFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("want a number >= 0, e.g. 0 or 0.7")
	}
	o.v, o.set = v, true
	return nil
}

// apply puts the temperature into cfg when it was given.
func (o *optFloat) Type() string { return "float" }

func (o *optFloat) apply(cfg *loadgen.Config) { cfg.Temperature, cfg.HasTemperature = o.v, o.set }

const temperatureUsage = "sampling temperature sent with every request (default: the server's own)"

// targetFlags say which server to load and how to talk to it: knee bench's
// and knee sweep's Target group.
type targetFlags struct {
	url, model, api, apiKeyEnv string
	requestTimeout, grace      time.Duration
	ignoreEOS                  string
	temperature                optFloat
	endpoints                  endpointFlags
}

// register adds the Target flags; noURL says what runs without --url and
// graceWhen when --grace starts counting.
func (t *targetFlags) register(fs *pflag.FlagSet, noURL, graceWhen string) {
	fs.StringVar(&t.url, "url", "", "OpenAI-compatible base URL, e.g. http://localhost:8000 (default: "+noURL+")")
	fs.StringVar(&t.model, "model", "", "model name sent to the server (with no --url: the simulated model preset)")
	fs.StringVar(&t.api, "api", "chat", apiUsage)
	fs.Var(&t.temperature, "temperature", temperatureUsage)
	fs.StringVar(&t.apiKeyEnv, "api-key-env", "", "name of the environment variable holding the API key (never printed or stored)")
	fs.DurationVar(&t.requestTimeout, "request-timeout", 5*time.Minute, "give up on one request after this long")
	fs.DurationVar(&t.grace, "grace", 30*time.Second, graceWhen+", wait this long for in-flight requests before canceling them (0: cancel at once)")
	fs.StringVar(&t.ignoreEOS, "ignore-eos", "auto", "ask the server to ignore EOS so outputs have the requested length: auto (probe), true, false")
	t.endpoints.register(fs)
}

// endpointFlags shape the requests of the APIs beyond chat and completions:
// embeddings' batches, rerank's documents and path, and image prompts.
// Zero means not given, so a flag given to an API it does not apply to
// is refused.
type endpointFlags struct {
	batchSize, documents int
	rerankPath           string
	images               int
	imageSize            string
	imageFormat          string
	imageTokens          int // what the target counts per image (0: Qwen2-VL's rule)
	// resolved holds the checked values (check) for set.
	resolved loadgen.Config
}

func (e *endpointFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&e.batchSize, "batch-size", 0, "--api embeddings: inputs per request, each a rotation of the prompt (default 1)")
	fs.IntVar(&e.documents, "documents", 0, "--api rerank: documents per request, each a rotation of the prompt, with its first 16 words as the query (default 1)")
	fs.StringVar(&e.rerankPath, "rerank-path", "", "--api rerank: "+openai.RerankVLLM+" (vLLM's request shape) or "+openai.RerankTEI+" (TEI's) (default: probe which the server answers)")
	fs.IntVar(&e.images, "images", 0, "images drawn from the seed and sent with every chat or messages prompt (each counted in the requested prompt as ⌈W/28⌉·⌈H/28⌉ tokens, as Qwen2-VL and knee serve count it; the served count is the server's usage)")
	fs.StringVar(&e.imageSize, "image-size", "", "with --images: WIDTHxHEIGHT in pixels (default 512x512)")
	fs.StringVar(&e.imageFormat, "image-format", "", "with --images: png or jpeg (default png)")
	fs.IntVar(&e.imageTokens, "image-tokens", 0, "with --images: tokens the target counts for each image, as part of the requested prompt (0: ⌈W/28⌉·⌈H/28⌉, as Qwen2-VL and knee serve count it)")
}

// config is what the report's configuration says of the flags given.
func (e *endpointFlags) config() [][2]string {
	var out [][2]string
	r := &e.resolved
	if e.batchSize > 0 {
		out = append(out, [2]string{"batch_size", strconv.Itoa(e.batchSize)})
	}
	if e.documents > 0 {
		out = append(out, [2]string{"documents", strconv.Itoa(e.documents)})
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

// set puts the checked values into cfg.
func (e *endpointFlags) set(cfg *loadgen.Config) {
	r := &e.resolved
	cfg.Items, cfg.RerankPath = r.Items, r.RerankPath
	cfg.Images, cfg.ImageWidth, cfg.ImageHeight, cfg.ImageFormat, cfg.ImageSeed = r.Images, r.ImageWidth, r.ImageHeight, r.ImageFormat, r.ImageSeed
	cfg.ImageTokens = r.ImageTokens
}

// check checks the flags against the APIs the run speaks (--api, and a
// mix's classes': runAPIs) and keeps their values for set; seed draws the
// images.
func (e *endpointFlags) check(apis []string, seed uint64) error {
	cfg := &e.resolved
	*cfg = loadgen.Config{}
	api := strings.Join(apis, ", ")
	need := func(flag string, given bool, want ...string) error {
		if given && !slices.ContainsFunc(apis, func(a string) bool { return slices.Contains(want, a) }) {
			return Usagef("%s applies to --api %s, not %s", flag, strings.Join(want, " or "), api)
		}
		return nil
	}
	for _, c := range []struct {
		flag  string
		given bool
		apis  []string
	}{
		{"--batch-size", e.batchSize != 0, []string{openai.APIEmbeddings}},
		{"--documents", e.documents != 0, []string{openai.APIRerank}},
		{"--rerank-path", e.rerankPath != "", []string{openai.APIRerank}},
		{"--images", e.images != 0, []string{openai.APIChat, openai.APIMessages}},
	} {
		if err := need(c.flag, c.given, c.apis...); err != nil {
			return err
		}
	}
	switch {
	case e.batchSize < 0:
		return Usagef("--batch-size %d: want 1 or more inputs per request", e.batchSize)
	case e.documents < 0:
		return Usagef("--documents %d: want 1 or more documents per request", e.documents)
	case e.images < 0:
		return Usagef("--images %d: want 0 or more images per prompt", e.images)
	case e.imageTokens < 0:
		return Usagef("--image-tokens %d: want 0 (⌈W/28⌉·⌈H/28⌉ from the size) or more", e.imageTokens)
	case e.images == 0 && e.imageTokens != 0:
		return Usagef("--image-tokens needs --images N")
	case e.images == 0 && (e.imageSize != "" || e.imageFormat != ""):
		return Usagef("--image-size and --image-format need --images N")
	}
	if e.rerankPath != "" {
		if err := openai.CheckRerankPath(e.rerankPath); err != nil {
			return Usagef("--rerank-path %q: want %s (vLLM's request shape) or %s (TEI's)", e.rerankPath, openai.RerankVLLM, openai.RerankTEI)
		}
	}
	cfg.Items = max(e.batchSize, e.documents)
	cfg.RerankPath = e.rerankPath
	if e.images == 0 {
		return nil
	}
	w, h, err := openai.ParseImageSize(e.imageSize)
	if err != nil {
		return Usagef("--image-size %q: %v", e.imageSize, err)
	}
	format := e.imageFormat
	if format == "" {
		format = "png"
	}
	if !slices.Contains(openai.ImageFormats, format) {
		return Usagef("--image-format %q: want png or jpeg", format)
	}
	cfg.Images, cfg.ImageWidth, cfg.ImageHeight, cfg.ImageFormat, cfg.ImageSeed = e.images, w, h, format, seed
	// As Qwen2-VL counts an image (one token per 28-pixel patch, 2×2 merged
	// 14-pixel ones), and knee serve by default.
	cfg.ImageTokens = ((w + simserver.QwenPatch - 1) / simserver.QwenPatch) * ((h + simserver.QwenPatch - 1) / simserver.QwenPatch)
	if e.imageTokens > 0 {
		cfg.ImageTokens = e.imageTokens
	}
	return nil
}

// probeRerank settles the rerank path when the run speaks rerank and
// --rerank-path was not given: one probe of each path (openai's
// ProbeRerankPath), its finding kept for set and the report's
// configuration, and said in a note. A server answering neither keeps
// vLLM's path; the run's records then show how it answers.
func (e *endpointFlags) probeRerank(ctx context.Context, apis []string, target, apiKey, model string) []string {
	if e.rerankPath != "" || !slices.Contains(apis, openai.APIRerank) {
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

// checkAPIObjectives refuses objectives an API cannot be judged by: an
// embeddings or rerank answer comes whole, with no first token and no
// gaps between tokens.
func checkAPIObjectives(api string, set slo.Set) error {
	if !openai.ItemsAPI(api) {
		return nil
	}
	for _, o := range set {
		switch o.Metric {
		case "ttft", "ttft_sched", "itl", "tpot":
			return Usagef("--slo %s: --api %s is answered whole, with no first token or token gaps, so it has no %s; judge it by e2e, e.g. 'p95(e2e)<500ms'", o, api, o.Metric)
		}
	}
	return nil
}

// eosApplies reports whether ignore_eos and min_tokens mean anything to
// api: only the OpenAI-compatible generation APIs take them.
func eosApplies(api string) bool { return api == openai.APIChat || api == openai.APICompletions }

// refuseEOS refuses --ignore-eos true for an API without it (Ollama's has
// its own message, ollamaEOS).
func refuseEOS(api string, eos triState) error {
	if eos.value && !eos.auto && !eosApplies(api) && api != openai.APIOllama {
		return Usagef("--ignore-eos true: --api %s has no ignore_eos or min_tokens (messages: outputs end at the model's stop or max_tokens; embeddings and rerank generate nothing); use auto or false", api)
	}
	return nil
}

// runAPIs are the APIs a run speaks: --api, and each mix class's own.
func runAPIs(api string, m *mixFlags) []string {
	apis := []string{api}
	if m.mix == nil {
		return apis
	}
	for _, c := range m.mix.Classes {
		if c.API != "" && !slices.Contains(apis, c.API) {
			apis = append(apis, c.API)
		}
	}
	return apis
}

// checkMixAPIs refuses what a mix class's API cannot be judged by: a
// class's own TTFT, ITL or TPOT objective on embeddings or rerank (naming
// its line), and the run's when any class speaks one of those APIs.
func checkMixAPIs(api string, m *mixFlags, run slo.Set) error {
	if m.mix == nil {
		return nil
	}
	for _, c := range m.mix.Classes {
		capi := cmp.Or(c.API, api)
		if !openai.ItemsAPI(capi) {
			continue
		}
		for j, o := range m.slos[c.Name] {
			if err := checkAPIObjectives(capi, slo.Set{o}); err != nil {
				return Usagef("--mix %s:%d: class %s speaks %s, answered whole, with no first token or token gaps: %s has no %s; judge it by e2e", m.path, c.SLOLines[j], c.Name, capi, o, o.Metric)
			}
		}
		if err := checkAPIObjectives(capi, run); err != nil {
			return Usagef("%v (class %s at %s:%d speaks %s; give the other classes that objective in the mix file instead)", err, c.Name, m.path, c.Line, capi)
		}
	}
	return nil
}
