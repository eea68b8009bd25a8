package diagnose

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/knee-dev/knee/internal/record"
)

// A run of a traffic mix (--mix) is also judged per class: which class
// suffers (waits longest before its first token) and why — its queue,
// its prefill, its decode, or, for a LoRA adapter's class that waits
// where the base model's requests do not, an adapter slot.

// Causes of a class's suffering.
const (
	CauseQueue    = "queue"
	CausePrefill  = "prefill"
	CauseDecode   = "decode"
	CauseLoRAWait = "lora_wait" // waiting for a LoRA adapter slot (--max-loras)
	CauseErrors   = "errors"
)

// ClassFacts are one class's facts and where its time goes.
type ClassFacts struct {
	Class string `json:"class"`
	// Adapter is the LoRA adapter (model name) the class sends; "" for
	// the base model or when not known.
	Adapter string `json:"adapter,omitempty"`
	// WaitMS is what the class waits before its first token beyond its
	// own prompt: the server queue where reported, else the mean TTFT.
	WaitMS float64 `json:"wait_ms"`
	Cause  string  `json:"cause"` // where its time goes (Cause*)
	Facts  Facts   `json:"facts"`
}

// ClassDiagnosis is the per-class part of a mix's diagnosis.
type ClassDiagnosis struct {
	Classes []ClassFacts `json:"classes"`
	// Suffers is the class that waits the longest, when it waits clearly
	// longer than the class that waits least ("" when none stands out);
	// Cause and Text say why.
	Suffers string `json:"suffers,omitempty"`
	Cause   string `json:"cause,omitempty"`
	Text    string `json:"text"`
}

// Classes diagnoses a mix's classes (in order; a record's class is
// record.Class, probes left out). adapters maps a class to its LoRA
// adapter name, when known (the mix file says). Nil with fewer than two
// classes.
func Classes(recs []record.Request, order []string, adapters map[string]string) *ClassDiagnosis {
	by := map[string][]record.Request{}
	for i := range recs {
		if c := recs[i].Class; c != "" && c != record.ProbeClass {
			by[c] = append(by[c], recs[i])
		}
	}
	names := append([]string{}, order...)
	var extra []string
	for c := range by {
		if !slices.Contains(names, c) {
			extra = append(extra, c)
		}
	}
	sort.Strings(extra)
	names = append(names, extra...)
	d := &ClassDiagnosis{}
	for _, n := range names {
		if len(by[n]) == 0 {
			continue
		}
		f := facts(by[n])
		cf := ClassFacts{Class: n, Adapter: adapters[n], Facts: f, WaitMS: f.TTFTMS}
		if f.ServerPhases {
			cf.WaitMS = f.QueueMS
		}
		d.Classes = append(d.Classes, cf)
	}
	if len(d.Classes) < 2 {
		return nil
	}
	// The base model's classes wait only for capacity; an adapter class
	// waiting clearly longer than they do waits for an adapter slot.
	baseWait, base := -1.0, false
	for _, c := range d.Classes {
		if c.Adapter == "" && adapters != nil {
			if !base || c.WaitMS < baseWait {
				baseWait, base = c.WaitMS, true
			}
		}
	}
	for i := range d.Classes {
		d.Classes[i].Cause = classCause(&d.Classes[i], base, baseWait)
	}
	worst, least := 0, 0
	for i, c := range d.Classes {
		if c.WaitMS > d.Classes[worst].WaitMS {
			worst = i
		}
		if c.WaitMS < d.Classes[least].WaitMS {
			least = i
		}
	}
	w, l := &d.Classes[worst], &d.Classes[least]
	for _, c := range d.Classes {
		if c.Cause == CauseErrors {
			d.Suffers, d.Cause = c.Class, CauseErrors
			d.Text = fmt.Sprintf("class %s suffers: %.3g%% of its requests failed (%s)", c.Class, 100*c.Facts.ErrorRate, kinds(c.Facts.ErrorKinds))
			return d
		}
	}
	if worst == least || w.WaitMS < GrowthRatio*l.WaitMS || w.WaitMS-l.WaitMS < DeltaFloorMS {
		d.Text = fmt.Sprintf("no class waits clearly longer than another: %s", waits(d.Classes))
		return d
	}
	d.Suffers, d.Cause = w.Class, w.Cause
	d.Text = fmt.Sprintf("class %s suffers: it waits %s before its first token against %s for %s (%s); %s",
		w.Class, msText(w.WaitMS), msText(l.WaitMS), l.Class, waits(d.Classes), causeText(w, baseWait))
	return d
}

// classCause says where a class's time goes.
func classCause(c *ClassFacts, base bool, baseWait float64) string {
	f := &c.Facts
	switch {
	case f.ErrorRate >= ErrorRateThreshold:
		return CauseErrors
	case c.Adapter != "" && base && c.WaitMS >= GrowthRatio*baseWait && c.WaitMS-baseWait >= DeltaFloorMS:
		return CauseLoRAWait
	}
	if f.ServerPhases {
		total := f.QueueMS + f.PrefillMS + f.DecodeMS
		switch {
		case total <= 0:
		case f.QueueMS >= QueueShare*total && f.QueueMS >= DeltaFloorMS:
			return CauseQueue
		case f.PrefillMS >= f.DecodeMS:
			return CausePrefill
		}
		return CauseDecode
	}
	// Without server phases: the wait for the first token against decode.
	if f.TTFTMS >= f.E2EMS-f.TTFTMS {
		if f.RhoInFlight >= RhoStrong {
			return CauseQueue
		}
		return CausePrefill
	}
	return CauseDecode
}

func causeText(c *ClassFacts, baseWait float64) string {
	f := &c.Facts
	switch c.Cause {
	case CauseLoRAWait:
		return fmt.Sprintf("it is LoRA adapter %s's class and queues %s where the base model's requests queue %s: it waits for an adapter slot (raise --max-loras / vLLM's --max-loras, or serve the adapter on its own replicas)",
			c.Adapter, msText(c.WaitMS), msText(baseWait))
	case CauseQueue:
		return fmt.Sprintf("its time goes to the queue (%s of a mean request of %s): capacity, not its own shape", msText(f.QueueMS), msText(f.E2EMS))
	case CausePrefill:
		return fmt.Sprintf("its time goes to prefill (%.0f input tokens a request): its prompts are what is slow", f.InputMean)
	}
	return fmt.Sprintf("its time goes to decode (%.3g ms per output token, %.0f output tokens)", f.TPOTMS, f.OutputMean)
}

func waits(cs []ClassFacts) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %s", c.Class, msText(c.WaitMS))
	}
	what := "mean TTFT"
	if len(cs) > 0 && cs[0].Facts.ServerPhases {
		what = "mean server queue"
	}
	return what + ": " + strings.Join(parts, ", ")
}
