//go:build js

package web

import "net/http"

// The WebAssembly build (knee ui --export) has no run database: the pages
// that read or start runs answer that they need knee ui, and the others
// work as they do when knee serves them.

// noStore stands for the run database the static copy does not have.
type noStore struct{}

type runStore = *noStore

func isNotFound(error) bool { return false }

const needKneeUI = "this page reads and starts runs in knee's run database, which a static copy of the interface does not have: run `knee ui` to use it"

func (s *Server) noRuns(w http.ResponseWriter, _ *http.Request) {
	apiError(w, http.StatusServiceUnavailable, needKneeUI)
}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request)      { s.noRuns(w, r) }
func (s *Server) apiRun(w http.ResponseWriter, r *http.Request)       { s.noRuns(w, r) }
func (s *Server) apiRunReport(w http.ResponseWriter, r *http.Request) { s.noRuns(w, r) }
func (s *Server) apiRunLive(w http.ResponseWriter, r *http.Request)   { s.noRuns(w, r) }
func (s *Server) apiRunShards(w http.ResponseWriter, r *http.Request) { s.noRuns(w, r) }
func (s *Server) apiRunGPU(w http.ResponseWriter, r *http.Request)    { s.noRuns(w, r) }
func (s *Server) apiRunGuided(w http.ResponseWriter, r *http.Request) { s.noRuns(w, r) }
func (s *Server) apiCompare(w http.ResponseWriter, r *http.Request)   { s.noRuns(w, r) }
func (s *Server) apiBench(w http.ResponseWriter, r *http.Request)     { s.noRuns(w, r) }
