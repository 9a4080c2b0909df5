package core

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

func init() {
	registerNamed("core.mount.mounted", module.Schema{
		Summary: "Ensure a filesystem's /etc/fstab entry and mount state: mounted, present (fstab only), unmounted, absent, ephemeral (mounted, fstab untouched) or remounted",
		Params: map[string]module.Param{
			"path":   str(true, "absolute mount point"),
			"src":    str(false, "what to mount: a device, UUID=…, LABEL=…, host:/export, or the fstype for tmpfs; required for mounted, present and ephemeral"),
			"fstype": str(false, "filesystem type (ext4, xfs, tmpfs, nfs, …); required for mounted, present and ephemeral; unknown types are refused"),
			"opts":   {Type: module.TypeString, Default: "defaults", Description: "mount options, comma-separated; with remounted, the options of the remount (fstab untouched)"},
			"boot":   {Type: module.TypeBool, Default: true, Description: "mount at boot; false adds noauto to the fstab entry's options (mounted, present)"},
			"dump":   {Type: module.TypeInt, Default: int64(0), Description: "fstab dump field"},
			"passno": {Type: module.TypeInt, Default: int64(0), Description: "fstab fsck pass number"},
			"state": {Type: module.TypeString, Default: "mounted", Description: "mounted (fstab entry and mounted), present (fstab entry only), unmounted (unmount, keep the entry), absent (unmount and remove the entry), " +
				"ephemeral (mount without reading or writing fstab; changed only when not mounted, or mounted from src without every option of opts, which remounts; a mount of another source is an error) " +
				"or remounted (mount -o remount[,opts] of what is mounted at path, fstab untouched; always changed)"},
		},
		Unconfinable: true,
		Output: map[string]module.Field{
			"path":    outputField(module.TypeString, "the mount point"),
			"mounted": outputField(module.TypeBool, "something is mounted at path afterwards"),
			"fstab":   outputField(module.TypeString, "the fstab entry (\"\" when absent)"),
		},
		Example: `- name: Scratch space
  module: core.mount.mounted
  params:
    path: /srv/scratch
    src: tmpfs
    fstype: tmpfs
    opts: size=512m,mode=1777
`,
	}, mountMounted)
}

const fstabPath = "/etc/fstab"

// knownFstypes are accepted even when the kernel has not loaded them yet
// (mount loads the module); anything else must be in /proc/filesystems.
var knownFstypes = map[string]bool{"ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true, "vfat": true, "exfat": true,
	"ntfs": true, "ntfs3": true, "tmpfs": true, "nfs": true, "nfs4": true, "cifs": true, "smb3": true, "iso9660": true, "udf": true,
	"squashfs": true, "overlay": true, "zfs": true, "swap": true, "none": true, "bind": true, "ramfs": true, "f2fs": true}

func checkFstype(t string) error {
	if knownFstypes[t] || (strings.HasPrefix(t, "fuse.") && len(t) > 5 && !strings.ContainsAny(t, " \t/")) {
		return nil
	}
	if data, err := os.ReadFile("/proc/filesystems"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			f := strings.Fields(l)
			if len(f) > 0 && f[len(f)-1] == t {
				return nil
			}
		}
	}
	return fmt.Errorf("unknown filesystem type %q (not a common type and not in /proc/filesystems)", t)
}

// fstabEscape escapes what the fstab fields cannot hold (getmntent(3)).
func fstabEscape(s string) string {
	r := strings.NewReplacer(`\`, `\134`, " ", `\040`, "\t", `\011`, "\n", `\012`)
	return r.Replace(s)
}

// fstabUnescape undoes the octal escapes of fstab and mountinfo fields.
func fstabUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// editFstab replaces the entries for mount point mp with entry ("" removes
// them) or appends it; comments and other entries are kept.
func editFstab(old []byte, mp, entry string) []byte {
	var out []string
	done := false
	for _, l := range splitText(old) {
		f := strings.Fields(l)
		if len(f) >= 2 && !strings.HasPrefix(f[0], "#") && path.Clean(fstabUnescape(f[1])) == mp {
			if entry != "" && !done {
				out = append(out, entry)
				done = true
			}
			continue
		}
		out = append(out, l)
	}
	if entry != "" && !done {
		out = append(out, entry)
	}
	return textLines(out).bytes()
}

// isMounted reports whether something is mounted at mp, from mountinfo.
func isMounted(mp string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && fstabUnescape(fields[4]) == mp {
			return true, nil
		}
	}
	return false, sc.Err()
}

func mountMounted(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	mp, src, fstype, opts, state := a.str("path"), a.str("src"), a.str("fstype"), a.str("opts"), a.str("state")
	boot := a.boolean("boot", true)
	dump, _ := a.integer("dump")
	passno, _ := a.integer("passno")
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if !path.IsAbs(mp) || path.Clean(mp) == "/" {
		return domain.Result{}, paramErr("path", "%q must be an absolute path below /", mp)
	}
	mp = path.Clean(mp)
	if state == "" {
		state = "mounted"
	}
	if opts == "" {
		opts = "defaults"
	}
	entry := ""
	switch state {
	case "remounted":
		if strings.ContainsAny(opts, " \t\n") {
			return domain.Result{}, paramErr("opts", "%q: options are comma-separated, without spaces", opts)
		}
		return mountRemounted(ctx, env, mp, opts)
	case "mounted", "present", "ephemeral":
		if src == "" {
			return domain.Result{}, paramErr("src", "required when state is %s", state)
		}
		if fstype == "" {
			return domain.Result{}, paramErr("fstype", "required when state is %s", state)
		}
		if err := checkFstype(fstype); err != nil {
			return domain.Result{}, paramErr("fstype", "%v", err)
		}
		if strings.ContainsAny(opts, " \t\n") {
			return domain.Result{}, paramErr("opts", "%q: options are comma-separated, without spaces", opts)
		}
		if dump < 0 || dump > 9 || passno < 0 || passno > 9 {
			return domain.Result{}, paramErr("passno", "dump and passno are 0-9")
		}
		if state == "ephemeral" {
			return mountEphemeral(ctx, env, mp, src, fstype, opts)
		}
		if !boot {
			opts = withNoauto(opts)
		}
		entry = fmt.Sprintf("%s %s %s %s %d %d", fstabEscape(src), fstabEscape(mp), fstype, opts, dump, passno)
	case "unmounted", "absent":
	default:
		return domain.Result{}, paramErr("state", "%q: want mounted, present, unmounted, absent, ephemeral or remounted", state)
	}
	mounted, err := isMounted(mp)
	if err != nil {
		return domain.Result{}, err
	}
	res := domain.Result{Data: map[string]any{"path": mp, "mounted": mounted, "fstab": entry}}
	var msgs []string
	fstabChanged := false
	if state != "unmounted" {
		w := fileWant{path: fstabPath, uid: -1, gid: -1, edit: func(old []byte, _ bool) ([]byte, error) {
			return editFstab(old, mp, entry), nil
		}}
		if entry == "" {
			w.missingOK = fstabPath + " does not exist: no entry to remove"
		}
		fr, err := ensureFile(ctx, env, w)
		if err != nil {
			return domain.Result{}, err
		}
		fstabChanged = fr.Changed
		if fr.Changed {
			res.Changed, res.Diff = true, fr.Diff
			msgs = append(msgs, strings.Replace(fr.Msg, fstabPath, fstabPath+" entry for "+mp, 1))
		}
	}
	verb := ""
	var argv []string
	switch {
	case state == "mounted" && !mounted:
		verb, argv = "mount", []string{"mount", mp}
	case state == "mounted" && fstabChanged:
		verb, argv = "remount", []string{"mount", "-o", "remount," + opts, mp}
	case (state == "unmounted" || state == "absent") && mounted:
		verb, argv = "unmount", []string{"umount", mp}
	}
	if verb == "" {
		if !res.Changed {
			res.Msg = mp + " is in the wanted state (" + state + ")"
		} else {
			res.Msg = strings.Join(msgs, "; ")
		}
		return res, nil
	}
	res.Changed = true
	res.Diff += fmt.Sprintf("%s %s\n", verb, mp)
	if env.Check {
		res.Msg = strings.Join(append(msgs, "would "+verb+" "+mp), "; ")
		return res, nil
	}
	if verb == "mount" {
		if err := ensureMountPoint(env, mp); err != nil {
			return domain.Result{}, err
		}
	}
	r, err := runCmd(ctx, nil, argv...)
	if err == nil && r.rc != 0 {
		err = cmdError(argv, r)
	}
	if err != nil {
		return domain.Result{}, fmt.Errorf("%s %s: %w", verb, mp, err)
	}
	res.Data["mounted"] = verb != "unmount"
	res.Msg = strings.Join(append(msgs, verb+"ed "+mp), "; ")
	return res, nil
}

// ensureMountPoint creates a missing mount point (0755, parents too).
func ensureMountPoint(env *module.Env, mp string) error {
	t, err := fsOf(env).Open(mp, safefs.Options{MakeDirs: true})
	if err != nil {
		return err
	}
	defer t.Close()
	fi, exists, err := t.Lstat()
	if err != nil {
		return err
	}
	if exists {
		if !fi.IsDir() {
			return fmt.Errorf("mount point %s exists and is not a directory (%s)", mp, describeKind(fi))
		}
		return nil
	}
	return t.Mkdir(safefs.Attrs{UID: -1, GID: -1})
}
