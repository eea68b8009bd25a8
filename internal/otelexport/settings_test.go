package otelexport

import (
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

func TestSettingsResolve(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	var cfg Config
	if _, on, err := (Settings{}).Resolve(env(nil), &cfg); on || err != nil {
		t.Errorf("nothing set: on %v, %v", on, err)
	}
	shown, on, err := Settings{Endpoint: "http://u:PASSWORD@h:4318", Traces: true}.Resolve(env(nil), &cfg)
	if !on || err != nil || shown != "http://h:4318" || strings.Contains(shown, "PASSWORD") || cfg.Protocol != ProtocolHTTP || !cfg.Traces {
		t.Errorf("flag endpoint: %q %v %v %+v", shown, on, err, cfg)
	}
	shown, on, err = Settings{}.Resolve(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}), &cfg)
	if !on || err != nil || shown != "$OTEL_EXPORTER_OTLP_ENDPOINT" || cfg.Protocol != ProtocolGRPC || cfg.Endpoint != "" {
		t.Errorf("from the environment: %q %v %v %+v", shown, on, err, cfg)
	}
	for want, s := range map[string]struct {
		set Settings
		env map[string]string
	}{
		"need a collector":                      {Settings{Traces: true}, nil},
		"--otlp-endpoint \"ftp://h\"":           {Settings{Endpoint: "ftp://h"}, nil},
		"--otlp-protocol":                       {Settings{Endpoint: "http://h", Protocol: "carrier-pigeon"}, nil},
		"$OTEL_EXPORTER_OTLP_METRICS_PROTOCOL ": {Settings{Endpoint: "http://h"}, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "x"}},
	} {
		if _, _, err := s.set.Resolve(env(s.env), &Config{}); !badinput.Is(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want bad input saying %q", s.set, err, want)
		}
	}
}
