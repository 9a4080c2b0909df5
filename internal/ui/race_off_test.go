//go:build !race

package ui_test

// raceSlack stretches time bounds under the race detector.
const raceSlack = 1
