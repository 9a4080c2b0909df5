// Package dslhook enables state_schema checking in package dsl: import it
// (blank) in every keeper-side program that loads service repositories —
// the catalog, soulctl scenario validate/test. Without it dsl refuses a
// service.yml that declares a state_schema instead of skipping the check.
package dslhook

import (
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/stateschema"
)

func init() { dsl.RegisterSchemaCompiler(stateschema.Compile) }
