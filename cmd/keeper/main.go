// Command keeper — see README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/soulstack/soulstack/internal/keepercmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := keepercmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
