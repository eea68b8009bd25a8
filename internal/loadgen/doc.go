// Package loadgen drives an OpenAI-compatible streaming endpoint with a
// closed-loop (fixed concurrency) or open-loop (arrival schedule) load and
// turns every request into a record.Request.
//
// Reading order: Config, Start, Run and Result (this file) hold the run's
// life cycle: two contexts — one stops issuing at the end of the run, the
// other hard-stops in-flight requests after a grace period — and results
// that close only when every worker is done. schedule.go has the load
// models: closed-loop workers and the open-loop dispatcher that sends on
// schedule however slowly the server answers. client.go runs one request:
// HTTP, SSE, chunk decoding, with every socket read timestamped before
// parsing. reach.go checks, before a run, that a target answers at all.
// stamp.go says where the timestamps come from: on Linux the
// kernel's receive time of the bytes (SO_TIMESTAMPNS, stamp_linux.go),
// elsewhere the monotonic clock when the read returns.
//
// Error kinds (record.ErrorKind): a failed dial is connect; RequestTimeout
// is timeout; 429 and 503 are rejected (the message keeps Retry-After);
// other 4xx/5xx are http_4xx/http_5xx with the body's start in the
// message; an HTML or JSON body where an event stream was expected, or an
// undecodable chunk, is bad_payload; a stream that ends without [DONE] or
// a finish_reason, or a connection that breaks, is stream_broken; an
// error event mid-stream takes the kind of its HTTP-like code (else
// stream_broken); requests cut by the hard stop (ctx canceled, or the
// grace period over) are canceled, with what they received so far.
//
// A failing target costs bounded work: a closed-loop user waits after
// consecutive failures, and at least a rejection's Retry-After
// (failureBackoff, classes.go); a run whose every request fails to
// connect for Config.StopIfUnreachable stops (StopUnreachable at the
// start, StopTargetGone later). Result.Notes says what the run did of its
// own accord.
//
// Measuring what a misbehaving target costs (internal/hostile's server;
// the peak RSS is /usr/bin/time's): a closed loop on a target that closes
// every connection after its response, an endless stream, a closed loop
// that fails every request, and one whose every request is refused with
// Retry-After:
//
//	go test -count=1 -v -run 'TestServerClosingAfterEveryResponse|TestLearnsToStopReusing' ./internal/loadgen
//	go run ./internal/hostile/cmd/hostileserver -fault never-ending &
//	/usr/bin/time -f '%e s, %M KB' knee bench --url http://127.0.0.1:18800 --model m --concurrency 4 \
//	    --duration 10m --input-tokens 16 --output-tokens 128 --no-store --quiet --out /tmp/endless
//	(-fault 500 for the failing loop, -fault 429 for Retry-After, -die 8s to see the target go away)
//	bash scripts/endless.sh   # the endless stream, its RSS sampled over the run (docs/performance.md)
//
// Measuring the client itself (see cpu_test.go): truth at 1,000 streams
// with kernel and with user-space timestamps, CPU per token (both ways)
// against a bare socket reader, the per-chunk path, one socket read:
//
//	go test -run 'TestTruth1000$' -count=1 -v ./internal/loadgen
//	go test -run '^$' -bench 'ClientCPU|ReadFloor' -benchtime 1x -v ./internal/loadgen
//	go test -run '^$' -bench 'ChunkPath|ConnRead' -benchmem ./internal/loadgen
package loadgen
