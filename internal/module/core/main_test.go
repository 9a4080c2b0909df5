package core

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	if p := os.Getenv(crashEnv); p != "" {
		crashChild(p)
	}
	os.Exit(m.Run())
}
