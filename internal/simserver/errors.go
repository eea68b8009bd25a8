package simserver

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// apiError is an OpenAI-style error: {"error":{"message","type","param","code"}}.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func badRequest(param, code, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: msg, Type: "invalid_request_error", Param: strp(param), Code: strp(code)}
}

func writeError(w http.ResponseWriter, e *apiError) {
	b, _ := json.Marshal(struct {
		Error *apiError `json:"error"`
	}{e})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(e.Status)
	w.Write(append(b, '\n'))
}
