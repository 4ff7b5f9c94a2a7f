// Package httperr writes the JSON error bodies both govkit services answer
// with: {"statusCode":N,"message":"…","error":"<reason phrase>"}, the shape
// NestJS and LoopBack clients of the original systems already parse.
package httperr

import (
	"encoding/json"
	"net/http"
)

// Body is the wire form of an error response.
type Body struct {
	StatusCode int    `json:"statusCode"`
	Message    string `json:"message"`
	Error      string `json:"error"`
}

// Write sends status with a JSON error body. The message must be safe to
// show to the caller: it never carries internal error text.
func Write(w http.ResponseWriter, status int, message string) {
	if message == "" {
		message = http.StatusText(status)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// An error must never be sniffed into something executable.
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(Body{StatusCode: status, Message: message, Error: http.StatusText(status)})
}
