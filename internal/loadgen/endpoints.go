package loadgen

import (
	"context"
	"fmt"
	"io"

	"github.com/knee-dev/knee/internal/openai"
	"github.com/knee-dev/knee/internal/record"
)

// validateEndpoints checks the fields of the non-chat APIs. Each applies
// to the requests of its APIs only (Items to embeddings and rerank,
// RerankPath to rerank, Images to chat and messages), whatever Config.API
// is: a request may name its own API.
func (c *Config) validateEndpoints() error {
	switch {
	case c.Items < 0:
		return configErr("items %d: want inputs (or documents) per request >= 1", c.Items)
	case c.Images < 0:
		return configErr("images %d: want >= 0", c.Images)
	}
	if c.RerankPath != "" {
		if err := openai.CheckRerankPath(c.RerankPath); err != nil {
			return configErr("%v", err)
		}
	}
	if c.Images > 0 {
		// One draw now: a size or format the encoder refuses fails the
		// configuration, not every request.
		if _, err := openai.SyntheticImage(0, c.ImageWidth, c.ImageHeight, c.ImageFormat); err != nil {
			return configErr("%v", err)
		}
	}
	return nil
}

// images draws request i's images: each from the seed, the request and its
// place, so no two requests share one (a server's image cache never hits)
// and a seed gives the same images again.
func (r *Run) images(i int64) []openai.Image {
	if r.cfg.Images == 0 {
		return nil
	}
	imgs := make([]openai.Image, r.cfg.Images)
	for k := range imgs {
		seed := r.cfg.ImageSeed ^ (uint64(i)*0x9e3779b97f4a7c15 + uint64(k)*0xbf58476d1ce4e5b9 + 1)
		img, err := openai.SyntheticImage(seed, r.cfg.ImageWidth, r.cfg.ImageHeight, r.cfg.ImageFormat)
		if err != nil {
			panic(err) // cannot happen: validateEndpoints drew one of this size and format
		}
		imgs[k] = img
	}
	return imgs
}

// maxItemsBody bounds an embeddings or rerank answer: 64 MiB holds 1,024
// vectors of 4,096 floats as JSON text.
const maxItemsBody = 64 << 20

// readItems reads a whole embeddings or rerank answer into rec: its end
// is the E2E end, Items what it carried.
func (r *Run) readItems(ctx context.Context, st *stream, body io.Reader, rec *record.Request, want int) {
	st.stamp.body = body
	defer func() { st.stamp.body = nil }()
	// The end is the read that brought the last bytes, not the one that
	// then saw the end of the body.
	var data []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := st.stamp.Read(buf)
		if n > 0 {
			data = append(data, buf[:n]...)
			rec.StreamEnd = st.stamp.at
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			rec.StreamEnd = st.stamp.at
			r.readError(ctx, rec, err)
			return
		}
		if len(data) > maxItemsBody {
			rec.Error = record.ErrBadPayload
			rec.ErrorMessage = fmt.Sprintf("the answer passed %d bytes; the request ends here", maxItemsBody)
			return
		}
	}
	if len(data) == 0 {
		rec.StreamEnd = st.stamp.at
	}
	decode, noun := openai.DecodeEmbeddings, "embeddings"
	if st.api == openai.APIRerank {
		decode, noun = openai.DecodeRerank, "scored documents"
	}
	a, err := decode(data, want)
	switch {
	case err != nil:
		rec.Error = record.ErrBadPayload
		rec.ErrorMessage = fmt.Sprintf("%v; body: %s", err, oneLine(data))
		return
	case a.Err != nil:
		rec.Error = streamErrorKind(a.Err.Code)
		if rec.Error == record.ErrStreamBroken {
			rec.Error = record.ErrBadPayload // a 200 answer that is an error object without a status
		}
		rec.ErrorMessage = "error answer: " + truncate(a.Err.Error())
		return
	case a.Items != want:
		rec.Error = record.ErrBadPayload
		rec.ErrorMessage = fmt.Sprintf("asked for %d %s, the answer has %d", want, noun, a.Items)
		return
	}
	rec.Done = rec.StreamEnd
	rec.Items = a.Items
	if a.HasUsage {
		rec.InputTokens, rec.TokenSource = a.PromptTokens, record.TokensFromUsage
	} else {
		// TEI's rerank reports no usage: the texts as built.
		rec.InputTokens, rec.TokenSource = st.promptTokens, record.TokensFromTokenizer
	}
}
