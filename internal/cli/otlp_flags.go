package cli

import (
	"fmt"
	"sync"
	"time"

	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/otelexport"
	"github.com/knee-dev/knee/internal/record"
	"github.com/spf13/pflag"
)

// otlpFlags are --otlp-endpoint, --otlp-protocol and --otlp-traces: the
// load's measurements sent to an OpenTelemetry collector as it runs
// (package otelexport). The SDK's OTEL_EXPORTER_OTLP_* variables are
// honoured: an endpoint there turns the export on without the flag.
type otlpFlags struct {
	s         otelexport.Settings
	exp       *otelexport.Exporter
	closeOnce sync.Once
}

func (o *otlpFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.s.Endpoint, "otlp-endpoint", "", "send metrics (and with --otlp-traces, spans) to this OpenTelemetry collector, e.g. http://localhost:4318 (default: $OTEL_EXPORTER_OTLP_ENDPOINT; none: no export); see docs/ci.md")
	fs.StringVar(&o.s.Protocol, "otlp-protocol", "", "OTLP transport: http (protobuf, port 4318) or grpc (port 4317) (default: $OTEL_EXPORTER_OTLP_PROTOCOL, else http)")
	fs.BoolVar(&o.s.Traces, "otlp-traces", false, "also export one span per request, with sent, first_token and done events")
}

// start begins the export when an endpoint is set; bad flags are exit 2.
func (o *otlpFlags) start(env *Env, kind, run, model, server, api string) error {
	cfg := otelexport.Config{Kind: kind, Run: run, Model: model, Server: redactURL(server), API: api}
	shown, on, err := o.s.Resolve(env.Getenv, &cfg)
	if err != nil || !on {
		return err
	}
	cfg.OnError = func(err error) {
		fmt.Fprintf(env.Stderr, "knee %s: OpenTelemetry export to %s failed (the run goes on; further export errors are not shown): %v\n", kind, shown, err)
	}
	if o.exp, err = otelexport.Start(cfg); err != nil {
		return Usagef("--otlp-endpoint %s: %v", shown, err)
	}
	return nil
}

func (o *otlpFlags) observe(r *record.Request) {
	if o.exp != nil {
		o.exp.Observe(r)
	}
}

// running says which run the records that follow belong to.
func (o *otlpFlags) running(run *loadgen.Run, load float64) {
	if o.exp != nil {
		o.exp.Running(time.Now().Add(-run.Snapshot().Elapsed), load)
	}
}

// close sends what is left, within the exporter's bound; an error was
// already reported once.
func (o *otlpFlags) close() {
	o.closeOnce.Do(func() {
		if o.exp != nil {
			o.exp.Close()
		}
	})
}
