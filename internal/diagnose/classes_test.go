package diagnose

import (
	"testing"
	"time"

	"github.com/knee-dev/knee/internal/record"
)

// classRecords makes n completed requests of a class whose server queue is
// queue, with a 20 ms prefill and 500 ms of decode.
func classRecords(class string, n int, queue time.Duration) []record.Request {
	var out []record.Request
	for i := range n {
		sent := time.Duration(i) * 100 * time.Millisecond
		ph := &record.Phases{Queue: queue, Prefill: 20 * time.Millisecond, Decode: 500 * time.Millisecond}
		first := sent + ph.Queue + ph.Prefill
		out = append(out, record.Request{ID: int64(i), Class: class, Sent: sent, Scheduled: sent, FirstToken: first,
			Done: first + ph.Decode, StreamEnd: first + ph.Decode, InputTokens: 500, OutputTokens: 100, ServerPhases: ph, InFlightAtSend: 4})
	}
	return out
}

// TestClassesNamesWhoSuffersAndWhy: an adapter's class queueing where the
// base model's does not waits for an adapter slot; unknown adapters make
// it the queue; classes waiting alike name none.
func TestClassesNamesWhoSuffersAndWhy(t *testing.T) {
	recs := append(append(classRecords("chat", 40, 5*time.Millisecond), classRecords("sql", 40, 900*time.Millisecond)...),
		classRecords("summarize", 40, 8*time.Millisecond)...)
	adapters := map[string]string{"chat": "", "sql": "adapter-sql", "summarize": "adapter-sum"}
	d := Classes(recs, []string{"chat", "summarize", "sql"}, adapters)
	if d == nil || d.Suffers != "sql" || d.Cause != CauseLoRAWait {
		t.Fatalf("%+v; want sql waiting for an adapter slot", d)
	}
	if d.Classes[0].Class != "chat" || d.Classes[1].Class != "summarize" || d.Classes[1].Cause == CauseLoRAWait {
		t.Errorf("classes %+v: want the given order, summarize (queueing as chat does) not waiting for a slot", d.Classes)
	}
	if d := Classes(recs, nil, nil); d.Suffers != "sql" || d.Cause != CauseQueue {
		t.Errorf("adapters unknown: %q because %q; want sql, the queue", d.Suffers, d.Cause)
	}
	even := append(classRecords("chat", 40, 5*time.Millisecond), classRecords("sql", 40, 6*time.Millisecond)...)
	if d := Classes(even, nil, adapters); d.Suffers != "" {
		t.Errorf("classes waiting alike: %q suffers (%s)", d.Suffers, d.Text)
	}
	if d := Classes(classRecords("chat", 10, 0), nil, nil); d != nil {
		t.Errorf("one class: %+v; want no per-class diagnosis", d)
	}
}
