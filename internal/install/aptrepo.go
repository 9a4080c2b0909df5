package install

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	"github.com/blakesmith/ar"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// AptRepoOptions says what BuildAptRepo builds.
type AptRepoOptions struct {
	// Debs are the .deb files the repository serves.
	Debs []string
	// Dir receives the repository: pool/, dists/<Suite>/ and the public
	// key (KeyFileName).
	Dir string
	// Suite is the distribution apt names in sources ("stable" when empty);
	// the only component is main.
	Suite string
	// SigningKey is an armored OpenPGP secret key (gpg --export-secret-keys
	// --armor), unprotected; its signing key signs Release into InRelease
	// and Release.gpg.
	SigningKey []byte
	// Now dates Release (time.Now when zero).
	Now time.Time
}

// KeyFileName is the public key BuildAptRepo writes at the repository's
// root, for apt's signed-by=.
const KeyFileName = "soulstack-archive-keyring.asc"

// BuildAptRepo writes a signed apt repository of the .deb packages into
// o.Dir, the layout any web server (or a Keeper's static directory) serves:
//
//	pool/main/<package>/<file>.deb
//	dists/<suite>/main/binary-<arch>/Packages{,.gz}
//	dists/<suite>/{Release,InRelease,Release.gpg}
//	soulstack-archive-keyring.asc
//
// so that, with the key in /etc/apt/keyrings, a host's
// `deb [signed-by=/etc/apt/keyrings/soulstack-archive-keyring.asc] URL stable main`
// lets `apt-get install soulstack-soul` verify and install the packages.
func BuildAptRepo(o AptRepoOptions) error {
	if len(o.Debs) == 0 {
		return errors.New("apt repository: no .deb packages (run make package first)")
	}
	if o.Suite == "" {
		o.Suite = "stable"
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	keys, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(o.SigningKey))
	if err != nil {
		return fmt.Errorf("apt repository: reading the signing key: %w", err)
	}
	if len(keys) != 1 || keys[0].PrivateKey == nil {
		return fmt.Errorf("apt repository: the signing key file must hold one secret key, it holds %d keys", len(keys))
	}
	signer := keys[0]
	sk, ok := signer.SigningKey(o.Now)
	if !ok || sk.PrivateKey == nil || sk.PrivateKey.Encrypted {
		return errors.New("apt repository: the key has no usable (unexpired, unprotected) signing key")
	}
	byArch := map[string][]string{}
	for _, deb := range o.Debs {
		stanza, name, arch, err := debStanza(deb)
		if err != nil {
			return fmt.Errorf("apt repository: %s: %w", deb, err)
		}
		rel := path.Join("pool", "main", name, filepath.Base(deb))
		size, md5sum, sha, err := copyHashed(deb, filepath.Join(o.Dir, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("apt repository: %w", err)
		}
		stanza += fmt.Sprintf("Filename: %s\nSize: %d\nMD5sum: %s\nSHA256: %s\n", rel, size, md5sum, sha)
		byArch[arch] = append(byArch[arch], stanza)
	}
	arches := make([]string, 0, len(byArch))
	for a := range byArch {
		arches = append(arches, a)
	}
	slices.Sort(arches)
	dist := filepath.Join(o.Dir, "dists", o.Suite)
	var index []string // paths under dist/, for Release
	for _, a := range arches {
		stanzas := byArch[a]
		slices.Sort(stanzas)
		packages := []byte(strings.Join(stanzas, "\n"))
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(packages)
		if err := zw.Close(); err != nil {
			return err
		}
		sub := "main/binary-" + a
		for name, b := range map[string][]byte{"Packages": packages, "Packages.gz": gz.Bytes()} {
			if err := writeFile(filepath.Join(dist, filepath.FromSlash(sub), name), b); err != nil {
				return err
			}
		}
		index = append(index, sub+"/Packages", sub+"/Packages.gz")
	}
	slices.Sort(index)
	var rel strings.Builder
	fmt.Fprintf(&rel, "Origin: Soul Stack\nLabel: Soul Stack\nSuite: %s\nCodename: %s\nDate: %s\nArchitectures: %s\nComponents: main\nDescription: Soul Stack packages (keeper, soul, soulctl)\n",
		o.Suite, o.Suite, o.Now.UTC().Format(time.RFC1123Z), strings.Join(arches, " "))
	var md5s, shas strings.Builder
	for _, p := range index {
		b, err := os.ReadFile(filepath.Join(dist, filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		m, s := md5.Sum(b), sha256.Sum256(b)
		fmt.Fprintf(&md5s, " %s %d %s\n", hex.EncodeToString(m[:]), len(b), p)
		fmt.Fprintf(&shas, " %s %d %s\n", hex.EncodeToString(s[:]), len(b), p)
	}
	rel.WriteString("MD5Sum:\n" + md5s.String() + "SHA256:\n" + shas.String())
	release := []byte(rel.String())
	if err := writeFile(filepath.Join(dist, "Release"), release); err != nil {
		return err
	}
	var in bytes.Buffer
	w, err := clearsign.Encode(&in, sk.PrivateKey, nil)
	if err != nil {
		return fmt.Errorf("apt repository: signing InRelease: %w", err)
	}
	if _, err := w.Write(release); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("apt repository: signing InRelease: %w", err)
	}
	var det bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&det, signer, bytes.NewReader(release), nil); err != nil {
		return fmt.Errorf("apt repository: signing Release.gpg: %w", err)
	}
	var pub bytes.Buffer
	aw, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		return err
	}
	if err := signer.Serialize(aw); err != nil {
		return err
	}
	if err := aw.Close(); err != nil {
		return err
	}
	pub.WriteString("\n")
	for p, b := range map[string][]byte{filepath.Join(dist, "InRelease"): in.Bytes(), filepath.Join(dist, "Release.gpg"): det.Bytes(), filepath.Join(o.Dir, KeyFileName): pub.Bytes()} {
		if err := writeFile(p, b); err != nil {
			return err
		}
	}
	return nil
}

// debStanza returns a .deb's control file as a Packages stanza (without
// Filename, Size and hashes), with its Package and Architecture.
func debStanza(deb string) (stanza, name, arch string, err error) {
	f, err := os.Open(deb)
	if err != nil {
		return "", "", "", err
	}
	defer f.Close()
	r := ar.NewReader(f)
	for {
		h, err := r.Next()
		if err != nil {
			return "", "", "", fmt.Errorf("no control.tar member: %w", err)
		}
		member := strings.TrimSuffix(strings.TrimSpace(h.Name), "/")
		if !strings.HasPrefix(member, "control.tar") {
			continue
		}
		var cr io.Reader = r
		switch path.Ext(member) {
		case ".gz":
			if cr, err = gzip.NewReader(r); err != nil {
				return "", "", "", err
			}
		case ".xz":
			if cr, err = xz.NewReader(r); err != nil {
				return "", "", "", err
			}
		case ".zst":
			zr, err := zstd.NewReader(r)
			if err != nil {
				return "", "", "", err
			}
			defer zr.Close()
			cr = zr
		case ".tar":
		default:
			return "", "", "", fmt.Errorf("unknown control archive %s", member)
		}
		tr := tar.NewReader(cr)
		for {
			th, err := tr.Next()
			if err != nil {
				return "", "", "", fmt.Errorf("no control file in %s: %w", member, err)
			}
			if path.Clean(th.Name) != "control" {
				continue
			}
			b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			if err != nil {
				return "", "", "", err
			}
			var out strings.Builder
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				l := sc.Text()
				if strings.TrimSpace(l) == "" {
					continue
				}
				if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") {
					switch k {
					case "Package":
						name = strings.TrimSpace(v)
					case "Architecture":
						arch = strings.TrimSpace(v)
					}
				}
				out.WriteString(l + "\n")
			}
			if name == "" || arch == "" || strings.ContainsAny(name, "/ ") {
				return "", "", "", errors.New("control file without Package or Architecture")
			}
			return out.String(), name, arch, sc.Err()
		}
	}
}

func copyHashed(src, dst string) (size int64, md5sum, sha string, err error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, "", "", err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, "", "", err
	}
	out, err := os.Create(dst)
	if err != nil {
		return 0, "", "", err
	}
	m, s := md5.New(), sha256.New()
	size, err = io.Copy(io.MultiWriter(out, m, s), in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return size, hex.EncodeToString(m.Sum(nil)), hex.EncodeToString(s.Sum(nil)), err
}

func writeFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}
