package web

import (
	"maps"
	"slices"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// itemSecond is one second of an embeddings or rerank run in the live
// view: such answers come whole, so the summary's per-second TTFT is empty
// for them; the view charts their items and E2E instead.
type itemSecond struct {
	T        int     `json:"t_s"`   // seconds since run start, as the summary's series
	Items    int     `json:"items"` // items answered in the second
	E2EP50MS float64 `json:"e2e_p50_ms"`
	E2EP95MS float64 `json:"e2e_p95_ms"`
}

// itemSeries buckets the completed answers of items by the second they
// ended in (nearest-rank percentiles, enough for a live chart); nil when
// there are none (a streamed run).
func itemSeries(recs []record.Request) []itemSecond {
	e2e := map[int][]time.Duration{}
	items := map[int]int{}
	for i := range recs {
		r := &recs[i]
		d, ok := r.E2E()
		if !r.OK() || r.Items == 0 || r.HasFirstToken() || !ok {
			continue
		}
		t := int(r.Done / time.Second)
		e2e[t] = append(e2e[t], d)
		items[t] += r.Items
	}
	// Only the seconds with answers: sparse, so a record's odd end time
	// cannot make the series huge.
	var out []itemSecond
	for _, t := range slices.Sorted(maps.Keys(e2e)) {
		ds := e2e[t]
		slices.Sort(ds)
		out = append(out, itemSecond{T: t, Items: items[t],
			E2EP50MS: ms(ds[min(len(ds)-1, len(ds)/2)]), E2EP95MS: ms(ds[min(len(ds)-1, len(ds)*95/100)])})
	}
	return out
}
