package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/version"
)

func init() { routeGroups = append(routeGroups, (*Server).routesVersion) }

// routesVersion serves GET /v1/version, public like /metrics (which shows
// the same in soulstack_build_info): `soulctl version` and the souls'
// installers read it before they hold a token.
func (s *Server) routesVersion(rt *Router) {
	rt.Public("GET /v1/version", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := version.Get()
		writeJSON(w, http.StatusOK, apitypes.KeeperVersion{
			Version: i.Version, Commit: i.Commit, GoVersion: i.GoVersion, Platform: i.Platform, TLSPin: s.cfg.TLSPin,
		})
	}))
}

// buildInfo is soulstack_build_info: 1, labelled with this keeper's build.
func buildInfo() prometheus.Collector {
	i := version.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "soulstack_build_info",
		Help:        "The keeper's build: always 1, labelled with its version and commit.",
		ConstLabels: prometheus.Labels{"version": i.Version, "commit": i.Commit, "goversion": i.GoVersion},
	})
	g.Set(1)
	return g
}
