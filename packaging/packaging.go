// Package packaging holds the systemd units, default configurations and
// maintainer scripts of the Soul Stack packages, embedded so that the
// package builder (internal/install) and the Keeper's install.sh use the
// very files a reviewer reads here.
package packaging

import "embed"

// Files are the units (*.service), the SysV script soul.init, default configs (keeper.yaml,
// soul.env) and maintainer scripts (scripts/*.sh). The units name
// /usr/local/bin (a hand install); packages rewrite it to /usr/bin.
//
//go:embed keeper.service soul.service soul.init keeper.yaml soul.env scripts/*.sh
var Files embed.FS
