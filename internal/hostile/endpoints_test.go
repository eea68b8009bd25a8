package hostile_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/hostile"
	"github.com/knee-dev/knee/internal/loadgen"
	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
)

// wantEndpointKind is the error kind knee must record for each endpoint
// fault, for an answer of items and for a Messages stream.
var wantEndpointKind = map[hostile.EndpointFault][2]record.ErrorKind{
	hostile.EndpointOK:     {record.ErrNone, record.ErrNone},
	hostile.Status500Body:  {record.ErrHTTP5xx, record.ErrHTTP5xx},
	hostile.Overloaded:     {record.ErrRejected, record.ErrRejected},
	hostile.NotJSON:        {record.ErrBadPayload, record.ErrBadPayload},
	hostile.Truncated:      {record.ErrBadPayload, record.ErrBadPayload},
	hostile.Dropped:        {record.ErrStreamBroken, record.ErrStreamBroken},
	hostile.ErrorIn200:     {record.ErrRejected, record.ErrRejected},
	hostile.TooFewItems:    {record.ErrBadPayload, record.ErrStreamBroken},
	hostile.WrongShape:     {record.ErrBadPayload, record.ErrBadPayload},
	hostile.DuplicateIndex: {record.ErrBadPayload, record.ErrHTTP4xx},
}

// TestEndpointAnswersClassified runs embeddings, both rerank shapes and
// Messages against a server that answers every fault in turn: one record
// per request read, each classified as its fault calls for with a
// message, ok only where the server answered in full; nothing crashes.
func TestEndpointAnswersClassified(t *testing.T) {
	faults := hostile.EndpointFaults()
	for _, c := range []struct {
		name string
		cfg  loadgen.Config
	}{
		{"embeddings", loadgen.Config{API: openai.APIEmbeddings, Items: 3}},
		{"rerank", loadgen.Config{API: openai.APIRerank, Items: 4}},
		{"rerank TEI", loadgen.Config{API: openai.APIRerank, Items: 2, RerankPath: openai.RerankTEI}},
		{"messages", loadgen.Config{API: openai.APIMessages}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hs := hostile.NewEndpoints(func(id int64) hostile.EndpointFault { return faults[id%int64(len(faults))] })
			ts := httptest.NewServer(hs)
			defer ts.Close()
			cfg := c.cfg
			cfg.BaseURL, cfg.Concurrency, cfg.Requests, cfg.RequestTimeout = ts.URL, 4, int64(2*len(faults)), 5*time.Second
			r, err := loadgen.Start(context.Background(), cfg, source)
			if err != nil {
				t.Fatal(err)
			}
			res := r.Wait()
			log := hs.Log()
			if len(res.Records) != 2*len(faults) || len(log) != len(res.Records)+int(res.ConnectionRetries) {
				t.Fatalf("%d records, %d requests read, %d retries", len(res.Records), len(log), res.ConnectionRetries)
			}
			byID := map[int64]hostile.EndpointEntry{}
			for _, e := range log {
				byID[e.ID] = e
			}
			stream := 0
			if cfg.API == openai.APIMessages {
				stream = 1
			}
			for _, rec := range res.Records {
				e, ok := byID[rec.ID]
				if !ok {
					t.Errorf("request %d: never read by the server", rec.ID)
					continue
				}
				if want := wantEndpointKind[e.Fault][stream]; rec.Error != want {
					t.Errorf("request %d (%s): %q, want %q; message: %.200s", rec.ID, e.Fault, rec.Error, want, rec.ErrorMessage)
				}
				if rec.OK() != e.Answered {
					t.Errorf("request %d (%s): ok=%v, answered in full=%v", rec.ID, e.Fault, rec.OK(), e.Answered)
				}
				if !rec.OK() && rec.ErrorMessage == "" {
					t.Errorf("request %d (%s): failed with no message", rec.ID, e.Fault)
				}
				if rec.OK() && stream == 0 && rec.Items != cfg.Items {
					t.Errorf("request %d: %d items, want %d", rec.ID, rec.Items, cfg.Items)
				}
			}
		})
	}
}
