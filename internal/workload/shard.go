package workload

// Discard drops request i's pending item without using it: a shard of a
// sharded replay (loadgen.Shard) reads every arrival of the trace and
// keeps only its own, and the others' items must not pile up in memory.
func (s *TraceStream) Discard(i int64) { s.take(i) }
