// Package stats turns records into the aggregates of SPEC §2: throughput,
// goodput, latency distributions, error and rejection rates, offered vs
// achieved rate, peak in-flight and a per-second time series. No clock, no
// I/O: it only reads records.
//
// Reading order: summary.go (the stable JSON shape, Summary and Dist),
// accumulator.go (Options, Accumulator.Add, Summarize: which record feeds
// which number), hist.go (the streaming histogram behind every distribution).
//
// Definitions, as the code applies them:
//   - Measurement window: records flagged Warmup are left out (and counted
//     in Window); the window runs from the first measured request's send to
//     the last measured request's end (stream end, or last chunk if later).
//   - Request and token throughput count completed (error-free) requests
//     and their usage tokens over the window; goodput counts the completed
//     requests Options.Good accepts.
//   - TTFT, TTFT(sched), ITL, TPOT and E2E are over completed requests; the
//     per-request definitions live in package record. ITL has one value per
//     gap between consecutive content chunks: a chunk carrying k tokens
//     adds one gap, not k. TPOT is per token and excludes the first.
//   - Lag (sent − scheduled) is over every measured request, failed or not.
//   - Failed requests are summarised apart (FailedE2E: send to the end of
//     their stream); AdjustedTTFT counts them, and completed requests that
//     carried no content, as infinitely slow (null in JSON).
//   - Achieved rate is the send rate: (sent − 1) / (last send − first send),
//     comparable to the offered rate whatever the responses' latency.
//   - Peak in-flight is exact, from every request's send and end (warm-up
//     requests included: the server carries them), at sends in the window.
//   - Percentiles interpolate linearly between closest ranks (numpy's
//     default, used by vLLM's benchmark). Up to 2048 values a distribution
//     is exact; beyond, log-linear buckets keep it within 0.05%.
package stats
