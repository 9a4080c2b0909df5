package apitypes

import "time"

// KeeperDrain is the answer of POST /v1/keepers/{id}/drain: the keeper
// will refuse new souls and ask the ones it holds to move to other
// keepers (SPEC §17, keeper fleet).
type KeeperDrain struct {
	KeeperID    string    `json:"keeper_id"`
	Drain       bool      `json:"drain"`
	RequestedAt time.Time `json:"requested_at"`
}
