//go:build !race

package gateway_test

// raceEnabled reports a build with the race detector, whose
// instrumentation makes stack frames larger.
const raceEnabled = false
