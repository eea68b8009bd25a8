package runlife

import (
	"math"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/badinput"
)

func TestGPUMetricsValidate(t *testing.T) {
	t.Parallel()
	ok := GPUMetrics{URLs: []string{"http://a:9400/metrics", "http://b:9400/metrics"}, USDPerHour: 2.5}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if kv := (&GPUMetrics{URLs: []string{"http://u:p@a:9400/metrics"}, USDPerHour: 2.5}).ConfigKV(); len(kv) != 2 || strings.Contains(kv[0][1], "p@") || kv[1] != [2]string{"gpu_price_usd_per_hour", "2.5"} {
		t.Errorf("config %q: want the URL without its password, and the price", kv)
	}
	for _, c := range []struct {
		g    GPUMetrics
		want string
	}{
		{GPUMetrics{URLs: []string{"http://a:9400/metrics", "http://a:9400/metrics"}}, "given twice: its GPUs would count twice"},
		{GPUMetrics{URLs: make([]string, 65)}, "given 65 times: at most 64 exporters"},
		{GPUMetrics{USDPerHour: math.NaN()}, "--gpu-price NaN: want USD per GPU-hour"},
		{GPUMetrics{USDPerHour: -1}, "--gpu-price -1"},
	} {
		if err := c.g.Validate(); !badinput.Is(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d URLs, price %v: %v, want %q", len(c.g.URLs), c.g.USDPerHour, err, c.want)
		}
	}
}

func TestServerMetricsValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		m    ServerMetrics
		want string
	}{
		{ServerMetrics{Interval: 1e9}, ""},
		{ServerMetrics{Off: true, AlsoGiven: "metrics-url"}, "--metrics-url does nothing with --no-metrics"},
		{ServerMetrics{Interval: 0}, "--metrics-interval 0s: want a positive duration"},
		{ServerMetrics{Interval: 1e9, URL: "http://"}, "--metrics-url:"},
	} {
		err := c.m.Validate()
		if c.want == "" && err != nil || c.want != "" && (!badinput.Is(err) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.m, err, c.want)
		}
	}
	if kv := (&ServerMetrics{Off: true}).ConfigKV(); len(kv) != 1 || kv[0] != [2]string{"metrics", "off"} {
		t.Errorf("--no-metrics config %q", kv)
	}
}
