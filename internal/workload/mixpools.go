package workload

import "sync"

// MixPools gives the requests of a simulated closed loop of a mix whose
// classes bring their own concurrency each its pool's class: pool 0 is the
// shared users (each request's class drawn by the shares), pool p the p-th
// own-concurrency class in the file's order. The simulator says each
// request's pool as it issues it (Issue), before it asks for its lengths,
// as loadgen's user pools send their class's requests.
type MixPools struct {
	users   []int // each own pool's users
	classOf []int // each own pool's class index

	mu      sync.Mutex
	classes []int8 // class of request i; sharedClass: drawn by share
}

// NewMixPools is m's own-concurrency classes as user pools.
func NewMixPools(m *Mix) *MixPools {
	p := &MixPools{}
	for k, c := range m.Classes {
		if c.Concurrency > 0 {
			p.users, p.classOf = append(p.users, c.Concurrency), append(p.classOf, k)
		}
	}
	return p
}

// Users is each own pool's users, in order (the simulator's Config.Pools).
func (p *MixPools) Users() []int { return p.users }

// Issue says request i comes from pool (0: the shared users).
func (p *MixPools) Issue(i int64, pool int) {
	class := sharedClass
	if pool > 0 && pool <= len(p.classOf) {
		class = int8(p.classOf[pool-1])
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for int64(len(p.classes)) <= i {
		p.classes = append(p.classes, sharedClass)
	}
	p.classes[i] = class
}

// ClassAt is request i's class index, or -1 when the shares draw it (or it
// has not been issued).
func (p *MixPools) ClassAt(i int64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i < 0 || i >= int64(len(p.classes)) {
		return -1
	}
	return int(p.classes[i])
}
