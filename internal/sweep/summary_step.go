package sweep

// SummaryStep is the step whose full summary a stored sweep carries (and
// its report shows after the steps table): the SLO-safe point, else the
// knee, else the highest load; why names which. res has at least one step.
func (res *Result) SummaryStep() (idx int, why string) {
	switch {
	case res.SLOSafe.Found() && res.SLOSafe.Index < len(res.Steps):
		return res.SLOSafe.Index, "the SLO-safe point"
	case res.Knee.Found() && res.Knee.Index < len(res.Steps):
		return res.Knee.Index, "the knee"
	}
	return len(res.Steps) - 1, "the highest load measured"
}
