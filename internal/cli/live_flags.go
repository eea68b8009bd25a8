package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/knee-dev/knee/internal/livemetrics"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/record"
	"github.com/spf13/pflag"
)

// liveFlags is --metrics-addr: a Prometheus endpoint of the load while it
// runs (package livemetrics), for bench and sweep.
type liveFlags struct {
	addr    string
	linger  time.Duration // serving on after the run, for the last scrape
	metrics *livemetrics.Metrics
	server  *livemetrics.Server
	env     *Env
}

func (l *liveFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.addr, "metrics-addr", "", "serve the running load's Prometheus metrics at HOST:PORT/metrics (:PORT: loopback only); see docs/ci.md")
	fs.DurationVar(&l.linger, "metrics-linger", 30*time.Second, "with --metrics-addr: keep serving this long after the run ends, so a scraper reads the final values (default: two 15 s scrape intervals; Ctrl-C ends it; 0: close at once)")
}

// start opens the endpoint (nothing without --metrics-addr); a refused
// address is bad input (exit 2).
func (l *liveFlags) start(env *Env, info livemetrics.Info) error {
	if l.linger < 0 {
		return Usagef("--metrics-linger %v: want 0 (close when the run ends) or a positive duration", l.linger)
	}
	if l.addr == "" {
		return nil
	}
	addr, public, err := livemetrics.ResolveAddr(l.addr)
	if err != nil {
		return Usagef("--metrics-addr %v", err)
	}
	l.env = env
	l.metrics = livemetrics.New(info)
	if l.server, err = l.metrics.Serve(addr); err != nil {
		return Usagef("--metrics-addr %s: %v", l.addr, err)
	}
	fmt.Fprintf(env.Stderr, "live metrics at http://%s/metrics\n", l.server.Addr())
	if public {
		fmt.Fprintf(env.Stderr, "note: --metrics-addr %s listens beyond this machine; anyone who reaches it sees the run's metrics\n", l.addr)
	}
	return nil
}

// observe is for loadgen's OnRecord.
func (l *liveFlags) observe(r *record.Request) {
	if l.metrics != nil {
		l.metrics.Observe(r)
	}
}

// running says which run (and load level) in_flight reads now.
func (l *liveFlags) running(run *loadgen.Run, load float64) {
	if l.metrics == nil {
		return
	}
	l.metrics.SetStep(load)
	l.metrics.SetInFlight(func() float64 { return float64(run.Snapshot().InFlight) })
}

// close stops the endpoint, after --metrics-linger unless ctx is done
// (an interrupted run, or Ctrl-C while it lingers).
func (l *liveFlags) close(ctx context.Context) {
	if l.server != nil && l.linger > 0 && ctx.Err() == nil {
		fmt.Fprintf(l.env.Stderr, "live metrics stay at http://%s/metrics for %v (--metrics-linger), so a scraper reads the final values; Ctrl-C ends this now\n", l.server.Addr(), l.linger)
		l.server.Linger(ctx, l.linger)
	}
	if l.server != nil {
		if l.env != nil && l.env.beforeLiveClose != nil {
			l.env.beforeLiveClose(l.server.Addr())
		}
		l.server.Close()
		l.server = nil
	}
}

// liveLoad is a run's load level for step_load: its concurrency, sessions,
// or rate for an open loop.
func liveLoad(cfg *loadgen.Config) float64 {
	switch {
	case cfg.Concurrency > 0 || len(cfg.UserClasses) > 0:
		return float64(cfg.Concurrency + usersOf(cfg.UserClasses)) // a mix's own users count
	case cfg.Sessions > 0:
		return float64(cfg.Sessions)
	}
	return cfg.RateRPS
}
