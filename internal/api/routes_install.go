package api

import "net/http"

func init() { routeGroups = append(routeGroups, (*Server).routesInstall) }

// routesInstall serves what a new host needs to become a soul: the
// installer script and the soul binary of this Keeper's version. Both are
// public: the host has no credentials yet, and neither reveals fleet data
// (the join token that admits the soul is the caller's).
func (s *Server) routesInstall(rt *Router) {
	in := s.cfg.Install
	if in == nil {
		return
	}
	rt.Public("GET /install.sh", http.HandlerFunc(in.ServeScript))
	rt.Public("GET /v1/soul/binary", http.HandlerFunc(in.ServeBinary))
}
