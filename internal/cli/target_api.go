package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/loadsetup"
	"github.com/knee-dev/knee/internal/openai"
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
