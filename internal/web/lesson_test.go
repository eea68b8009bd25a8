package web

import (
	"strings"
	"testing"

	"github.com/knee-dev/knee/internal/diagnose"
)

// The lesson's pair and table through knee's own code: A is
// queue_pressure, B decode_bound (not healthy); the table's knee is
// between 25 and 35, its SLO-safe load 25, its highest throughput at 45
// and said not to be healthy.
func TestLessonThroughKnee(t *testing.T) {
	l, err := buildLesson()
	if err != nil {
		t.Fatal(err)
	}
	if v := l.Pair[0].Diagnosis.Verdict; v != diagnose.QueuePressure {
		t.Errorf("A: %s, want queue_pressure", v)
	}
	if v := l.Pair[1].Diagnosis.Verdict; v != diagnose.DecodeBound || l.Pair[1].Diagnosis.DominantPhase != "decode" {
		t.Errorf("B: %s (dominant %s), want decode_bound naming decode", v, l.Pair[1].Diagnosis.DominantPhase)
	}
	for _, s := range l.Pair {
		if s.TotalS != 4.0 {
			t.Errorf("%s totals %v s, the lesson's 4.0", s.Name, s.TotalS)
		}
	}
	tab := l.Table
	t.Logf("knee %v (%s); SLO-safe %v (%s); highest %v: %s", tab.Knee.Load, tab.Knee.Reason, tab.SLOSafe.Load, tab.SLOSafe.Reason, tab.Highest, tab.Why)
	if !tab.Knee.Found() || tab.Knee.Load < 25 || tab.Knee.Load > 35 {
		t.Errorf("knee at %v, the lesson's 25–35", tab.Knee.Load)
	}
	if !tab.SLOSafe.Found() || tab.SLOSafe.Load != 25 {
		t.Errorf("SLO-safe at %v, the lesson's 25", tab.SLOSafe.Load)
	}
	// The load is read as offered requests per second (its rows fit that,
	// not users in flight) and every sentence about it says so.
	for _, txt := range []string{tab.Knee.Reason, tab.SLOSafe.Reason, tab.Why} {
		if strings.Contains(txt, "in flight") || strings.Contains(txt, "users") || !strings.Contains(txt, "req/s") {
			t.Errorf("the lesson's load is not named as offered req/s: %q", txt)
		}
	}
	if !strings.Contains(tab.LoadUnit, "req/s") || !strings.Contains(tab.LoadNote, "Little's law") {
		t.Errorf("the load column is %q, said why: %q", tab.LoadUnit, tab.LoadNote)
	}
	if tab.Highest != 45 || !strings.Contains(tab.Why, "not a healthy operating point") || !strings.Contains(tab.Why, "12.4 s") {
		t.Errorf("highest throughput %v: %s", tab.Highest, tab.Why)
	}
}
