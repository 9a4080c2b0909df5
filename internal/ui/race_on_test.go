//go:build race

package ui_test

// raceSlack stretches time bounds under the race detector, which slows
// SQLite (C compiled to Go) and the templates 30-50 times over (measured
// on the 10,000-soul test). scripts/test.sh also runs that test without
// the race detector, where the bound holds as stated.
const raceSlack = 50
