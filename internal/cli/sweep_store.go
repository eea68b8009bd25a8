package cli

import (
	"fmt"

	"github.com/knee-dev/knee/internal/report"
	"github.com/knee-dev/knee/internal/sweep"
)

// storeSweep keeps a measured sweep in the run database: one run of kind
// "sweep" whose summary is the step at the SLO-safe point (else the knee,
// else the highest load), with every step, the knee and the safe point
// beside it (store.SaveSweepResult). It returns the run id ("" when not
// stored).
func storeSweep(env *Env, s *storeFlags, meta runMeta, res *sweep.Result, status string) (string, error) {
	sr, err := s.begin(env, meta)
	if err != nil || sr == nil {
		return "", err
	}
	if err := sr.st.SaveSweepResult(sr.w.ID(), res); err != nil {
		_ = sr.finish(nil, "failed")
		return "", fmt.Errorf("storing the sweep: %w", err)
	}
	pick := len(res.Steps) - 1
	switch {
	case res.SLOSafe.Found():
		pick = res.SLOSafe.Index
	case res.Knee.Found():
		pick = res.Knee.Index
	}
	if err := sr.finish(&report.Run{Summary: res.Steps[pick].Summary}, status); err != nil {
		return "", err
	}
	return sr.id(), nil
}
