package workload

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// MixSchedule is the open-loop schedule of a mix whose classes bring their
// own rates: every such class's arrivals (its own process, on a seed of its
// own) and the shared schedule of the share classes (nil when none), merged
// in time order into one schedule. Arrival i's class is remembered as it is
// scheduled (ClassAt), one byte per arrival, so the request built for i
// later, on any goroutine, is of that class. The sequence is a pure
// function of the seed.
type MixSchedule struct {
	heads   []time.Duration // each source's next arrival
	sources []Arrivals      // the classes' (nil: not an own-rate class), then the shared one
	classOf []int           // each source's class index (-1: drawn by share)

	mu      sync.Mutex
	classes []int8 // class of arrival i; sharedClass: drawn by share
}

const sharedClass int8 = -1

// streamClassArrivals seeds each own-rate class's arrivals.
const streamClassArrivals uint64 = 0x636c617373000000 // "class"

// NewMixSchedule merges the own-rate classes' arrivals with shared, the
// schedule the share classes divide (nil when no class takes a share).
func NewMixSchedule(m *Mix, shared Arrivals, seed uint64) (*MixSchedule, error) {
	s := &MixSchedule{}
	for k := range m.Classes {
		c := &m.Classes[k]
		if c.RateRPS <= 0 {
			continue
		}
		a, err := NewArrivals(c.Arrival, c.RateRPS, c.burstiness(), mix64(seed^streamClassArrivals+uint64(k)))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: class %s: %w", m.Path, c.Line, c.Name, err)
		}
		s.sources, s.classOf = append(s.sources, a), append(s.classOf, k)
	}
	if shared != nil {
		s.sources, s.classOf = append(s.sources, shared), append(s.classOf, int(sharedClass))
	}
	if len(s.sources) == 0 {
		return nil, fmt.Errorf("%s: no class has a rate of its own and no shared rate was given", m.Path)
	}
	for _, a := range s.sources {
		s.heads = append(s.heads, a.Next())
	}
	return s, nil
}

// Next is the next arrival of any class (ties go to the earlier class).
func (s *MixSchedule) Next() time.Duration {
	j := 0
	for k := range s.heads {
		if s.heads[k] < s.heads[j] {
			j = k
		}
	}
	at := s.heads[j]
	s.heads[j] = s.sources[j].Next()
	s.mu.Lock()
	s.classes = append(s.classes, int8(s.classOf[j]))
	s.mu.Unlock()
	return at
}

// ClassAt is the class index of arrival i, or -1 when it belongs to the
// share classes (or has not been scheduled).
func (s *MixSchedule) ClassAt(i int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= int64(len(s.classes)) {
		return -1
	}
	return int(s.classes[i])
}

// arrivalWords is a class's own arrival process in words.
func (c *MixClass) arrivalWords() string {
	if c.CV > 0 {
		return fmt.Sprintf("%s (cv %g)", c.Arrival, c.CV)
	}
	return c.Arrival
}

// Describe is the class for a report: its share or own load, its lengths
// or dataset, its model.
func (c *MixClass) Describe() string {
	load := fmt.Sprintf("%.0f%%", c.Share*100)
	switch {
	case c.RateRPS > 0:
		load = fmt.Sprintf("own %g req/s %s", c.RateRPS, c.arrivalWords())
	case c.Concurrency > 0:
		load = fmt.Sprintf("own %d users", c.Concurrency)
	}
	in := "dataset " + c.Dataset
	if c.Input != nil {
		in = c.Input.String()
	}
	out := "the dataset's"
	if c.Output != nil {
		out = c.Output.String()
	}
	model := "base model"
	if c.Model != "" {
		model = c.Model
	}
	return fmt.Sprintf("%s %s (%s in, %s out, %s)", c.Name, load, in, out, model)
}

// OwnLoads is the classes' own loads in words, each class's arrival
// process or users ("" when every class takes a share).
func (m *Mix) OwnLoads() string {
	var parts []string
	for _, c := range m.Classes {
		switch {
		case c.RateRPS > 0:
			parts = append(parts, fmt.Sprintf("%s open loop %g req/s %s", c.Name, c.RateRPS, c.arrivalWords()))
		case c.Concurrency > 0:
			parts = append(parts, fmt.Sprintf("%s closed loop %d users", c.Name, c.Concurrency))
		}
	}
	return strings.Join(parts, "; ")
}

// LoadLine is a run's load line with the mix's own loads: the shared load
// (shared, the --rate or --concurrency without the run's bound) named as
// the share classes', each class's own load, then bound (", 100
// requests"), which holds for all of them together.
func (m *Mix) LoadLine(shared, bound string) string {
	own := m.OwnLoads()
	switch {
	case own == "":
		return shared + bound
	case !m.HasShares():
		return "own loads: " + own + bound
	}
	var sharers []string
	for _, c := range m.Classes {
		if !c.OwnLoad() {
			sharers = append(sharers, c.Name)
		}
	}
	return fmt.Sprintf("%s shared by %s; own loads: %s%s", shared, strings.Join(sharers, ", "), own, bound)
}

// OfferedRate is a run's offered rate: shared (the rate the share classes
// divide, if any) plus every own-rate class's.
func (m *Mix) OfferedRate(shared float64) float64 {
	if !m.OwnRates() {
		return shared
	}
	if !m.HasShares() {
		shared = 0
	}
	for _, c := range m.Classes {
		shared += c.RateRPS
	}
	return shared
}

// Split says how a run's requests were split among the classes, given
// each class's count, when some class brought its own load ("" otherwise,
// or with no request).
func (m *Mix) Split(count map[string]int) string {
	total := 0
	for _, c := range m.Classes {
		total += count[c.Name]
	}
	if m.OwnLoads() == "" || total == 0 {
		return ""
	}
	var parts []string
	for _, c := range m.Classes {
		n := count[c.Name]
		how := fmt.Sprintf("a %.0f%% share of the shared load", c.Share*100)
		switch {
		case c.RateRPS > 0:
			how = fmt.Sprintf("its own %g req/s %s", c.RateRPS, c.arrivalWords())
		case c.Concurrency > 0:
			how = fmt.Sprintf("its own %d users", c.Concurrency)
		}
		parts = append(parts, fmt.Sprintf("%s %d (%.1f%%, %s)", c.Name, n, 100*float64(n)/float64(total), how))
	}
	return fmt.Sprintf("load split among the mix's classes, of %d requests: %s", total, strings.Join(parts, "; "))
}
