package otelexport

import (
	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/redact"
)

// Settings are what turns the export on: the flags (--otlp-endpoint,
// --otlp-protocol, --otlp-traces) and, as the SDK does, the
// OTEL_EXPORTER_OTLP_* variables, which getenv reads.
type Settings struct {
	Endpoint, Protocol string
	Traces             bool
}

// Resolve checks the settings and fills cfg's endpoint, protocol and
// traces; on is false when no collector is named (no export). shown is
// the endpoint as messages may name it: without credentials, or the
// variable that set it. Bad settings are bad input naming the flag or
// variable.
func (s Settings) Resolve(getenv func(string) string, cfg *Config) (shown string, on bool, err error) {
	envEndpoint := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") + getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	if s.Endpoint == "" && envEndpoint == "" {
		if s.Traces || s.Protocol != "" {
			return "", false, badinput.Errorf("--otlp-traces and --otlp-protocol need a collector: --otlp-endpoint URL or $OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		return "", false, nil
	}
	if s.Endpoint != "" {
		if err := CheckEndpoint(s.Endpoint); err != nil {
			return "", false, badinput.Errorf("--otlp-endpoint %v", err)
		}
	}
	proto, from := s.Protocol, "--otlp-protocol"
	if proto == "" {
		proto, from = getenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), "$OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"
		if proto == "" {
			proto, from = getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "$OTEL_EXPORTER_OTLP_PROTOCOL"
		}
	}
	protocol, err := ParseProtocol(proto)
	if err != nil {
		return "", false, badinput.Errorf("%s %v", from, err)
	}
	shown = "$OTEL_EXPORTER_OTLP_ENDPOINT"
	if s.Endpoint != "" {
		shown = redact.URL(s.Endpoint)
	}
	cfg.Endpoint, cfg.Protocol, cfg.Traces = s.Endpoint, protocol, s.Traces
	return shown, true, nil
}
