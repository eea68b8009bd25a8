package cli

import (
	"bufio"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/knee-dev/knee/internal/hostile"
	"github.com/knee-dev/knee/internal/record"
)

// TestBenchAgainstHostileServer runs knee bench, as a user would, against
// a server that injects a fault into every other request, and holds
// records.jsonl to the server's own log: as many records as requests the
// server read (no retries: this server never closes a connection it did
// not fail a request on), as many ok records as streams it answered in
// full, and per fault as many records of the kind it calls for. The
// server's first request is bench's one start-up measurement, no record.
// (internal/hostile's suite matches them request by request.)
func TestBenchAgainstHostileServer(t *testing.T) {
	faults := hostile.Faults()
	var reads atomic.Int64
	hs := hostile.New(func(int64) hostile.Fault {
		// The first request read is bench's start-up measurement of the
		// prompt overhead, sent before the load: answered normally.
		k := reads.Add(1) - 2
		if k < 0 || k%2 == 0 {
			return hostile.OK
		}
		return faults[(k/2)%int64(len(faults))]
	})
	srv := httptest.NewServer(hs)
	defer srv.Close()
	out := t.TempDir()
	n := 2 * len(faults)
	code, _, stderr := kneeCmd(t, "bench", "--url", srv.URL, "--model", "m", "--requests", strconv.Itoa(n), "--concurrency", "4",
		"--request-timeout", "2s", "--ignore-eos", "false", "--out", out, "--no-store", "--quiet")
	if code != ExitOK {
		t.Logf("exit %d: %s", code, stderr)
	}
	if testing.Verbose() {
		t.Logf("stderr: %s", stderr)
	}
	f, err := os.Open(filepath.Join(out, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []record.Request
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r record.Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	log := hs.Log()
	if len(log) > 0 {
		log = log[1:] // the start-up measurement
	}
	if len(recs) != n || len(log) != n {
		t.Fatalf("%d records, %d requests read by the server, want %d of each", len(recs), len(log), n)
	}
	want := map[record.ErrorKind]int{}
	answered, retries := 0, 0
	sizeFaults := 0 // oversized and undelimited: bad_payload, or timeout when read too slowly
	for _, e := range log {
		if e.Answered {
			answered++
		}
		switch e.Fault {
		case hostile.OK:
			if !e.Answered {
				t.Errorf("the server did not finish an ok stream")
			}
		case hostile.Status500:
			want[record.ErrHTTP5xx]++
		case hostile.Status429, hostile.Status503:
			want[record.ErrRejected]++
		case hostile.Stall, hostile.Heartbeats, hostile.StallHeaders:
			want[record.ErrTimeout]++
		case hostile.Cut, hostile.ReadThenClose:
			want[record.ErrStreamBroken]++
		case hostile.Oversized, hostile.Undelimited:
			sizeFaults++
		default:
			want[record.ErrBadPayload]++
		}
	}
	got := map[record.ErrorKind]int{}
	ok := 0
	for _, r := range recs {
		retries += r.ConnectionRetries
		if r.OK() {
			ok++
		} else {
			got[r.Error]++
		}
	}
	if ok != answered {
		t.Errorf("%d records ok, the server answered %d in full", ok, answered)
	}
	if retries != 0 {
		t.Errorf("%d connection retries; none is proven unread here", retries)
	}
	bad, timeout := got[record.ErrBadPayload], got[record.ErrTimeout]
	if bad < want[record.ErrBadPayload] || timeout < want[record.ErrTimeout] ||
		bad+timeout != want[record.ErrBadPayload]+want[record.ErrTimeout]+sizeFaults {
		t.Errorf("%d bad_payload and %d timeout records; the faults call for %d and %d, and %d of either (got %v)",
			bad, timeout, want[record.ErrBadPayload], want[record.ErrTimeout], sizeFaults, got)
	}
	for _, k := range []record.ErrorKind{record.ErrHTTP5xx, record.ErrRejected, record.ErrStreamBroken} {
		if got[k] != want[k] {
			t.Errorf("%d %s records, the server's faults call for %d (got %v)", got[k], k, want[k], got)
		}
	}
}
