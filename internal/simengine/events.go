package simengine

import (
	"container/heap"
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

// EventQueue is a min-heap of events.
type EventQueue struct {
	h   eventHeap
	seq uint64
}

// Push schedules ev; its Seq is assigned here.
func (q *EventQueue) Push(ev Event) {
	ev.Seq = q.seq
	q.seq++
	heap.Push(&q.h, ev)
}

// Pop removes and returns the earliest event.
func (q *EventQueue) Pop() Event { return heap.Pop(&q.h).(Event) }

// Peek returns the earliest event without removing it.
func (q *EventQueue) Peek() (Event, bool) {
	if len(q.h) == 0 {
		return Event{}, false
	}
	return q.h[0], true
}

// Len is the number of pending events.
func (q *EventQueue) Len() int { return len(q.h) }

type eventHeap []Event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	a, b := &h[i], &h[j]
	if a.Time != b.Time {
		return a.Time < b.Time
	}
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.Seq < b.Seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(Event)) }
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	ev := old[n-1]
	*h = old[:n-1]
	return ev
}

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
