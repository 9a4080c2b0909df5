package keeper

import (
	"fmt"

	"github.com/soulstack/soulstack/internal/config"
	"github.com/soulstack/soulstack/internal/tlsutil"
)

// Purposes of the keys derived from the keeper's TLS key.
const (
	keyTaskIDs = "task ids v1"   // signs the task ids of dispatched work
	keyRelay   = "relay rows v1" // seals work and results relayed through PostgreSQL
)

// derivedKeys derives the keys the keepers of one database share from the
// TLS material they share, so none of them is stored in the database.
func derivedKeys(cfg config.Keeper, purposes ...string) (map[string][]byte, error) {
	var m *tlsutil.Material
	var err error
	if cfg.TLS.Cert != "" {
		m, err = materialFromFiles(cfg.TLS.Cert, cfg.TLS.Key)
	} else {
		m, err = tlsutil.Load(cfg.TLSDir())
	}
	if err != nil {
		return nil, fmt.Errorf("loading TLS material for the derived keys: %w", err)
	}
	out := make(map[string][]byte, len(purposes))
	for _, p := range purposes {
		if out[p], err = m.DeriveKey(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}
