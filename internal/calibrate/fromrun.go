package calibrate

import (
	"fmt"

	"github.com/knee-dev/knee/internal/badinput"
	"github.com/knee-dev/knee/internal/runs"
	"github.com/knee-dev/knee/internal/sweep"
)

// SourcesOfRun are the observations a stored run gives the fit (calibrate
// --from run:REF): each step of a sweep, else the run itself. id names it
// in the notes; ref is how the user named it, for the message when it
// gives none.
func SourcesOfRun(lr *runs.Loaded, id int64, ref string) ([]Source, error) {
	name := fmt.Sprintf("run %d", id)
	var srcs []Source
	if lr.Sweep != nil {
		for _, s := range lr.Sweep.Steps {
			conc, rate := 0.0, 0.0
			if s.Load.Kind == sweep.Rate {
				rate = s.Load.Value
			} else {
				conc = s.Load.Value
			}
			if o, err := ObservationOf(name+" step "+s.Load.String(), s.Summary, conc, rate); err == nil {
				srcs = append(srcs, Source{Obs: o, Model: lr.Info.Model})
			}
		}
	} else {
		conc, rate := LoadOfConfig(lr.Report.Config, lr.Report.Summary)
		if o, err := ObservationOf(name, lr.Report.Summary, conc, rate); err == nil {
			srcs = append(srcs, Source{Obs: o, Model: lr.Info.Model})
		}
	}
	if len(srcs) == 0 {
		return nil, badinput.Errorf("--from run:%s: the run has no completed request with a TTFT or TPOT to fit", ref)
	}
	return srcs, nil
}
