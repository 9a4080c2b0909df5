package apitypes

import "time"

// KeeperInfo is one keeper on the Keeper's database, as GET /v1/keepers
// shows it (SPEC §10.4).
type KeeperInfo struct {
	ID          string    `json:"keeper_id"`
	Address     string    `json:"address,omitempty"`
	Version     string    `json:"version,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Leader is set on the keeper that leads (schedules, run-on-vip
	// procedures, cleanup after dead keepers).
	Leader bool `json:"leader"`
	// Self is set on the keeper that answered.
	Self bool `json:"self"`
	// Souls is how many connected souls hold their stream to this keeper.
	Souls int `json:"souls"`
}
