package keepercmd

import (
	"io"

	"github.com/soulstack/soulstack/internal/cmdutil"
)

func exitCode(err error, stderr io.Writer) int { return cmdutil.Code(err, stderr) }
