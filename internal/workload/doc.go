// Package workload describes what a load test sends: how many tokens go in
// and come out of each request, when each request arrives, and the prompt
// text itself.
//
// Reading order:
//
//   - dist.go: length distributions ("512", "256:1024", "normal:512,128",
//     "lognormal:512,256") parsed by ParseDist.
//   - arrivals.go: arrival schedules (constant, poisson, gamma with
//     burstiness) as deterministic sequences of offsets from run start; no
//     clock is read, so tests check them by counting.
//   - tokenizer.go, hftokenizer.go: the Tokenizer interface, the built-in
//     offline tiktoken encodings (cl100k_base, o200k_base; rank files
//     embedded by tiktoken-go-loader) and a byte-level BPE reader for
//     HuggingFace tokenizer.json files. pretok.go and bpe.go are the shared
//     engine: hand-written pre-tokenisers for the known split patterns
//     (checked against a regexp engine) and the two BPE merge rules.
//     Encoding matches tiktoken-go token for token and is ~10-20x faster.
//   - prompt.go: prompts of exactly N tokens assembled from a pool of
//     single-token words, unique per request unless a shared prefix is asked.
//   - dataset.go: JSONL prompt files and ShareGPT conversation files.
//   - generator.go: Generator ties it together: Item(i) and Lengths(i) are
//     pure functions of (seed, i), so any number of goroutines (or the
//     simulator, a million times) can ask for request i in any order.
//   - seed.go: RandomSeed for runs where the user asked for no seed.
package workload
