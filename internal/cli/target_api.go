package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/slo"
	"github.com/spf13/pflag"
)

// apiUsage is the --api help of the commands that measure a target.
const apiUsage = "API: chat (/v1/chat/completions), completions (/v1/completions), ollama (Ollama's native /api/chat, which reports per-request server durations), embeddings (/v1/embeddings), rerank (--rerank-path) or messages (Anthropic's /v1/messages)"

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

// endpointFlags declares the loadsetup.Endpoints flags.
type endpointFlags struct{ loadsetup.Endpoints }

func (e *endpointFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&e.BatchSize, "batch-size", 0, "--api embeddings: inputs per request, each a rotation of the prompt (default 1)")
	fs.IntVar(&e.Documents, "documents", 0, "--api rerank: documents per request, each a rotation of the prompt, with its first 16 words as the query (default 1)")
	fs.StringVar(&e.RerankPath, "rerank-path", "", "--api rerank: "+openai.RerankVLLM+" (vLLM's request shape) or "+openai.RerankTEI+" (TEI's) (default: probe which the server answers)")
	fs.IntVar(&e.Images, "images", 0, "images drawn from the seed and sent with every chat or messages prompt (each counted in the requested prompt as ⌈W/28⌉·⌈H/28⌉ tokens, as Qwen2-VL and knee serve count it; the served count is the server's usage)")
	fs.StringVar(&e.ImageSize, "image-size", "", "with --images: WIDTHxHEIGHT in pixels (default 512x512)")
	fs.StringVar(&e.ImageFormat, "image-format", "", "with --images: png or jpeg (default png)")
	fs.IntVar(&e.ImageTokens, "image-tokens", 0, "with --images: tokens the target counts for each image, as part of the requested prompt (0: ⌈W/28⌉·⌈H/28⌉, as Qwen2-VL and knee serve count it)")
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
			if err := loadsetup.CheckAPIObjectives(capi, slo.Set{o}); err != nil {
				return Usagef("--mix %s:%d: class %s speaks %s, answered whole, with no first token or token gaps: %s has no %s; judge it by e2e", m.path, c.SLOLines[j], c.Name, capi, o, o.Metric)
			}
		}
		if err := loadsetup.CheckAPIObjectives(capi, run); err != nil {
			return Usagef("%v (class %s at %s:%d speaks %s; give the other classes that objective in the mix file instead)", err, c.Name, m.path, c.Line, capi)
		}
	}
	return nil
}
