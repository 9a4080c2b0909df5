package cli

import (
	"fmt"

	"github.com/soulstack/soulstack/internal/cmdutil"
)

// Largest --limit the Keeper's list endpoints take.
const (
	maxListLimit        = 10000 // audit, runs, incarnation history
	maxCheckerTaskLimit = 1000
	maxRunHostsLimit    = 1000 // hosts of one page of run show
)

// checkLimit refuses, as a usage error, a --limit the Keeper would refuse
// (it takes 1 to max). With zeroDefault, 0 is allowed and means the
// Keeper's default. Otherwise a negative or zero --limit would be dropped
// from the request and the Keeper's default listed without a word.
func checkLimit(n, max int, zeroDefault bool) error {
	if n == 0 && zeroDefault {
		return nil
	}
	if n < 1 || n > max {
		return cmdutil.Usage(fmt.Errorf("--limit must be a number from 1 to %d, not %d", max, n))
	}
	return nil
}
