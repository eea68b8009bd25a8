package plan

import (
	"fmt"

	"github.com/knee-dev/knee/internal/simengine"
	"github.com/knee-dev/knee/internal/stats"
)

// Headroom is how plan allows for the simulator's error: knee's held-out
// errors (simengine.RangeIn) say how far the truth has been from a
// prediction on hosts knee was not fitted to, and a plan at confidence c
// judges each candidate at the pessimistic end of the range that covers
// c of them: latencies at its high end, throughput and capacity at its
// low end. The range depends on the candidate (In): a GPU or a model
// without a validated source and a large running batch take wider ones. The
// factors of a Headroom from NewHeadroom are those of a small batch on a
// validated GPU. Confidence 0 plans on the point estimate.
type Headroom struct {
	Confidence float64 `json:"confidence"`
	// Factors the prediction is multiplied by before the SLOs are judged.
	TTFTFactor       float64 `json:"ttft_factor"`
	TPOTFactor       float64 `json:"tpot_factor"` // TPOT and ITL
	E2EFactor        float64 `json:"e2e_factor"`
	ThroughputFactor float64 `json:"throughput_factor"` // throughput, goodput and capacity
	// Widened says why In widened the factors (empty from NewHeadroom).
	Widened []string `json:"widened,omitempty"`
}

// NewHeadroom is the headroom at confidence c (0-1; 0: none).
func NewHeadroom(c float64) (Headroom, error) {
	if !(c >= 0 && c < 1) {
		return Headroom{}, fmt.Errorf("confidence %g: want a share from 0 (the point estimate) to below 1, e.g. 0.8", c)
	}
	return Headroom{Confidence: c}.In(simengine.Domain{}), nil
}

// In is the headroom at h's confidence for a prediction in domain d.
func (h Headroom) In(d simengine.Domain) Headroom {
	c := h.Confidence
	h = Headroom{Confidence: c, TTFTFactor: 1, TPOTFactor: 1, E2EFactor: 1, ThroughputFactor: 1}
	if c == 0 {
		return h
	}
	ttft, _ := simengine.RangeIn("ttft_ms", c, d)
	tpot, _ := simengine.RangeIn("tpot_ms", c, d)
	e2e, _ := simengine.RangeIn("e2e_ms", c, d)
	thr, _ := simengine.RangeIn("request_throughput_rps", c, d)
	// Only ever pessimistic: a range whose far end is optimistic adds
	// nothing.
	h.TTFTFactor, h.TPOTFactor, h.E2EFactor = max(ttft.High, 1), max(tpot.High, 1), max(e2e.High, 1)
	h.ThroughputFactor = min(thr.Low, 1)
	h.Widened = d.Widened()
	return h
}

// domainOf is the domain of a simulated run of replicas of cfg: its GPU,
// its model, and the mean requests in flight a replica (Little's law).
func domainOf(cfg simengine.Config, s stats.Summary, replicas int) simengine.Domain {
	return simengine.DomainOf(cfg.GPU.Name, cfg.Model.Name, s.RequestThroughputRPS, s.E2E.Mean, replicas)
}

// saturatedIn is the domain of cfg's capacity run: saturated, so a large
// batch.
func saturatedIn(cfg simengine.Config) simengine.Domain {
	return simengine.Domain{GPU: cfg.GPU.Name, Model: cfg.Model.Name, InFlight: simengine.BatchLargeFrom}
}

// String says what the headroom does, for reports.
func (h Headroom) String() string {
	if h.Confidence == 0 {
		return "none: planned on the point estimate (--confidence 0)"
	}
	return fmt.Sprintf("confidence %.0f%% of knee's held-out errors (publishers left out): TTFT ×%.2f, TPOT/ITL ×%.2f, E2E ×%.2f, throughput and capacity ×%.2f at small batches on a GPU with a validated source; wider at %.0f or more requests in flight a replica and on a GPU or model without one (docs/validation.md)",
		h.Confidence*100, h.TTFTFactor, h.TPOTFactor, h.E2EFactor, h.ThroughputFactor, float64(simengine.BatchLargeFrom))
}

// apply returns the summary as the headroom judges it.
func (h Headroom) apply(s stats.Summary) stats.Summary {
	if h.Confidence == 0 {
		return s
	}
	scale := func(d *stats.Dist, f float64) {
		d.Mean *= f
		d.P50 *= f
		d.P90 *= f
		d.P95 *= f
		d.P99 *= f
		d.P999 *= f
		d.Max *= f
	}
	scale(&s.TTFT, h.TTFTFactor)
	scale(&s.TTFTSched, h.TTFTFactor)
	scale(&s.TPOT, h.TPOTFactor)
	scale(&s.ITL, h.TPOTFactor)
	scale(&s.E2E, h.E2EFactor)
	f := h.ThroughputFactor
	s.RequestThroughputRPS *= f
	s.OutputTokenThroughputTPS *= f
	s.InputTokenThroughputTPS *= f
	s.TotalTokenThroughputTPS *= f
	if s.GoodputRPS != nil {
		g := *s.GoodputRPS * f
		s.GoodputRPS = &g
	}
	return s
}

// capacityFactor is what a replica's measured capacity is taken at (1
// for the zero value).
func (h Headroom) capacityFactor() float64 {
	if h.ThroughputFactor <= 0 {
		return 1
	}
	return h.ThroughputFactor
}
