//go:build !js

package web

import (
	"net/http"
	"slices"

	"github.com/knee-dev/knee/internal/store"
	"github.com/knee-dev/knee/internal/sweep"
)

// guidedView is what the runs pages draw of a guided sweep (issue 42):
// its steps in measuring order, each with the model's prediction before
// it and the curve the refit after it drew over the grid. The page shades
// the latest curve as a band between the measured steps and the
// predictions as range bars beside the measured points; predictions are
// never drawn as measurements.
type guidedView struct {
	LoadKind string           `json:"load_kind"`
	Metric   string           `json:"metric"`
	Steps    []guidedStepView `json:"steps"`
}

// guidedStepView is one guided step with its measured p95 TTFT, the
// figure the TTFT chart plots (the guided log keeps SLO figures only).
type guidedStepView struct {
	sweep.GuidedStep
	MeasuredTTFTP95 float64 `json:"measured_ttft_p95_ms"`
}

// guidedOf is run id's guided view as stored so far (a running sweep
// checkpoints its steps), or nil when the run is no guided sweep or has
// no step stored yet.
func guidedOf(st *store.Store, id int64) (*guidedView, error) {
	res, err := st.SweepResult(id)
	if err != nil || res == nil {
		return nil, err
	}
	v := &guidedView{LoadKind: res.LoadKind, Metric: res.KneeMetric}
	for _, s := range res.Steps {
		if s.Guided != nil {
			v.Steps = append(v.Steps, guidedStepView{GuidedStep: *s.Guided, MeasuredTTFTP95: s.Summary.TTFT.P95})
		}
	}
	if len(v.Steps) == 0 {
		return nil, nil
	}
	// Stored steps are in load order; the band narrows in measuring order.
	slices.SortFunc(v.Steps, func(a, b guidedStepView) int { return a.Order - b.Order })
	return v, nil
}

// apiRunGuided answers a stored run's guided view (null when it is no
// guided sweep), for the run's page.
func (s *Server) apiRunGuided(w http.ResponseWriter, r *http.Request) {
	id, ok := s.storedRun(w, r)
	if !ok {
		return
	}
	v, err := guidedOf(s.cfg.Store, id)
	reply(w, v, err)
}
