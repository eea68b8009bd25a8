// Package realserver holds what knee needs to be tested against a real
// inference server it did not write: a GGUF writer (gguf.go), the
// random-weight llama test model it writes (model.go; its byte-level BPE
// vocabulary of English words and the matching tokenizer.json in vocab.go,
// words.go; the command cmd/testmodel puts them on disk), and integration
// tests that drive the knee CLI against Ollama (integration_test.go), and
// against a server that closes every connection after its response as
// llama.cpp's does (closer_test.go: hostile.Closer, alone and as a reverse
// proxy in front of Ollama).
//
// .ci/run starts the server with scripts/ollama.sh and exports
// KNEE_REALSERVER_URL, KNEE_REALSERVER_MODEL, KNEE_REALSERVER_TOKENIZER
// and KNEE_REALSERVER_PARALLEL;
// without them the integration tests skip and say how to start one (in CI,
// where CI is set, they fail instead).
//
// The model is built so that a load test measures the server, not the
// model's whims: every token it can sample is a plain ASCII word (valid text
// in any chunk), and end-of-sequence never wins, so every reply has exactly
// max_tokens tokens without ignore_eos, which Ollama's OpenAI API lacks.
package realserver
