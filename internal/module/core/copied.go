package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

func init() {
	register("core.file.copied", module.Schema{
		Summary: "Copy a file of the scenario's or destiny's files/ directory to the host, byte for byte",
		Params: fileParams(map[string]module.Param{
			"src":      str(true, "path of the source under the scenario's or destiny's files/ directory (shipped with the task)"),
			"sha256":   str(false, "expected SHA-256 of the source, hex: a different source fails the task before anything is written"),
			"makedirs": {Type: module.TypeBool, Default: false, Description: "create missing parent directories (0755)"},
			"validate": validateParam,
			"backup":   backupParam,
		}),
		Output: withFields(fileOutput, map[string]module.Field{
			"src": outputField(module.TypeString, "the source, relative to files/"),
		}),
	}, fileCopied)
}

// fileCopied converges path to the bytes of files/<src> like file.present.
func fileCopied(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	src, pin := a.str("src"), strings.ToLower(a.str("sha256"))
	w, err := parseFileWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	clean := path.Clean(strings.TrimPrefix(src, "./"))
	if src == "" || path.IsAbs(src) || !fs.ValidPath(clean) {
		return domain.Result{}, fmt.Errorf("param \"src\": %q must be a path relative to the files/ directory, without '..'", src)
	}
	if env.Files == nil {
		return domain.Result{}, fmt.Errorf("src %s: no bundle files are available to this task (core.file.copied runs inside a scenario or destiny)", src)
	}
	data, err := fs.ReadFile(env.Files, "files/"+clean)
	if errors.Is(err, fs.ErrNotExist) {
		return domain.Result{}, fmt.Errorf("src files/%s not found in the scenario or destiny directory", clean)
	}
	if err != nil {
		return domain.Result{}, fmt.Errorf("reading src files/%s: %w", clean, err)
	}
	if pin != "" {
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != pin {
			return domain.Result{}, fmt.Errorf("src files/%s has sha256 %s, not the pinned %s; nothing was written", clean, got, pin)
		}
	}
	w.content, w.hasContent = data, true
	res, err := ensureFile(ctx, env, w)
	if res.Data != nil {
		res.Data["src"] = clean
	}
	return res, err
}
