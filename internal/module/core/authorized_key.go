package core

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/user"
	"path"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	key := str(true, "one or more public keys, one per line, in authorized_keys format (options, type, base64, comment)")
	key.Check = func(s string) error {
		_, err := parseAuthKeys("key", s)
		return err
	}
	registerNamed("core.ssh.authorized_key", module.Schema{
		Summary: "Ensure SSH public keys are (or are not) in a user's ~/.ssh/authorized_keys; exclusive removes every other key",
		Params: map[string]module.Param{
			"user":      str(true, "the account whose authorized_keys is managed"),
			"key":       key,
			"state":     {Type: module.TypeString, Default: "present", Description: "present or absent"},
			"exclusive": {Type: module.TypeBool, Default: false, Description: "remove every key not given (state present only)"},
			"path":      str(false, "authorized_keys file; default ~user/.ssh/authorized_keys"),
		},
		Output: withFields(fileOutput, map[string]module.Field{
			"user": outputField(module.TypeString, "the account"),
			"keys": outputField(module.TypeInt, "number of keys in the file afterwards"),
		}),
		Example: `- name: Deploy key for alice
  module: core.ssh.authorized_key
  params:
    user: alice
    key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ5UqUXbk1eJrV8zEtKoqNtG7bKxRKNbsNDSyE8mvKC alice@laptop
    exclusive: true
`,
	}, authorizedKey)
}

// authKey is one parsed authorized_keys line.
type authKey struct {
	line string
	blob string // the key's wire form: a key's identity, whatever its options and comment
}

func parseAuthKeys(param, s string) ([]authKey, error) {
	var out []authKey
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pk, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil || len(bytes.TrimSpace(rest)) > 0 {
			return nil, paramErr(param, "line %d is not an SSH public key (%q…): %v", i+1, truncate(line, 24), err)
		}
		out = append(out, authKey{line: line, blob: string(pk.Marshal())})
	}
	if len(out) == 0 {
		return nil, paramErr(param, "no SSH public key given")
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// keyOf returns the identity of an existing file's line ("" for comments,
// blank or unparsable lines, which are kept).
func keyOf(line string) string {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(t, "#") {
		return ""
	}
	pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(t))
	if err != nil {
		return ""
	}
	return string(pk.Marshal())
}

// editAuthKeys computes the new file: wanted keys replace the line of the
// same key in place (new options or comment) or are appended; absent
// drops them; exclusive drops every other key line.
func editAuthKeys(old []byte, want []authKey, absent, exclusive bool) ([]byte, int) {
	wanted := map[string]string{}
	for _, k := range want {
		wanted[k.blob] = k.line
	}
	seen := map[string]bool{}
	var lines []string
	n := 0
	for _, l := range splitText(old) {
		id := keyOf(l)
		switch {
		case id == "":
			lines = append(lines, l)
		case wanted[id] != "":
			if absent || seen[id] {
				continue
			}
			seen[id] = true
			lines = append(lines, wanted[id])
			n++
		case exclusive:
		default:
			lines = append(lines, l)
			n++
		}
	}
	if !absent {
		for _, k := range want {
			if !seen[k.blob] {
				seen[k.blob] = true
				lines = append(lines, k.line)
				n++
			}
		}
	}
	return textLines(lines).bytes(), n
}

func authorizedKey(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	name, keyText, state, exclusive, file := a.str("user"), a.str("key"), a.str("state"), a.boolean("exclusive", false), a.str("path")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if state != "present" && state != "absent" && state != "" {
		return domain.Result{}, paramErr("state", "%q: want present or absent", state)
	}
	absent := state == "absent"
	want, err := parseAuthKeys("key", keyText)
	if err != nil {
		return domain.Result{}, err
	}
	u, err := user.Lookup(name)
	if err != nil {
		return domain.Result{}, paramErr("user", "%v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if file == "" {
		if !path.IsAbs(u.HomeDir) {
			return domain.Result{}, paramErr("user", "%s has no absolute home directory (%q)", name, u.HomeDir)
		}
		file = path.Join(u.HomeDir, ".ssh", "authorized_keys")
		if !absent && !env.Check {
			if err := ensureSSHDir(env, path.Dir(file), uid, gid); err != nil {
				return domain.Result{}, err
			}
		}
	} else if !path.IsAbs(file) {
		return domain.Result{}, paramErr("path", "%q must be absolute", file)
	}
	count := 0
	w := fileWant{path: file, mode: 0o600, hasMode: true, uid: uid, gid: gid}
	if absent {
		w.missingOK = file + " does not exist: no key to remove"
		w.hasMode, w.uid, w.gid = false, -1, -1
	}
	w.edit = func(old []byte, _ bool) ([]byte, error) {
		out, n := editAuthKeys(old, want, absent, exclusive)
		count = n
		return out, nil
	}
	if env.Check && !absent {
		// The .ssh directory may not exist yet: check mode says so.
		w.makedirs = true
	}
	res, err := ensureFile(ctx, env, w)
	if err != nil {
		return domain.Result{}, err
	}
	if res.Data == nil {
		res.Data = map[string]any{}
	}
	res.Data["path"], res.Data["user"], res.Data["keys"] = file, name, int64(count)
	return res, nil
}

// ensureSSHDir creates ~/.ssh (0700, owned by the user) when missing; the
// home directory is the user's, and safefs refuses links the user planted.
func ensureSSHDir(env *module.Env, dir string, uid, gid int) error {
	t, err := fsOf(env).Open(dir, safefs.Options{})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("home directory %s does not exist", path.Dir(dir))
	}
	if err != nil {
		return err
	}
	defer t.Close()
	fi, exists, err := t.Lstat()
	if err != nil {
		return err
	}
	if exists {
		if fi.Mode.Type() == fs.ModeSymlink {
			// The user's own home: a link there is never followed (H1).
			return fmt.Errorf("%s: path is a symlink; root does not write through a link in the user's home: remove it", dir)
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory (%s)", dir, describeKind(fi))
		}
		return nil
	}
	m := fs.FileMode(0o700)
	return t.Mkdir(safefs.Attrs{UID: uid, GID: gid, Mode: &m})
}
