package core

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// mountEntry is one line of /proc/self/mountinfo (proc(5)).
type mountEntry struct {
	root, point, fstype, source string
	// opts holds the per-mount and the superblock options, as the kernel
	// shows them.
	opts []string
}

// readMountinfo parses the mount table of this process.
func readMountinfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(f) {
			continue
		}
		e := mountEntry{root: fstabUnescape(f[3]), point: fstabUnescape(f[4]), fstype: f[sep+1], source: fstabUnescape(f[sep+2])}
		e.opts = strings.Split(f[5], ",")
		if sep+3 < len(f) {
			e.opts = append(e.opts, strings.Split(f[sep+3], ",")...)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// mountAt returns the top mount at mp (the last one mounted there).
func mountAt(table []mountEntry, mp string) (mountEntry, bool) {
	for i := len(table) - 1; i >= 0; i-- {
		if table[i].point == mp {
			return table[i], true
		}
	}
	return mountEntry{}, false
}

// isBind reports whether opts ask for a bind mount.
func isBind(fstype, opts string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == "bind" || o == "rbind" {
			return true
		}
	}
	return fstype == "bind"
}

// sameSource reports whether cur is a mount of src: the same device (a
// UUID=, LABEL=, PARTUUID= or PARTLABEL= src resolved through
// /dev/disk), the same source string (tmpfs, host:/export), or, for a
// bind mount, the same directory.
func sameSource(table []mountEntry, cur mountEntry, src, fstype, opts string) bool {
	if isBind(fstype, opts) {
		under, ok := mountUnder(table, src)
		if !ok {
			return false
		}
		rel := strings.TrimPrefix(path.Clean(src), under.point)
		return path.Join(under.root, rel) == cur.root && under.source == cur.source
	}
	if cur.source == src {
		return true
	}
	for prefix, dir := range map[string]string{"UUID=": "by-uuid", "LABEL=": "by-label", "PARTUUID=": "by-partuuid", "PARTLABEL=": "by-partlabel"} {
		if strings.HasPrefix(src, prefix) {
			src = filepath.Join("/dev/disk", dir, strings.TrimPrefix(src, prefix))
		}
	}
	a, err1 := filepath.EvalSymlinks(src)
	b, err2 := filepath.EvalSymlinks(cur.source)
	return err1 == nil && err2 == nil && a == b
}

// mountUnder returns the mount holding the path p (the longest mount
// point that is p or one of its parents).
func mountUnder(table []mountEntry, p string) (mountEntry, bool) {
	p = path.Clean(p)
	var best mountEntry
	found := false
	for _, e := range table {
		if (p == e.point || e.point == "/" || strings.HasPrefix(p, e.point+"/")) && (!found || len(e.point) >= len(best.point)) {
			best, found = e, true
		}
	}
	return best, found
}

// fstabOnlyOpts never show in the mount table: they tell mount(8) or the
// boot what to do, not the kernel.
var fstabOnlyOpts = map[string]bool{"defaults": true, "auto": true, "noauto": true, "nofail": true, "user": true, "nouser": true,
	"users": true, "owner": true, "group": true, "_netdev": true, "bind": true, "rbind": true, "remount": true}

// missingOpts returns the options of opts the mount cur does not show.
// Sizes (size=8m is size=8192k) and octal modes (mode=0755 is mode=755)
// are compared by value; exec, suid and dev hold unless their no- form
// shows; fstab-only options (noauto, nofail, x-…, comment=…) are skipped.
func missingOpts(cur mountEntry, opts string) []string {
	have := map[string]string{}
	for _, o := range cur.opts {
		k, v, _ := strings.Cut(o, "=")
		have[k] = v
	}
	var missing []string
	for _, o := range strings.Split(opts, ",") {
		k, v, hasV := strings.Cut(o, "=")
		switch {
		case o == "" || fstabOnlyOpts[k] || strings.HasPrefix(k, "x-") || k == "comment":
			continue
		case k == "exec" || k == "suid" || k == "dev":
			if _, no := have["no"+k]; !no {
				continue
			}
		case !hasV:
			if _, ok := have[k]; ok {
				continue
			}
		default:
			if cv, ok := have[k]; ok && sameOptValue(k, v, cv) {
				continue
			}
		}
		missing = append(missing, o)
	}
	return missing
}

func sameOptValue(k, want, got string) bool {
	if want == got {
		return true
	}
	switch k {
	case "mode", "umask", "dmask", "fmask":
		a, err1 := strconv.ParseUint(want, 8, 32)
		b, err2 := strconv.ParseUint(got, 8, 32)
		return err1 == nil && err2 == nil && a == b
	}
	a, ok1 := optBytes(want)
	b, ok2 := optBytes(got)
	return ok1 && ok2 && a == b
}

// optBytes reads a size such as 8m, 8192k or 1g.
func optBytes(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	mult := uint64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n * mult, err == nil
}

// mountEphemeral mounts src at mp without reading or writing fstab. A
// mount of the same source is left alone when it shows every wanted
// option, and remounted with opts otherwise; a mount of another source
// is an error, not replaced.
func mountEphemeral(ctx context.Context, env *module.Env, mp, src, fstype, opts string) (domain.Result, error) {
	table, err := readMountinfo()
	if err != nil {
		return domain.Result{}, err
	}
	cur, mounted := mountAt(table, mp)
	data := map[string]any{"path": mp, "mounted": mounted, "fstab": ""}
	var verb, diff string
	var argv []string
	switch {
	case !mounted:
		t := fstype
		if t == "bind" {
			t = "none"
		}
		verb, diff, argv = "mount", fmt.Sprintf("mount %s on %s (%s, %s), not in fstab\n", src, mp, fstype, opts), []string{"mount", "-t", t, "-o", opts, "--", src, mp}
	case !sameSource(table, cur, src, fstype, opts):
		return domain.Result{}, paramErr("src", "%s is already mounted from %s, not %s: state ephemeral does not unmount or cover another mount; "+
			"unmount it first (state: unmounted) or use another path", mp, cur.source, src)
	default:
		missing := missingOpts(cur, opts)
		if len(missing) == 0 {
			return converged(fmt.Sprintf("%s is mounted from %s with %s", mp, src, opts), data), nil
		}
		verb, diff, argv = "remount", fmt.Sprintf("remount %s: %s -> with %s\n", mp, strings.Join(cur.opts, ","), strings.Join(missing, ",")), []string{"mount", "-o", "remount," + opts, "--", mp}
	}
	res := domain.Result{Changed: true, Diff: diff, Data: data}
	if env.Check {
		res.Msg = "would " + verb + " " + mp + " (ephemeral, fstab untouched)"
		return res, nil
	}
	if verb == "mount" {
		if err := ensureMountPoint(env, mp); err != nil {
			return domain.Result{}, err
		}
	}
	if err := runMount(ctx, argv); err != nil {
		return domain.Result{}, fmt.Errorf("%s %s: %w", verb, mp, err)
	}
	data["mounted"] = true
	res.Msg = verb + "ed " + mp + " (ephemeral, fstab untouched)"
	return res, nil
}

// mountRemounted remounts mp, with opts when given: always changed, as
// Ansible's state remounted, since nothing tells whether it was needed.
func mountRemounted(ctx context.Context, env *module.Env, mp, opts string) (domain.Result, error) {
	table, err := readMountinfo()
	if err != nil {
		return domain.Result{}, err
	}
	if _, mounted := mountAt(table, mp); !mounted {
		return domain.Result{}, paramErr("path", "nothing is mounted at %s to remount (use state: mounted or ephemeral to mount it)", mp)
	}
	o := "remount"
	if opts != "" && opts != "defaults" {
		o += "," + opts
	}
	argv := []string{"mount", "-o", o, "--", mp}
	res := domain.Result{Changed: true, Diff: fmt.Sprintf("remount %s (-o %s)\n", mp, o), Data: map[string]any{"path": mp, "mounted": true, "fstab": ""}}
	if env.Check {
		res.Msg = "would remount " + mp
		return res, nil
	}
	if err := runMount(ctx, argv); err != nil {
		return domain.Result{}, fmt.Errorf("remount %s: %w", mp, err)
	}
	res.Msg = "remounted " + mp
	return res, nil
}

func runMount(ctx context.Context, argv []string) error {
	r, err := runCmd(ctx, nil, argv...)
	if err == nil && r.rc != 0 {
		err = cmdError(argv, r)
	}
	return err
}

// withNoauto adds noauto to fstab options (boot: false) unless there.
func withNoauto(opts string) string {
	for _, o := range strings.Split(opts, ",") {
		if o == "noauto" {
			return opts
		}
	}
	if opts == "defaults" {
		return "defaults,noauto"
	}
	return opts + ",noauto"
}
