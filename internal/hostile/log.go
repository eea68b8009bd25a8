package hostile

import "sync"

// logOf is a server's own record of the requests it read, safe for the
// handlers' goroutines.
type logOf[E any] struct {
	mu sync.Mutex
	es []E
}

func (l *logOf[E]) add(e E) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.es = append(l.es, e)
	return len(l.es) - 1
}

func (l *logOf[E]) update(i int, f func(*E)) {
	l.mu.Lock()
	f(&l.es[i])
	l.mu.Unlock()
}

func (l *logOf[E]) entries() []E {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]E(nil), l.es...)
}
