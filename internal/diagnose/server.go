package diagnose

import "fmt"

// ServerFacts are what the server's own metrics (scraped /metrics) say
// about a set of requests: means from histogram deltas, gauges over the
// span. A nil pointer is a figure the server did not expose.
type ServerFacts struct {
	Source         string   `json:"source"` // e.g. "vLLM /metrics at http://…"
	QueueMS        *float64 `json:"queue_ms,omitempty"`
	PrefillMS      *float64 `json:"prefill_ms,omitempty"`
	QueueP95MS     *float64 `json:"queue_p95_ms,omitempty"`
	QueueP95Bound  bool     `json:"queue_p95_is_bucket_bound,omitempty"` // QueueP95MS is the upper bound of a coarse bucket
	PrefillP95MS   *float64 `json:"prefill_p95_ms,omitempty"`
	RunningMax     *float64 `json:"running_max,omitempty"`
	WaitingMax     *float64 `json:"waiting_max,omitempty"`
	WaitingGrowing bool     `json:"waiting_growing,omitempty"`
	KVUsageMax     *float64 `json:"kv_usage_max,omitempty"`
	Preemptions    *float64 `json:"preemptions,omitempty"`
}

func (s *ServerFacts) phases() bool { return s != nil && s.QueueMS != nil && s.PrefillMS != nil }

// serverParts are the queue and prefill parts of compare() from the
// scraped histograms, for clients whose records carry no server phases.
func serverParts(w, b *ServerFacts) []part {
	return []part{
		{verdict: QueuePressure, metric: "scraped_server_queue_ms", w: *w.QueueMS, b: *b.QueueMS, deltaMS: *w.QueueMS - *b.QueueMS,
			text: "server queue from its /metrics (waiting for admission)"},
		{verdict: PrefillPressure, metric: "scraped_server_prefill_ms", w: *w.PrefillMS, b: *b.PrefillMS, deltaMS: *w.PrefillMS - *b.PrefillMS,
			text: "server prefill from its /metrics"},
	}
}

// serverGaugeEvidence states the server's batch and queue gauges, with the
// baseline's when there is one.
func serverGaugeEvidence(w, b *ServerFacts) []Evidence {
	if w == nil {
		return nil
	}
	var ev []Evidence
	base := func(get func(s *ServerFacts) *float64) *float64 {
		if b == nil {
			return nil
		}
		return get(b)
	}
	was := func(x *float64, unit string) string {
		if x == nil {
			return ""
		}
		return fmt.Sprintf(" (baseline %.4g%s)", *x, unit)
	}
	if w.RunningMax != nil {
		bx := base(func(s *ServerFacts) *float64 { return s.RunningMax })
		text := fmt.Sprintf("server running requests at most %.0f%s", *w.RunningMax, was(bx, ""))
		if bx != nil && *bx == *w.RunningMax && w.WaitingMax != nil && *w.WaitingMax > 0 {
			text += ": pinned at the same ceiling while requests wait, so the batch is full (max_num_seqs or KV memory)"
		}
		ev = append(ev, Evidence{Metric: "server_running_max", Window: *w.RunningMax, Baseline: bx, Text: text})
	}
	if w.WaitingMax != nil {
		text := fmt.Sprintf("server waiting requests at most %.0f%s", *w.WaitingMax, was(base(func(s *ServerFacts) *float64 { return s.WaitingMax }), ""))
		if w.WaitingGrowing {
			text += ", and the waiting queue grew through the window without draining"
		}
		ev = append(ev, Evidence{Metric: "server_waiting_max", Window: *w.WaitingMax, Baseline: base(func(s *ServerFacts) *float64 { return s.WaitingMax }), Text: text})
	}
	if w.QueueP95MS != nil {
		at := ""
		if w.QueueP95Bound {
			at = "at most "
		}
		ev = append(ev, Evidence{Metric: "server_queue_p95_ms", Window: *w.QueueP95MS, Baseline: base(func(s *ServerFacts) *float64 { return s.QueueP95MS }),
			Text: fmt.Sprintf("server queue p95 %s%s%s (from histogram buckets)", at, msText(*w.QueueP95MS), was(base(func(s *ServerFacts) *float64 { return s.QueueP95MS }), " ms"))})
	}
	if w.KVUsageMax != nil {
		ev = append(ev, Evidence{Metric: "server_kv_usage_max", Window: *w.KVUsageMax, Baseline: base(func(s *ServerFacts) *float64 { return s.KVUsageMax }),
			Text: fmt.Sprintf("server KV-cache usage at most %.0f%%", 100**w.KVUsageMax)})
	}
	if w.Preemptions != nil && *w.Preemptions > 0 {
		ev = append(ev, Evidence{Metric: "server_preemptions", Window: *w.Preemptions,
			Text: fmt.Sprintf("%.0f preemptions: the KV cache ran out and requests were recomputed", *w.Preemptions)})
	}
	for i := range ev {
		ev[i].Text = "server metrics (" + w.Source + "): " + ev[i].Text
	}
	return ev
}

// absoluteServer judges a window with no baseline and no per-request
// phases from the server's scraped means and its waiting queue.
func absoluteServer(w Facts, s *ServerFacts) (Verdict, []Evidence) {
	var ev []Evidence
	verdict := Healthy
	if s.phases() && w.E2EMS > 0 {
		qs, ps := *s.QueueMS/w.E2EMS, *s.PrefillMS/w.E2EMS
		ev = append(ev,
			Evidence{Metric: "scraped_server_queue_ms", Window: *s.QueueMS, Text: fmt.Sprintf("server queue %s from its /metrics, %.0f%% of a mean request (queue_pressure from %.0f%%)", msText(*s.QueueMS), 100*qs, 100*QueueShare)},
			Evidence{Metric: "scraped_server_prefill_ms", Window: *s.PrefillMS, Text: fmt.Sprintf("server prefill %s from its /metrics, %.0f%% (prefill_pressure from %.0f%%)", msText(*s.PrefillMS), 100*ps, 100*PrefillShare)})
		switch {
		case qs >= QueueShare && *s.QueueMS >= DeltaFloorMS:
			verdict = QueuePressure
		case ps >= PrefillShare:
			verdict = PrefillPressure
		}
	}
	if s.WaitingGrowing && verdict == Healthy {
		verdict = QueuePressure
	}
	return verdict, ev
}
