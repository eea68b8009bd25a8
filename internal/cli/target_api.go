package cli

import (
	"fmt"
	"strconv"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
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
func (o *optFloat) apply(cfg *loadgen.Config) { cfg.Temperature, cfg.HasTemperature = o.v, o.set }

const temperatureUsage = "sampling temperature sent with every request (default: the server's own)"
