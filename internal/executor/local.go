package executor

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// WorkRunner runs one piece of work on this host (soul.ModuleRunner).
type WorkRunner interface {
	Run(ctx context.Context, w dispatch.Work) domain.Result
}

// CallerFor adapts a WorkRunner to a Caller: each module call becomes one
// Work with the call's check mode and timeout.
func CallerFor(r WorkRunner) Caller {
	return func(ctx context.Context, call dispatch.Call, check bool, timeout time.Duration) domain.Result {
		return r.Run(ctx, dispatch.Work{Check: check, Timeout: timeout, Call: &call})
	}
}

// BundleRunner returns the soul's destiny executor: the function a
// soul.ModuleRunner calls for a dispatch.Bundle. Module calls of the
// destiny's tasks go through r (the same runner, so confinement and the
// module registry are the same as for single calls).
func BundleRunner(r WorkRunner) func(ctx context.Context, b *dispatch.Bundle, env *module.Env) domain.Result {
	return func(ctx context.Context, b *dispatch.Bundle, env *module.Env) domain.Result {
		return RunBundle(ctx, b, env.Facts, Options{Check: env.Check, Call: CallerFor(r)})
	}
}

// ReadDir reads every regular file under dir into a map keyed by slash
// path relative to dir: the shape of a destiny bundle's Files.
func ReadDir(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	return files, err
}
