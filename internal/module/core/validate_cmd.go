package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// validateParam is the `validate:` param of every file-writing module.
var validateParam = module.Param{Type: module.TypeString, Description: `command run by /bin/sh against the new content before it replaces the file: %s is the path of a temporary copy (e.g. "nginx -t -c %s", "visudo -cf %s"); the file is replaced only when it exits 0. Not run in check mode`}

// validateTimeout bounds a validate command when the task has no timeout.
const validateTimeout = 5 * time.Minute

// checkValidate rejects a validate command that does not name the file.
func checkValidate(cmd string) error {
	if cmd != "" && !strings.Contains(cmd, "%s") {
		return fmt.Errorf("param \"validate\": %q must contain %%s, which is replaced by the path of the new content", cmd)
	}
	return nil
}

// shellQuote quotes s for /bin/sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runValidate writes content to a temporary copy in a fresh private
// directory (0700, root's, so no other user can swap it while the command
// reads it), runs cmd with %s replaced by its path, and reports whether it
// exited 0. On failure the result carries the command's rc, stdout and
// stderr.
func runValidate(ctx context.Context, cmd, path string, content []byte) (domain.Result, bool) {
	dir, err := os.MkdirTemp("", "soulstack-validate-")
	if err != nil {
		return failed("validate: creating a temporary directory: %v", err), false
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		return failed("validate: writing the new content of %s: %v", path, err), false
	}
	line := strings.ReplaceAll(cmd, "%s", shellQuote(tmp))
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, validateTimeout)
		defer cancel()
	}
	r, err := runProc(ctx, procSpec{argv: []string{"/bin/sh", "-c", line}})
	if err != nil {
		return failed("validate %q: %v", cmd, err), false
	}
	if r.rc == 0 && !r.killed {
		return domain.Result{}, true
	}
	res := failed("validate %q refused the new content of %s (exit %d); the file was left as it was: %s", cmd, path, r.rc, lastLine(r.stderr+"\n"+r.stdout))
	res.RC, res.Stdout, res.Stderr = r.rc, r.stdout, r.stderr
	return res, false
}
