package cli

import (
	"fmt"
	"strconv"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/spf13/pflag"
)

// apiUsage is the --api help of the commands that measure a target.
const apiUsage = "API: chat (/v1/chat/completions), completions (/v1/completions), or ollama (Ollama's native /api/chat, which reports per-request server durations)"

// checkAPI validates --api for bench and sweep.
func checkAPI(api string) error {
	switch api {
	case openai.APIChat, openai.APICompletions, openai.APIOllama:
		return nil
	}
	return Usagef("--api %q: want chat, completions or ollama", api)
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
}
