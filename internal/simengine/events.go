package simengine

import (
	"hash/fnv"
	"math/rand/v2"
)

// Event is one scheduled happening in a simulation built on the Engine (an
// arrival, a step end, a client going away). Events are totally ordered by
// (Time, Priority, Seq): equal times break ties by priority, then by the
// order of Push, so a run never depends on heap internals.
type Event struct {
	Time     int64 // virtual ns
	Priority int   // lower runs first at equal times
	Seq      uint64
	Kind     int   // meaning chosen by the user of the queue
	ID       int64 // request or user id
}

// EventQueue is a min-heap of events (hand-written rather than
// container/heap so that pushing and popping do not allocate).
type EventQueue struct {
	h   []Event
	seq uint64
}

func (q *EventQueue) less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	if a.Time != b.Time {
		return a.Time < b.Time
	}
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.Seq < b.Seq
}

// Push schedules ev; its Seq is assigned here.
func (q *EventQueue) Push(ev Event) {
	ev.Seq = q.seq
	q.seq++
	q.h = append(q.h, ev)
	for i := len(q.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

// Pop removes and returns the earliest event; the queue must not be empty.
func (q *EventQueue) Pop() Event {
	top := q.h[0]
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
	return top
}

// Peek returns the earliest event without removing it.
func (q *EventQueue) Peek() (Event, bool) {
	if len(q.h) == 0 {
		return Event{}, false
	}
	return q.h[0], true
}

// Len is the number of pending events.
func (q *EventQueue) Len() int { return len(q.h) }

// SubsystemSeed derives an independent seed for one subsystem (arrivals,
// lengths, faults, ...) from a run seed, so adding randomness to one
// subsystem never shifts the random stream of another.
func SubsystemSeed(seed uint64, subsystem string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(subsystem))
	return seed ^ h.Sum64()
}

// NewRNG returns the seeded random source of one subsystem.
func NewRNG(seed uint64, subsystem string) *rand.Rand {
	s := SubsystemSeed(seed, subsystem)
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}
