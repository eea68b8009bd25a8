package loadgen

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/record"
)

// TestServerTimingListIsBounded: a knee_timing extension listing far more
// token times than max_tokens allows would be kept in the record; the
// request ends as bad_payload instead, keeping none.
func TestServerTimingListIsBounded(t *testing.T) {
	times := strings.TrimSuffix(strings.Repeat("1.5,", 5000), ",")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", contentChunk)
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"knee_timing\":{\"queue_ms\":1,\"prefill_ms\":1,\"decode_ms\":1,\"token_times_ms\":[%s]}}\n\n", times)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	res := run(t, Config{BaseURL: srv.URL, Concurrency: 1, Requests: 1}, promptSource(3))
	r := res.Records[0]
	if r.Error != record.ErrBadPayload || len(r.ServerTokenTimes) != 0 {
		t.Fatalf("error %q (%s) with %d server token times kept, want bad_payload keeping none", r.Error, r.ErrorMessage, len(r.ServerTokenTimes))
	}
}
