// Package hello embeds the hello example service (this directory's
// service.yml, essence/ and scenario/), which `keeper dev` commits to a
// local git repository and registers. The service itself is the YAML; this
// file only carries it into the keeper binary.
package hello

import "embed"

// Files is the service repository's content.
//
//go:embed service.yml all:essence all:scenario
var Files embed.FS
