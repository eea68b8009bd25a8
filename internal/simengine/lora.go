package simengine

import "fmt"

// LoRA adapters as vLLM serves them (--enable-lora): up to MaxLoRAs
// adapters are resident on the GPU at once, each in a slot sized for
// MaxLoRARank; a step's batch holds requests of at most MaxLoRAs distinct
// adapters, so a waiting request whose adapter would be one too many is
// skipped (requests behind it may go first, as vLLM's scheduler does);
// and an adapter not resident is loaded (host to GPU) before the step
// that first runs it, which lengthens that step.

// LoRAConfig configures adapters; MaxLoRAs 0 serves none.
type LoRAConfig struct {
	MaxLoRAs    int // adapters resident on the GPU at once (vLLM --max-loras)
	MaxLoRARank int // slot rank (vLLM --max-lora-rank); 0 = 16
	// LoadNS is the time to load one adapter into a slot; 0 derives it
	// from the slot's size (A and B of rank MaxLoRARank for the four
	// attention projections of every layer, in BF16) over LoadBandwidth.
	LoadNS int64
	// LoadBandwidth is the host-to-GPU copy rate in bytes/s; 0 = 25e9
	// (PCIe 4 x16 as measured, not its nominal 32 GB/s).
	LoadBandwidth float64
}

// loraState is the engine's adapter slots: which adapter each holds, how
// many running requests use it, and when it was last used (LRU eviction
// of an unused one).
type loraState struct {
	max      int
	loadNS   int64
	refs     map[int32]int   // resident adapter → running requests using it
	lastUse  map[int32]int64 // resident adapter → last admission time
	pendNS   int64           // load time owed by the next priced step
	loads    int64
	resident int
}

func newLoRAState(c LoRAConfig, m Model) (loraState, error) {
	if c.MaxLoRAs < 0 || c.MaxLoRARank < 0 || c.LoadNS < 0 || c.LoadBandwidth < 0 {
		return loraState{}, fmt.Errorf("LoRA: max loras %d, max rank %d, load %d ns, bandwidth %g: none may be negative",
			c.MaxLoRAs, c.MaxLoRARank, c.LoadNS, c.LoadBandwidth)
	}
	if c.MaxLoRAs == 0 {
		return loraState{}, nil
	}
	rank := c.MaxLoRARank
	if rank == 0 {
		rank = 16
	}
	load := c.LoadNS
	if load == 0 {
		bw := c.LoadBandwidth
		if bw == 0 {
			bw = 25e9
		}
		bytes := float64(m.Layers) * 4 * 2 * float64(rank) * float64(m.HiddenSize) * 2
		load = int64(bytes / bw * 1e9)
	}
	return loraState{max: c.MaxLoRAs, loadNS: load, refs: map[int32]int{}, lastUse: map[int32]int64{}}, nil
}

// fits reports whether a request of adapter a may join this step's batch:
// the base model (0) always may; an adapter if resident, or if a slot is
// free or holds an adapter no running request uses.
func (l *loraState) fits(a int32) bool {
	if a == 0 {
		return true
	}
	if _, ok := l.refs[a]; ok {
		return true
	}
	if l.resident < l.max {
		return true
	}
	for _, n := range l.refs {
		if n == 0 {
			return true
		}
	}
	return false
}

// acquire counts a admitted at now, loading it (evicting the least
// recently used unused adapter) when it is not resident.
func (l *loraState) acquire(a int32, now int64) {
	if a == 0 {
		return
	}
	if _, ok := l.refs[a]; !ok {
		if l.resident == l.max {
			var victim int32
			oldest := int64(-1)
			for b, n := range l.refs {
				if n == 0 && (oldest < 0 || l.lastUse[b] < oldest || l.lastUse[b] == oldest && b < victim) {
					victim, oldest = b, l.lastUse[b]
				}
			}
			delete(l.refs, victim)
			delete(l.lastUse, victim)
			l.resident--
		}
		l.refs[a] = 0
		l.resident++
		l.pendNS += l.loadNS
		l.loads++
	}
	l.refs[a]++
	l.lastUse[a] = now
}

// release ends a running request's use of a (it finished, was canceled or
// preempted); the adapter stays resident until a slot is needed.
func (l *loraState) release(a int32) {
	if a != 0 && l.refs[a] > 0 {
		l.refs[a]--
	}
}

// takeLoadNS returns the adapter load time the step being priced owes.
func (l *loraState) takeLoadNS() int64 {
	ns := l.pendNS
	l.pendNS = 0
	return ns
}

// releaseLoRA drops r's hold on its adapter, once.
func (e *Engine) releaseLoRA(r *req) {
	if r.loraHeld {
		e.lora.release(r.adapter)
		r.loraHeld = false
	}
}

// LoRALoads counts adapter loads into a slot (misses) so far.
func (e *Engine) LoRALoads() int64 { return e.lora.loads }
