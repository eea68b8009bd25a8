package record

import "time"

// Sink takes records as they finish, from the load's goroutines, and
// hands them in order to one writer goroutine: to a JSONL Writer, flushed
// at least once a second so a killed run loses at most its last second,
// and to also (a run database). Add never waits on a write.
type Sink struct {
	jsonl *Writer
	also  func(*Request)
	recs  chan *Request
	done  chan error
	tick  <-chan time.Time
	stop  func()
}

// NewSink starts a Sink writing to jsonl (nil: none) and calling also
// (nil: none) with each record. Close it to drain.
func NewSink(jsonl *Writer, also func(*Request)) *Sink {
	t := time.NewTicker(time.Second)
	return newSink(jsonl, also, t.C, t.Stop)
}

// newSink takes the flush ticks from tick, for tests.
func newSink(jsonl *Writer, also func(*Request), tick <-chan time.Time, stop func()) *Sink {
	s := &Sink{jsonl: jsonl, also: also, recs: make(chan *Request, 4096), done: make(chan error, 1), tick: tick, stop: stop}
	go s.loop()
	return s
}

// Add hands a copy of r to the writer goroutine: r may be reused after.
func (s *Sink) Add(r *Request) {
	c := r.Clone()
	s.recs <- &c
}

// Close waits for every record added to be written and flushed, and
// returns the first write or flush error. Call it once, after the last Add.
func (s *Sink) Close() error {
	close(s.recs)
	return <-s.done
}

func (s *Sink) loop() {
	defer s.stop()
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for {
		select {
		case r, ok := <-s.recs:
			if !ok {
				if s.jsonl != nil {
					keep(s.jsonl.Flush())
				}
				s.done <- firstErr
				return
			}
			if s.jsonl != nil {
				keep(s.jsonl.Write(r))
			}
			if s.also != nil {
				s.also(r)
			}
		case <-s.tick:
			if s.jsonl != nil {
				keep(s.jsonl.Flush())
			}
		}
	}
}
