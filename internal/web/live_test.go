package web

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
	"github.com/knee-dev/knee/internal/stats"
	"github.com/knee-dev/knee/internal/store"
)

// TestLiveAcrossHandles: a run written through one database handle (as a
// knee bench in another process writes it) streams to the live view served
// from another, batch by batch, and the stream ends when the run finishes.
func TestLiveAcrossHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "knee.db")
	writer, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	reader, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	s, err := New(Config{Store: reader})
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newTestServerWith(t, s)

	rw, err := writer.BeginRun(store.RunMeta{Kind: store.KindBench, Target: "embedded", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	add := func(from, n int) {
		for i := from; i < from+n; i++ {
			at := time.Duration(i) * 10 * time.Millisecond
			rw.Add(&record.Request{ID: int64(i), Scheduled: at, Sent: at, FirstToken: at + 5*time.Millisecond, Done: at + 50*time.Millisecond,
				StreamEnd: at + 50*time.Millisecond, InputTokens: 10, OutputTokens: 5, ServerPhases: &record.Phases{Queue: time.Millisecond, Prefill: 4 * time.Millisecond, Decode: 45 * time.Millisecond}})
		}
		if err := rw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	add(0, 5)
	res, err := ts.Client().Get(ts.URL + "/api/runs/" + itoa(rw.ID()) + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	next := func() (typ string, u liveUpdate) {
		typ = "message"
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				if typ == "message" {
					if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &u); err != nil {
						t.Fatal(err)
					}
				}
			case line == "":
				return typ, u
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return
	}
	_, u := next()
	if u.Run.Status != store.StatusRunning || u.Run.Records != 5 || len(u.New) != 5 || u.Summary.Completed != 5 {
		t.Fatalf("first event: %+v records, %d new, %d completed", u.Run, len(u.New), u.Summary.Completed)
	}
	add(5, 3)
	_, u = next()
	if u.Run.Records != 8 || len(u.New) != 3 || u.New[0].ID != 5 || u.New[0].QueueMS != 1 {
		t.Fatalf("second event: %d records, new %+v", u.Run.Records, u.New)
	}
	if err := rw.Finish(stats.Summarize(nil, stats.Options{}), store.StatusComplete); err != nil {
		t.Fatal(err)
	}
	_, u = next()
	if u.Run.Status != store.StatusComplete {
		t.Fatalf("after Finish: status %q", u.Run.Status)
	}
	if typ, _ := next(); typ != "end" {
		t.Fatalf("last event %q, want end", typ)
	}
}
