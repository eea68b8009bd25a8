package cli

import (
	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/sim"
	"github.com/knee-dev/knee/internal/workload"
)

// This file wires a mix's own-concurrency classes and the probes into a
// simulated run; the simulator runs them (sim.Config.Pools, Probes).

// simPools makes cfg's closed loop a pool of users per own-concurrency
// class beside the --concurrency users the share classes divide (none when
// no class takes a share), each request of its pool's class (mg).
func (m *mixFlags) simPools(cfg *sim.Config, mg *workload.MixGenerator) {
	if m.mix == nil || !m.mix.OwnUsers() {
		return
	}
	pools := workload.NewMixPools(m.mix)
	mg.WithPools(pools)
	cfg.Pools, cfg.Pool = pools.Users(), pools.Issue
	if !m.mix.HasShares() {
		cfg.Concurrency = 0
	}
}

// splitOf says how a simulated run's measured requests were split among
// the mix's classes when some brought their own load, as bench's note
// does ("" otherwise).
func (m *mixFlags) splitOf(classes []report.Class) string {
	if m.mix == nil {
		return ""
	}
	count := map[string]int{}
	for _, c := range classes {
		count[c.Name] = c.Summary.Requests
	}
	return m.mix.Split(count)
}
