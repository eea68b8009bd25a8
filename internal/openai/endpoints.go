package openai

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// The APIs beyond chat and completions (docs/servers.md says which servers
// speak which).
const (
	// APIEmbeddings is POST /v1/embeddings: a batch of inputs, answered
	// whole with one vector each.
	APIEmbeddings = "embeddings"
	// APIRerank is a rerank endpoint: a query and documents, answered whole
	// with a score per document. RerankVLLM's path takes vLLM's (and
	// Cohere's, Jina's) request shape, RerankTEI's takes TEI's.
	APIRerank = "rerank"
	// APIMessages is Anthropic's POST /v1/messages, streamed as typed
	// events (messages.go).
	APIMessages = "messages"
)

// The rerank paths and their request shapes.
const (
	RerankVLLM = "/v1/rerank" // {"model", "query", "documents": [...]}
	RerankTEI  = "/rerank"    // {"query", "texts": [...]}
)

// AnthropicVersion is the anthropic-version header sent with --api messages.
const AnthropicVersion = "2023-06-01"

// APIs lists every --api value, in the order help shows them.
var APIs = []string{APIChat, APICompletions, APIOllama, APIEmbeddings, APIRerank, APIMessages}

// ItemsAPI reports an API answered whole with one item per input
// (embeddings, rerank): no stream, so no TTFT, ITL or TPOT.
func ItemsAPI(api string) bool { return api == APIEmbeddings || api == APIRerank }

// CheckRerankPath validates a rerank path.
func CheckRerankPath(path string) error {
	if path != RerankVLLM && path != RerankTEI {
		return fmt.Errorf("rerank path %q: want %s (vLLM's request shape) or %s (TEI's)", path, RerankVLLM, RerankTEI)
	}
	return nil
}

// EndpointFor is Endpoint with the rerank path ("" is RerankVLLM).
func EndpointFor(baseURL, api, rerankPath string) (string, error) {
	if api != APIRerank || rerankPath == "" || rerankPath == RerankVLLM {
		return Endpoint(baseURL, api)
	}
	if err := CheckRerankPath(rerankPath); err != nil {
		return "", err
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("base URL %q: want http://HOST[:PORT][/v1]", baseURL)
	}
	// TEI serves /rerank at its root, beside where /v1 would be.
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1") + rerankPath
	u.RawPath = ""
	return u.String(), nil
}

// Texts derives n distinct texts of the prompt's length from it: text k
// is the prompt rotated at the space after the k-th n-th of its length
// (at a character boundary where no space follows), so a batch neither
// repeats itself nor shares a prefix a server could cache, and holds the
// same words.
func Texts(prompt string, n int) []string {
	if n <= 1 {
		return []string{prompt}
	}
	out := make([]string, n)
	out[0] = prompt
	for k := 1; k < n; k++ {
		cut := k * len(prompt) / n
		if sp := strings.IndexByte(prompt[cut:], ' '); sp >= 0 {
			cut += sp
			out[k] = prompt[cut+1:] + " " + prompt[:cut]
			continue
		}
		for cut < len(prompt) && !isRuneStart(prompt[cut]) {
			cut++
		}
		out[k] = prompt[cut:] + prompt[:cut]
	}
	return out
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// RerankQuery is the query of a rerank request built from a prompt: its
// first 16 words.
func RerankQuery(prompt string) string {
	words := 0
	for i := 0; i < len(prompt); i++ {
		if prompt[i] == ' ' {
			if words++; words == 16 {
				return prompt[:i]
			}
		}
	}
	return prompt
}

// appendStrings appends a JSON array of strings.
func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}

// appendItemsBody is the body of an embeddings or rerank request: the
// prompt as Items texts (Texts), a rerank query from its start.
func appendItemsBody(dst []byte, p Params) []byte {
	texts := Texts(p.Prompt, max(p.Items, 1))
	if p.API == APIEmbeddings {
		dst = append(dst, `{"model":`...)
		dst = AppendString(dst, p.Model)
		dst = append(dst, `,"input":`...)
		dst = appendStrings(dst, texts)
		return append(dst, `,"encoding_format":"float"}`...)
	}
	if p.RerankPath == RerankTEI {
		dst = append(dst, `{"query":`...)
		dst = AppendString(dst, RerankQuery(p.Prompt))
		dst = append(dst, `,"texts":`...)
		dst = appendStrings(dst, texts)
		return append(dst, '}')
	}
	dst = append(dst, `{"model":`...)
	dst = AppendString(dst, p.Model)
	dst = append(dst, `,"query":`...)
	dst = AppendString(dst, RerankQuery(p.Prompt))
	dst = append(dst, `,"documents":`...)
	dst = appendStrings(dst, texts)
	return append(dst, '}')
}

// Image is one image of a prompt, encoded (image/png or image/jpeg).
type Image struct {
	MediaType string
	Data      []byte
}

// appendImagePart appends an image content part: OpenAI's image_url with
// a data URL, or Anthropic's base64 source.
func appendImagePart(dst []byte, img Image, anthropic bool) []byte {
	if anthropic {
		dst = append(dst, `{"type":"image","source":{"type":"base64","media_type":`...)
		dst = AppendString(dst, img.MediaType)
		dst = append(dst, `,"data":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, img.Data)
		return append(dst, `"}}`...)
	}
	dst = append(dst, `{"type":"image_url","image_url":{"url":"data:`...)
	dst = append(dst, img.MediaType...)
	dst = append(dst, ";base64,"...)
	dst = base64.StdEncoding.AppendEncode(dst, img.Data)
	return append(dst, `"}}`...)
}

// appendUserContent appends the user message's content: the prompt as a
// string, or with images a list of parts (the text, then the images).
func appendUserContent(dst []byte, p Params, anthropic bool) []byte {
	if len(p.Images) == 0 {
		return AppendString(dst, p.Prompt)
	}
	dst = append(dst, `[{"type":"text","text":`...)
	dst = AppendString(dst, p.Prompt)
	dst = append(dst, '}')
	for _, img := range p.Images {
		dst = append(dst, ',')
		dst = appendImagePart(dst, img, anthropic)
	}
	return append(dst, ']')
}

// DefaultMessagesMaxTokens is the max_tokens of a Messages request whose
// workload sets none: the API requires one.
const DefaultMessagesMaxTokens = 4096

// appendMessagesBody is the /v1/messages body: the history and the user's
// prompt, streamed. Anthropic's API has no ignore_eos, min_tokens or
// stream_options; usage always comes in message_start and message_delta.
func appendMessagesBody(dst []byte, p Params) []byte {
	dst = append(dst, `{"model":`...)
	dst = AppendString(dst, p.Model)
	maxTokens := p.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMessagesMaxTokens
	}
	dst = append(dst, `,"max_tokens":`...)
	dst = strconv.AppendInt(dst, int64(maxTokens), 10)
	dst = appendMessages(dst, p, true)
	if p.HasTemperature {
		dst = append(dst, `,"temperature":`...)
		dst = strconv.AppendFloat(dst, p.Temperature, 'g', -1, 64)
	}
	dst = append(dst, `,"stream":`...)
	dst = strconv.AppendBool(dst, !p.NoStream)
	return append(dst, '}')
}
