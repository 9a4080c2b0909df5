package keeper_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/soulstack/soulstack/internal/testutil"
)

// Binaries built from ./cmd by TestMain: the tests run the real programs.
var keeperBin, soulBin, providerBin string

func TestMain(m *testing.M) {
	_, bins, cleanup, err := testutil.BuildBinaries("github.com/soulstack/soulstack/cmd/keeper", "github.com/soulstack/soulstack/cmd/soul",
		"github.com/soulstack/soulstack/internal/cloud/testprovider")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	keeperBin, soulBin, providerBin = bins["keeper"], bins["soul"], bins["testprovider"]
	code := m.Run()
	cleanup()
	os.Exit(code)
}
