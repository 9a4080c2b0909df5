package keeper

import (
	"context"
	"path/filepath"

	"github.com/soulstack/soulstack/internal/cloud"
	"github.com/soulstack/soulstack/internal/engine"
	"github.com/soulstack/soulstack/internal/install"
)

// newCloud builds the cloud manager (SPEC §10.6): new instances reach
// this keeper at its advertised address over TLS, pinned to its
// certificate.
func (k *Keeper) newCloud() *cloud.Manager {
	return &cloud.Manager{
		Store:       k.store,
		Fingerprint: k.fp,
		TLSPin:      install.PublicKeyPin(k.tls),
		KeeperURL: func() string {
			if k.addr == nil {
				return "https://" + k.cfg.Listen
			}
			return "https://" + k.advertise()
		},
		Local:  (&cloud.LocalHosts{Dir: filepath.Join(k.cfg.DataDir, "cloud-local")}).Driver,
		Env:    k.secrets,
		Logger: k.log.With("component", "cloud"),
	}
}

// cloudFunc adapts the manager to the engine.
func cloudFunc(m *cloud.Manager) engine.Cloud {
	return func(ctx context.Context, c engine.CloudCall) engine.CloudOutcome {
		o := m.Run(ctx, cloud.Call{Module: c.Module, Params: c.Params, Incarnation: c.Incarnation, Covens: c.Covens, Check: c.Check})
		return engine.CloudOutcome{Result: o.Result, Join: o.Join, Leave: o.Leave}
	}
}
