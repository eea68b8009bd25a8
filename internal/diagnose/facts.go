package diagnose

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/knee-dev/knee/internal/record"
)

// Facts are the numbers of one set of requests that the rules read. Means
// are over completed requests; milliseconds unless the name says otherwise.
type Facts struct {
	// Requests and Completed are what the rules read: every request but
	// the item answers. The JSON's requests and completed count as the text
	// does, item answers included (AllRequests, AllCompleted).
	Requests  int `json:"requests"`
	Completed int `json:"completed"`
	// ItemAnswers are completed embeddings or rerank requests: answered
	// whole, without the phases diagnosis reads, so left out of the rest.
	ItemAnswers   int            `json:"item_answers,omitempty"`
	ErrorRate     float64        `json:"error_rate"`     // failed, neither rejected nor canceled, 0..1
	RejectionRate float64        `json:"rejection_rate"` // 429/503 admission, 0..1
	ErrorKinds    map[string]int `json:"error_kinds,omitempty"`

	ServerPhases bool    `json:"server_phases"` // every completed request carried server phase times
	QueueMS      float64 `json:"queue_ms,omitempty"`
	PrefillMS    float64 `json:"prefill_ms,omitempty"`
	DecodeMS     float64 `json:"decode_ms,omitempty"`

	TTFTMS      float64 `json:"ttft_ms"`      // mean
	TTFTP90MS   float64 `json:"ttft_p90_ms"`  //
	TPOTMS      float64 `json:"tpot_ms"`      // mean decode time per output token after the first
	E2EMS       float64 `json:"e2e_ms"`       // mean
	LagP95MS    float64 `json:"lag_p95_ms"`   // client lag: sent − scheduled
	InputMean   float64 `json:"input_tokens"` // mean per completed request
	OutputMean  float64 `json:"output_tokens"`
	SendRateRPS float64 `json:"send_rate_rps"`         // measured requests per second of send time (0: unknown)
	InFlight    float64 `json:"in_flight"`             // mean requests in flight at send (0: unknown)
	RhoInFlight float64 `json:"ttft_in_flight_rho"`    // Spearman rank correlation of TTFT with in-flight at send
	RhoInput    float64 `json:"ttft_input_tokens_rho"` // ... and with input tokens

	// Client lag: requests sent more than LagFloorMS late, and how many of
	// those waited at the client's in-flight cap (a full slot pool is
	// queueing in the client, not a slow client).
	Lagged      int `json:"lagged"`
	LaggedAtCap int `json:"lagged_at_cap"`

	// For the prefill model of a baseline: least-squares TTFT = a + b·input.
	ttfts, inputs []float64
}

// Counts says how many requests the window holds and how many completed,
// answers of items included: Requests and Completed leave those out (the
// rules read streamed answers only), but a person reading a header counts
// every request sent.
func (f Facts) Counts() string {
	s := fmt.Sprintf("%d requests, %d completed", f.AllRequests(), f.AllCompleted())
	if f.ItemAnswers > 0 {
		s += fmt.Sprintf(" (%d embeddings or rerank answers)", f.ItemAnswers)
	}
	return s
}

// AllRequests is every request of the set, item answers included: the
// count a person reads, in the text and the JSON alike.
func (f Facts) AllRequests() int { return f.Requests + f.ItemAnswers }

// AllCompleted is every completed request, item answers included.
func (f Facts) AllCompleted() int { return f.Completed + f.ItemAnswers }

// MarshalJSON writes requests and completed as the text counts them
// (AllRequests, AllCompleted); item_answers says how many of them were
// item answers. Before, the JSON left them out where the text did not.
func (f Facts) MarshalJSON() ([]byte, error) {
	type plain Facts // the same fields without this method
	p := plain(f)
	p.Requests, p.Completed = f.AllRequests(), f.AllCompleted()
	return json.Marshal(p)
}

// facts computes Facts over recs, warm-up excluded.
func facts(recs []record.Request) Facts {
	var f Facts
	var lags, inflight []float64
	var q, p, d, tp, e2e, out float64
	tpN, phases := 0, 0
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		if r.OK() && r.Items > 0 {
			f.ItemAnswers++
			continue
		}
		f.Requests++
		lags = append(lags, msOf(r.Lag()))
		if !r.OK() {
			switch r.Error {
			case record.ErrRejected:
				f.RejectionRate++
			case record.ErrCanceled:
			default:
				f.ErrorRate++
			}
			if f.ErrorKinds == nil {
				f.ErrorKinds = map[string]int{}
			}
			f.ErrorKinds[string(r.Error)]++
			continue
		}
		ttft, ok := r.TTFT()
		if !ok {
			continue
		}
		f.Completed++
		f.ttfts = append(f.ttfts, msOf(ttft))
		f.inputs = append(f.inputs, float64(r.InputTokens))
		inflight = append(inflight, float64(r.InFlightAtSend))
		e, _ := r.E2E()
		e2e += msOf(e)
		out += float64(r.OutputTokens)
		if ph := r.ServerPhases; ph != nil && !ph.QueueUnknown { // without the queue the split says nothing
			phases++
			q, p, d = q+msOf(ph.Queue), p+msOf(ph.Prefill), d+msOf(ph.Decode)
			if r.OutputTokens >= 2 {
				tp += msOf(ph.Decode) / float64(r.OutputTokens-1)
				tpN++
			}
		} else if t, ok := r.TPOT(); ok {
			tp += msOf(t)
			tpN++
		}
	}
	if f.Requests > 0 {
		f.ErrorRate /= float64(f.Requests)
		f.RejectionRate /= float64(f.Requests)
	}
	f.LagP95MS = quantile(lags, 0.95)
	f.SendRateRPS = sendRate(recs)
	peak := 0
	for i := range recs {
		if !recs[i].Warmup && recs[i].InFlightAtSend > peak {
			peak = recs[i].InFlightAtSend
		}
	}
	for i := range recs {
		r := &recs[i]
		if !r.Warmup && msOf(r.Lag()) > LagFloorMS {
			f.Lagged++
			if peak > 0 && r.InFlightAtSend >= peak {
				f.LaggedAtCap++
			}
		}
	}
	n := float64(f.Completed)
	if f.Completed == 0 {
		return f
	}
	f.ServerPhases = phases == f.Completed
	if f.ServerPhases {
		f.QueueMS, f.PrefillMS, f.DecodeMS = q/n, p/n, d/n
	}
	if tpN > 0 && (f.ServerPhases || phases == 0) {
		f.TPOTMS = tp / float64(tpN)
	}
	f.TTFTMS, f.TTFTP90MS = mean(f.ttfts), quantile(f.ttfts, 0.9)
	f.E2EMS, f.OutputMean, f.InputMean = e2e/n, out/n, mean(f.inputs)
	f.InFlight = mean(inflight)
	f.RhoInFlight = spearman(f.ttfts, inflight)
	f.RhoInput = spearman(f.ttfts, f.inputs)
	return f
}

// prefillFit is the baseline's TTFT as a function of input length: a
// least-squares line when the baseline's prompts vary in length, else TTFT
// proportional to input (an upper bound on how prefill scales, since TTFT
// also holds fixed costs).
func (f *Facts) prefillFit() (a, b float64) {
	mx, my := mean(f.inputs), mean(f.ttfts)
	var sxx, sxy float64
	for i := range f.inputs {
		sxx += (f.inputs[i] - mx) * (f.inputs[i] - mx)
		sxy += (f.inputs[i] - mx) * (f.ttfts[i] - my)
	}
	if len(f.inputs) >= 10 && sxx > 0 && mx > 0 && math.Sqrt(sxx/float64(len(f.inputs)))/mx > 0.1 {
		b = math.Max(0, sxy/sxx)
		return my - b*mx, b
	}
	if mx > 0 {
		return 0, my / mx
	}
	return my, 0
}

func msOf[T ~int64](d T) float64 { return float64(d) / 1e6 }

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(pos)
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (pos-float64(lo))*(s[lo+1]-s[lo])
}

// spearman is the rank correlation of x and y (0 when either is constant).
func spearman(x, y []float64) float64 {
	if len(x) < 3 || len(x) != len(y) {
		return 0
	}
	rx, ry := ranks(x), ranks(y)
	mx, my := mean(rx), mean(ry)
	var sxy, sxx, syy float64
	for i := range rx {
		sxy += (rx[i] - mx) * (ry[i] - my)
		sxx += (rx[i] - mx) * (rx[i] - mx)
		syy += (ry[i] - my) * (ry[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// ranks gives average ranks (ties share the mean of their ranks).
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	out := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			out[idx[k]] = r
		}
		i = j + 1
	}
	return out
}

// sendRate is (n − 1) / (last send − first send) over measured requests.
func sendRate(recs []record.Request) float64 {
	n := 0
	var lo, hi int64
	for i := range recs {
		if recs[i].Warmup {
			continue
		}
		t := int64(recs[i].Sent)
		if n == 0 || t < lo {
			lo = t
		}
		if n == 0 || t > hi {
			hi = t
		}
		n++
	}
	if n < 2 || hi <= lo {
		return 0
	}
	return float64(n-1) / (float64(hi-lo) / 1e9)
}
