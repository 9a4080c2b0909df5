// Command soul — see README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/soulstack/soulstack/internal/soulcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := soulcmd.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
