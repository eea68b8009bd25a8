package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/knee-dev/knee/internal/badinput"
)

// Dataset is a list of prompts read from a file.
type Dataset struct {
	Path    string
	Format  string // "jsonl" or "sharegpt"
	Entries []DatasetEntry
	// Skipped counts ShareGPT conversations with no user turn followed by
	// an assistant turn (they cannot form a request).
	Skipped int
}

// DatasetEntry is one prompt. The output length is OutputTokens when the
// file gives one, else the token count of Completion when HasCompletion
// (ShareGPT), else drawn from Spec.Output.
type DatasetEntry struct {
	Prompt        string
	OutputTokens  int
	Completion    string
	HasCompletion bool
	Line          int // 1-based line in the file where the entry starts
	// Turns are a ShareGPT conversation's later exchanges (a user turn
	// and the assistant's answer), for --sessions to replay turn by turn.
	Turns []DatasetTurn
}

// DatasetTurn is one later exchange of a conversation.
type DatasetTurn struct{ Prompt, Completion string }

const (
	FormatJSONL    = "jsonl"
	FormatShareGPT = "sharegpt"
)

// maxDatasetBytes bounds a dataset read whole: the usual ShareGPT file is
// about 650 MB; the same bound as other tools' result files (ingest).
const maxDatasetBytes = 2 << 30

// LoadDataset reads a prompt file, telling the format from its first
// non-blank byte:
//
//   - JSONL ('{'): one object per line, {"prompt": "...", "output_tokens": N};
//     "text" is accepted for "prompt" and "max_tokens" for "output_tokens";
//     the output length is optional. A line may instead hold a ShareGPT
//     conversation object.
//   - ShareGPT ('['): a JSON array of {"conversations": [{"from": "human",
//     "value": ...}, {"from": "gpt", "value": ...}, ...]}; the request is
//     the first human turn and its output length is the token count of the
//     gpt turn after it. "user"/"assistant" and {"role","content"} turns are
//     accepted too.
//
// Errors name the file and line.
func LoadDataset(path string) (*Dataset, error) {
	data, err := badinput.ReadFile(path, maxDatasetBytes, "JSONL prompts or a ShareGPT JSON array")
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	ds := &Dataset{Path: path}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return nil, fmt.Errorf("dataset %s: file is empty; expected JSONL prompts or a ShareGPT JSON array", path)
	case trimmed[0] == '[':
		ds.Format = FormatShareGPT
		ds.Entries, ds.Skipped, err = readShareGPT(data) // no second copy of a large file
	case trimmed[0] == '{':
		ds.Format = FormatJSONL
		ds.Entries, ds.Skipped, err = ReadPromptsJSONL(bytes.NewReader(data))
	default:
		return nil, fmt.Errorf("dataset %s: starts with %q; expected JSONL (one {\"prompt\": ...} object per line) or a ShareGPT JSON array ([{\"conversations\": ...}])", path, string(trimmed[:1]))
	}
	var de *DatasetError
	if errors.As(err, &de) {
		return nil, fmt.Errorf("dataset %s:%d: %s", path, de.Line, de.Msg)
	}
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	if len(ds.Entries) == 0 {
		return nil, fmt.Errorf("dataset %s: no usable prompts (%d conversations skipped: no user turn followed by an assistant turn)", path, ds.Skipped)
	}
	return ds, nil
}

// DatasetError is a problem at one line of a dataset file.
type DatasetError struct {
	Line int
	Msg  string
}

func (e *DatasetError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

type jsonlLine struct {
	Prompt        *string        `json:"prompt"`
	Text          *string        `json:"text"`
	OutputTokens  *json.Number   `json:"output_tokens"`
	MaxTokens     *json.Number   `json:"max_tokens"`
	Conversations []shareGPTTurn `json:"conversations"`
	Messages      []shareGPTTurn `json:"messages"`
}

// ReadPromptsJSONL reads JSONL prompts (see LoadDataset). Blank lines are
// skipped; conversation lines with no usable turn pair are counted in
// skipped. Problems in the file are *DatasetError.
func ReadPromptsJSONL(r io.Reader) (entries []DatasetEntry, skipped int, err error) {
	br := bufio.NewReader(r)
	for lineNo := 1; ; lineNo++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, 0, rerr
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			e, ok, perr := parseJSONLLine(t)
			if perr != nil {
				return nil, 0, &DatasetError{Line: lineNo, Msg: perr.Error()}
			}
			if ok {
				e.Line = lineNo
				entries = append(entries, e)
			} else {
				skipped++
			}
		}
		if rerr != nil {
			return entries, skipped, nil
		}
	}
}

func parseJSONLLine(line []byte) (DatasetEntry, bool, error) {
	var l jsonlLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&l); err != nil {
		return DatasetEntry{}, false, fmt.Errorf("invalid JSON (%v); expected an object like {\"prompt\": \"...\", \"output_tokens\": 128}", jsonMessage(err))
	}
	if dec.More() {
		return DatasetEntry{}, false, errors.New("more than one JSON value on the line; expected one object per line")
	}
	var e DatasetEntry
	switch {
	case l.Prompt != nil:
		e.Prompt = *l.Prompt
	case l.Text != nil:
		e.Prompt = *l.Text
	case l.Conversations != nil || l.Messages != nil:
		turns := l.Conversations
		if turns == nil {
			turns = l.Messages
		}
		return conversationEntry(turns)
	default:
		return e, false, errors.New(`no "prompt" (or "text") field; expected {"prompt": "...", "output_tokens": 128}`)
	}
	if e.Prompt == "" {
		return e, false, errors.New("prompt is empty")
	}
	num, field := l.OutputTokens, "output_tokens"
	if num == nil {
		num, field = l.MaxTokens, "max_tokens"
	}
	if num != nil {
		f, err := num.Float64()
		if err != nil || f < 1 || f > MaxLengthTokens || f != math.Trunc(f) {
			return e, false, fmt.Errorf("%s must be a whole number between 1 and %d, got %s", field, MaxLengthTokens, num.String())
		}
		e.OutputTokens = int(f)
	}
	return e, true, nil
}

// shareGPTTurn accepts both {"from","value"} and {"role","content"}.
type shareGPTTurn struct {
	From    string `json:"from"`
	Value   string `json:"value"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (t shareGPTTurn) speaker() string {
	if t.From != "" {
		return strings.ToLower(t.From)
	}
	return strings.ToLower(t.Role)
}

func (t shareGPTTurn) text() string {
	if t.Value != "" {
		return t.Value
	}
	return t.Content
}

func conversationEntry(turns []shareGPTTurn) (DatasetEntry, bool, error) {
	for k := 0; k+1 < len(turns); k++ {
		switch turns[k].speaker() {
		case "human", "user":
		default:
			continue
		}
		switch turns[k+1].speaker() {
		case "gpt", "assistant", "chatgpt", "bard", "model":
		default:
			continue
		}
		if turns[k].text() == "" {
			continue
		}
		e := DatasetEntry{Prompt: turns[k].text(), Completion: turns[k+1].text(), HasCompletion: true}
		for j := k + 2; j+1 < len(turns); j++ {
			if isUser(turns[j].speaker()) && isAssistant(turns[j+1].speaker()) && turns[j].text() != "" {
				e.Turns = append(e.Turns, DatasetTurn{Prompt: turns[j].text(), Completion: turns[j+1].text()})
				j++
			}
		}
		return e, true, nil
	}
	return DatasetEntry{}, false, nil
}

// ReadShareGPT reads a ShareGPT JSON array (see LoadDataset). Problems in
// the file are *DatasetError.
func ReadShareGPT(r io.Reader) (entries []DatasetEntry, skipped int, err error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, 0, err
	}
	return readShareGPT(data)
}

func readShareGPT(data []byte) (entries []DatasetEntry, skipped int, err error) {
	lines := lineCounter{data: data}
	dec := json.NewDecoder(bytes.NewReader(data))
	fail := func(off int64, format string, args ...any) error {
		return &DatasetError{Line: lines.at(off), Msg: fmt.Sprintf(format, args...)}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, 0, fail(errOffset(err, dec), "invalid JSON: %v", jsonMessage(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, 0, fail(dec.InputOffset(), "expected a JSON array of conversations")
	}
	for k := 0; dec.More(); k++ {
		// The element starts after the separator that follows the offset.
		start := skipSeparators(data, dec.InputOffset())
		var item struct {
			Conversations []shareGPTTurn `json:"conversations"`
			Messages      []shareGPTTurn `json:"messages"`
		}
		if err := dec.Decode(&item); err != nil {
			return nil, 0, fail(errOffset(err, dec), "conversation %d: %v; expected {\"conversations\": [{\"from\": \"human\", \"value\": \"...\"}, {\"from\": \"gpt\", \"value\": \"...\"}]}", k, jsonMessage(err))
		}
		turns := item.Conversations
		if turns == nil {
			turns = item.Messages
		}
		e, ok, _ := conversationEntry(turns)
		if !ok {
			skipped++
			continue
		}
		e.Line = lines.at(start)
		entries = append(entries, e)
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, fail(errOffset(err, dec), "invalid JSON at the end of the array: %v", jsonMessage(err))
	}
	if dec.More() {
		return nil, 0, fail(dec.InputOffset(), "unexpected data after the array")
	}
	return entries, skipped, nil
}

func skipSeparators(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
		default:
			return off
		}
	}
	return off
}

// errOffset is where a JSON error happened, if the error says.
func errOffset(err error, dec *json.Decoder) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	}
	return dec.InputOffset()
}

// jsonMessage drops encoding/json's "json: " prefix.
func jsonMessage(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "unexpected end of file"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// lineCounter maps increasing byte offsets to 1-based line numbers in one
// pass over the data (offsets may also go backwards; then it recounts).
type lineCounter struct {
	data []byte
	off  int64
	line int
}

func (c *lineCounter) at(off int64) int {
	off = min(max(off, 0), int64(len(c.data)))
	if off < c.off {
		c.off, c.line = 0, 0
	}
	c.line += bytes.Count(c.data[c.off:off], []byte{'\n'})
	c.off = off
	return c.line + 1
}

func isUser(speaker string) bool { return speaker == "human" || speaker == "user" }

func isAssistant(speaker string) bool {
	switch speaker {
	case "gpt", "assistant", "chatgpt", "bard", "model":
		return true
	}
	return false
}
