package core

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// Bounds of core.archive.extracted.
const (
	defaultArchiveMax = 512 << 20 // bytes of the archive file itself
	archiveEntryMax   = 1 << 30   // bytes of one extracted file
	archiveMaxEntries = 100000
)

func init() {
	register("core.archive.extracted", module.Schema{
		Summary: "Extract a tar (plain, gz, bz2, xz, zst) or zip archive into a directory, by library, never by shelling out",
		Params: map[string]module.Param{
			"path":       str(true, "absolute path of the destination directory (it must exist)"),
			"src":        str(true, "the archive: a path under the scenario's or destiny's files/ directory, or an absolute path on the host"),
			"creates":    str(false, "absolute path; when it exists the archive is not looked at (changed: false)"),
			"owner":      typed(module.TypeAny, "owner of every extracted entry (default: root, whatever the archive says)"),
			"group":      typed(module.TypeAny, "group of every extracted entry"),
			"max_size":   {Type: module.TypeInt, Default: int64(defaultArchiveMax), Description: "largest archive accepted, in bytes"},
			"list_files": {Type: module.TypeBool, Default: false, Description: "return the names of the archive's entries (those include/exclude select) in the result as files"},
			"include": typed(module.TypeStrList, "extract only these entries: paths or shell-style globs (* and ? match / too, as Python's fnmatch), "+
				"matched against each entry's name and its parent directories (a directory brings its content); each must match something; not with exclude"),
			"exclude":    typed(module.TypeStrList, "do not extract these entries: paths or globs, matched as include; not with include"),
			"keep_newer": {Type: module.TypeBool, Default: false, Description: "leave an existing file alone when it is newer (mtime) than its entry in the archive"},
			"mode": str(false, `mode of every extracted file and directory, octal ("0640") or symbolic as chmod ("u+rwX,g-w,o="), `+
				"applied to each entry's mode from the archive; default: the archive's modes (directories at least u+rwx)"),
		},
		Output: map[string]module.Field{
			"path":    fileOutput["path"],
			"src":     outputField(module.TypeString, "the archive"),
			"format":  outputField(module.TypeString, "tar, tar.gz, tar.bz2, tar.xz, tar.zst or zip"),
			"entries": outputField(module.TypeInt, "entries in the archive"),
			"written": outputField(module.TypeStrList, "entries created or replaced (or to be, in check mode)"),
			"files":   outputField(module.TypeStrList, "with list_files: the names of the entries include/exclude select, in archive order"),
		},
	}, archiveExtracted)
}

// archiveEntry is one entry of either format.
type archiveEntry struct {
	name   string
	kind   byte // 'd' directory, 'f' regular file, 'l' symlink
	mode   fs.FileMode
	target string // symlink target
	mtime  time.Time
	open   func() (io.Reader, error)
}

// archiveExtracted converges the destination to hold every entry of the
// archive: a file whose content and mode already match, a directory that
// exists and a symlink with the same target are left alone, so a second
// run changes nothing. Entries are written through internal/safefs
// confined to the destination: an entry named with `..` or an absolute
// path, a symlink pointing out of the destination, a hard link, a device
// are refused before anything is written.
func archiveExtracted(_ context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	dest, src, creates := a.str("path"), a.str("src"), a.str("creates")
	owner, group := a.scalar("owner"), a.scalar("group")
	maxSize, hasMax := a.integer("max_size")
	listFiles := a.boolean("list_files", false)
	sel, err := newArchiveSelect(a)
	if err != nil {
		return domain.Result{}, err
	}
	if a.err != nil {
		return domain.Result{}, a.err
	}
	if !hasMax {
		maxSize = defaultArchiveMax
	}
	uid, err := lookupUID(owner)
	if err != nil {
		return domain.Result{}, err
	}
	gid, err := lookupGID(group)
	if err != nil {
		return domain.Result{}, err
	}
	data := map[string]any{"path": dest, "src": src, "format": "", "entries": int64(0), "written": []string{}}
	if listFiles {
		data["files"] = []string{}
	}
	if creates != "" {
		if t, err := fsOf(env).Open(creates, safefs.Options{}); err == nil {
			_, ok, _ := t.Lstat()
			t.Close()
			if ok {
				return converged(creates+" exists; the archive was not extracted", data), nil
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return domain.Result{}, fmt.Errorf("param \"creates\": %w", err)
		}
	}
	raw, err := readArchiveSrc(env, src, maxSize)
	if err != nil {
		return domain.Result{}, err
	}
	format, entries, err := listArchive(raw)
	if err != nil {
		return domain.Result{}, fmt.Errorf("archive %s: %w", src, err)
	}
	data["format"], data["entries"] = format, int64(len(entries))
	if entries, err = sel.pick(entries); err != nil {
		return domain.Result{}, fmt.Errorf("archive %s: %w", src, err)
	}
	if listFiles {
		files := make([]string, 0, len(entries))
		for _, e := range entries {
			files = append(files, e.name)
		}
		data["files"] = files
	}
	// Refuse every bad entry before writing anything.
	for _, e := range entries {
		if err := checkEntry(e); err != nil {
			return domain.Result{}, fmt.Errorf("archive %s: %w; nothing was extracted", src, err)
		}
	}
	into, err := fsOf(env).Confine(dest)
	if err != nil {
		return domain.Result{}, fmt.Errorf("destination %s: %w", dest, err)
	}
	var written []string
	for _, e := range entries {
		changed, err := extractEntry(into, e, uid, gid, sel, env.Check)
		if err != nil {
			return domain.Result{Data: data}, fmt.Errorf("extracting %s from %s into %s: %w", e.name, src, dest, err)
		}
		if changed {
			written = append(written, e.name)
		}
	}
	data["written"] = written
	if len(written) == 0 {
		return converged(fmt.Sprintf("%s already holds the %d entries of %s", dest, len(entries), src), data), nil
	}
	diff := "+ " + strings.Join(written, "\n+ ") + "\n"
	if env.Check {
		return domain.Result{Changed: true, Diff: diff, Msg: fmt.Sprintf("would extract %d of %d entries of %s into %s", len(written), len(entries), src, dest), Data: data}, nil
	}
	return domain.Result{Changed: true, Diff: diff, Msg: fmt.Sprintf("extracted %d of %d entries of %s into %s", len(written), len(entries), src, dest), Data: data}, nil
}

// readArchiveSrc reads the archive from the bundle's files/ (relative src)
// or from the host (absolute src), at most max bytes.
func readArchiveSrc(env *module.Env, src string, max int64) ([]byte, error) {
	if path.IsAbs(src) {
		t, err := fsOf(env).Open(src, safefs.Options{Follow: true})
		if err != nil {
			return nil, fmt.Errorf("src %s: %w", src, err)
		}
		defer t.Close()
		if _, ok, err := t.Lstat(); err != nil || !ok {
			return nil, fmt.Errorf("src %s does not exist on the host", src)
		}
		b, err := t.ReadFile(max)
		if err != nil {
			return nil, fmt.Errorf("src %s: %w", src, err)
		}
		return b, nil
	}
	clean := path.Clean(strings.TrimPrefix(src, "./"))
	if src == "" || !fs.ValidPath(clean) {
		return nil, fmt.Errorf("param \"src\": %q must be a path under files/ without '..', or an absolute path on the host", src)
	}
	if env.Files == nil {
		return nil, fmt.Errorf("src %s: no bundle files are available to this task (a relative src comes from the scenario's or destiny's files/)", src)
	}
	b, err := fs.ReadFile(env.Files, "files/"+clean)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("src files/%s not found in the scenario or destiny directory", clean)
	}
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("larger than max_size %d bytes", max)
	}
	if err != nil {
		return nil, fmt.Errorf("src files/%s: %w", clean, err)
	}
	return b, nil
}

// checkEntry refuses names and link targets that leave the destination,
// and entry kinds the module does not create.
func checkEntry(e archiveEntry) error {
	if e.kind == 0 {
		return fmt.Errorf("entry %q is not a file, directory or symlink (hard links and devices are refused)", e.name)
	}
	if path.IsAbs(e.name) || strings.HasPrefix(e.name, "\\") {
		return fmt.Errorf("entry %q has an absolute name", e.name)
	}
	for _, part := range strings.Split(strings.ReplaceAll(e.name, "\\", "/"), "/") {
		if part == ".." {
			return fmt.Errorf("entry %q climbs out of the destination with '..'", e.name)
		}
	}
	if e.kind == 'l' && (path.IsAbs(e.target) || escapes(e.name, e.target)) {
		return fmt.Errorf("symlink entry %q points at %s, out of the destination", e.name, e.target)
	}
	return nil
}

// escapes reports whether a relative link target, read from the entry
// name's directory, climbs above the destination.
func escapes(name, target string) bool {
	depth := len(strings.Split(path.Dir(path.Clean(name)), "/"))
	if path.Dir(path.Clean(name)) == "." {
		depth = 0
	}
	for _, part := range strings.Split(target, "/") {
		switch part {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// extractEntry converges one entry; it reports whether it wrote (or
// would write) something.
func extractEntry(into safefs.FS, e archiveEntry, uid, gid int, sel archiveSelect, check bool) (bool, error) {
	name := "/" + strings.TrimSuffix(path.Clean(e.name), "/")
	if name == "/" || name == "/." {
		return false, nil
	}
	t, err := into.Open(name, safefs.Options{MakeDirs: !check})
	if errors.Is(err, fs.ErrNotExist) && check {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer t.Close()
	fi, exists, err := t.Lstat()
	if err != nil {
		return false, err
	}
	attrs := safefs.Attrs{UID: uid, GID: gid}
	switch e.kind {
	case 'd':
		m := e.mode.Perm() | 0o700
		if sel.mode != nil {
			m = sel.mode.apply(e.mode, true)
		}
		attrs.Mode = &m
		if exists && fi.IsDir() {
			if sel.mode == nil || fi.Mode&permBits == m {
				return false, nil
			}
			if check {
				return true, nil
			}
			return true, t.SetAttrs(safefs.Attrs{UID: -1, GID: -1, Mode: &m})
		}
		if exists {
			return false, fmt.Errorf("%s exists and is not a directory", name)
		}
		if check {
			return true, nil
		}
		return true, t.Mkdir(attrs)
	case 'l':
		if exists && fi.IsSymlink() {
			if cur, err := t.Readlink(); err == nil && cur == e.target {
				return false, nil
			}
		}
		if exists && fi.IsDir() {
			return false, fmt.Errorf("%s is a directory, the archive has a symlink there", name)
		}
		if check {
			return true, nil
		}
		return true, t.Symlink(e.target)
	}
	r, err := e.open()
	if err != nil {
		return false, err
	}
	content, err := io.ReadAll(io.LimitReader(r, archiveEntryMax+1))
	if err != nil {
		return false, err
	}
	if len(content) > archiveEntryMax {
		return false, fmt.Errorf("larger than %d bytes", archiveEntryMax)
	}
	mode := e.mode & permBits
	if sel.mode != nil {
		mode = sel.mode.apply(e.mode, false)
	}
	if exists && fi.IsRegular() && sel.keepNewer && fi.ModTime.After(e.mtime) {
		return false, nil
	}
	if exists && fi.IsRegular() && fi.Mode&permBits == mode && fi.Size == int64(len(content)) &&
		(uid < 0 || fi.UID == uid) && (gid < 0 || fi.GID == gid) {
		old, err := t.ReadFile(archiveEntryMax)
		if err == nil && sha256.Sum256(old) == sha256.Sum256(content) {
			return false, nil
		}
	}
	if exists && fi.IsDir() {
		return false, fmt.Errorf("%s is a directory, the archive has a file there", name)
	}
	if check {
		return true, nil
	}
	return true, t.WriteFile(content, mode, uid, gid)
}

// listArchive detects the format by its magic bytes and lists the entries.
func listArchive(raw []byte) (string, []archiveEntry, error) {
	switch {
	case bytes.HasPrefix(raw, []byte("PK\x03\x04")) || bytes.HasPrefix(raw, []byte("PK\x05\x06")):
		es, err := listZip(raw)
		return "zip", es, err
	case bytes.HasPrefix(raw, []byte{0x1f, 0x8b}):
		r, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return "tar.gz", nil, err
		}
		es, err := listTar(r)
		return "tar.gz", es, err
	case bytes.HasPrefix(raw, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		r, err := xz.NewReader(bytes.NewReader(raw))
		if err != nil {
			return "tar.xz", nil, err
		}
		es, err := listTar(r)
		return "tar.xz", es, err
	case bytes.HasPrefix(raw, []byte("BZh")):
		es, err := listTar(bzip2.NewReader(bytes.NewReader(raw)))
		return "tar.bz2", es, err
	case bytes.HasPrefix(raw, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		d, err := zstd.NewReader(bytes.NewReader(raw), zstd.WithDecoderMaxMemory(archiveEntryMax))
		if err != nil {
			return "tar.zst", nil, err
		}
		defer d.Close()
		es, err := listTar(d)
		return "tar.zst", es, err
	}
	es, err := listTar(bytes.NewReader(raw))
	if err != nil {
		err = fmt.Errorf("not a tar (plain, gz, bz2, xz, zst) or zip archive: %w", err)
	}
	return "tar", es, err
}

// listTar reads a tar stream into entries (file contents held in memory,
// each bounded, since a stream cannot be read twice).
func listTar(r io.Reader) ([]archiveEntry, error) {
	tr := tar.NewReader(r)
	var out []archiveEntry
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(out) >= archiveMaxEntries {
			return nil, fmt.Errorf("more than %d entries", archiveMaxEntries)
		}
		e := archiveEntry{name: h.Name, mode: fs.FileMode(h.Mode) & fs.ModePerm, mtime: h.ModTime}
		if h.Mode&0o4000 != 0 {
			e.mode |= fs.ModeSetuid
		}
		if h.Mode&0o2000 != 0 {
			e.mode |= fs.ModeSetgid
		}
		switch h.Typeflag {
		case tar.TypeDir:
			e.kind = 'd'
		case tar.TypeSymlink:
			e.kind, e.target = 'l', h.Linkname
		case tar.TypeReg:
			e.kind = 'f'
			b, err := io.ReadAll(io.LimitReader(tr, archiveEntryMax+1))
			if err != nil {
				return nil, err
			}
			if total += int64(len(b)); len(b) > archiveEntryMax || total > 4*archiveEntryMax {
				return nil, fmt.Errorf("entry %s: the archive expands beyond the bounds of this module", h.Name)
			}
			e.open = func() (io.Reader, error) { return bytes.NewReader(b), nil }
		case tar.TypeXGlobalHeader:
			continue
		}
		out = append(out, e)
	}
}

func listZip(raw []byte) ([]archiveEntry, error) {
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, err
	}
	if len(zr.File) > archiveMaxEntries {
		return nil, fmt.Errorf("more than %d entries", archiveMaxEntries)
	}
	out := make([]archiveEntry, 0, len(zr.File))
	for _, f := range zr.File {
		e := archiveEntry{name: f.Name, mode: f.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid), mtime: f.Modified}
		m := f.Mode()
		switch {
		case m.IsDir():
			e.kind = 'd'
		case m&fs.ModeSymlink != 0:
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(io.LimitReader(rc, 4096))
			rc.Close()
			if err != nil {
				return nil, err
			}
			e.kind, e.target = 'l', string(b)
		case m.IsRegular():
			e.kind = 'f'
			if e.mode.Perm() == 0 {
				e.mode |= 0o644
			}
			f := f
			e.open = func() (io.Reader, error) {
				rc, err := f.Open()
				if err != nil {
					return nil, err
				}
				defer rc.Close()
				b, err := io.ReadAll(io.LimitReader(rc, archiveEntryMax+1))
				return bytes.NewReader(b), err
			}
		}
		out = append(out, e)
	}
	return out, nil
}
