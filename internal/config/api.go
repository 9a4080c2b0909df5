package config

import (
	"errors"
	"time"
)

// API bounds the Operator API's load (issue 36): at most MaxInFlight
// authenticated requests run at once, and one that cannot start within
// MaxWait is answered 503 with Retry-After, so queueing adds at most
// MaxWait to the p99 of the requests the Keeper serves. MaxInFlight 0
// turns shedding off. Event streams are not counted.
type API struct {
	MaxInFlight int      `yaml:"max_in_flight"`
	MaxWait     Duration `yaml:"max_wait"`
}

// DefaultAPI runs 64 requests at once and lets one wait 1 s for a slot.
func DefaultAPI() API {
	return API{MaxInFlight: 64, MaxWait: Duration(time.Second)}
}

func (a API) validate() error {
	var errs []error
	if a.MaxInFlight < 0 {
		errs = append(errs, errors.New("api.max_in_flight must not be negative (0 turns load shedding off)"))
	}
	if a.MaxWait < 0 {
		errs = append(errs, errors.New("api.max_wait must not be negative (0 answers 503 at once when every slot is busy)"))
	}
	return errors.Join(errs...)
}
