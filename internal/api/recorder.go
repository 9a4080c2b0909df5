package api

import (
	"net/http"
)

// statusRecorder remembers the status a handler wrote. It forwards Flush
// (for Server-Sent Events) and exposes the original writer through Unwrap,
// so http.ResponseController keeps working behind it.
type statusRecorder struct {
	http.ResponseWriter
	status  int
	written bool
}

func asRecorder(w http.ResponseWriter) *statusRecorder {
	if sr, ok := w.(*statusRecorder); ok {
		return sr
	}
	return &statusRecorder{ResponseWriter: w, status: http.StatusOK}
}

func (sr *statusRecorder) WriteHeader(code int) {
	if !sr.written {
		sr.status = code
		sr.written = true
	}
	sr.ResponseWriter.WriteHeader(code)
}

func (sr *statusRecorder) Write(b []byte) (int, error) {
	sr.written = true
	return sr.ResponseWriter.Write(b)
}

// Flush sends buffered data to the client.
func (sr *statusRecorder) Flush() {
	sr.written = true
	if f, ok := sr.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying ResponseWriter.
func (sr *statusRecorder) Unwrap() http.ResponseWriter { return sr.ResponseWriter }
