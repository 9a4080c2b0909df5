package hostsec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestFileModulesOnLabHost runs the second set's file modules for real as
// root on a lab host through the soul: check mode shows a diff and touches
// nothing, apply changes, a second apply changes nothing and leaves the
// file untouched (inode, mtime, ctime).
func TestFileModulesOnLabHost(t *testing.T) {
	h := host(t)
	const d = "/srv/mods"
	sh(t, h, `set -e; rm -rf `+d+`; mkdir -p `+d+`/d `+d+`/etc
printf 'Port 22\n#PermitRootLogin yes\nUsePAM yes\n' > `+d+`/etc/sshd_config
printf 'global\n  daemon\n' > `+d+`/etc/haproxy.cfg
printf 'bind 127.0.0.1\nport 6379\n' > `+d+`/etc/redis.conf
printf 'server {}\n' > `+d+`/etc/site`)
	stamp := func(p string) string { return sh(t, h, "stat -c '%i %Y.%y %Z %a %s' "+p) }
	cases := []struct {
		name, file, task, want string
	}{
		{"line", d + "/etc/sshd_config",
			`{name: t, module: core.file.line, params: {path: ` + d + `/etc/sshd_config, regexp: "^#?PermitRootLogin", line: "PermitRootLogin no", validate: "grep -q '^PermitRootLogin no$' %s"}}`,
			"Port 22\nPermitRootLogin no\nUsePAM yes\n"},
		{"block", d + "/etc/haproxy.cfg",
			`{name: t, module: core.file.block, params: {path: ` + d + `/etc/haproxy.cfg, block: "backend app\n  server a 10.0.0.1:80"}}`,
			"global\n  daemon\n# BEGIN SOUL STACK MANAGED BLOCK\nbackend app\n  server a 10.0.0.1:80\n# END SOUL STACK MANAGED BLOCK\n"},
		{"replace", d + "/etc/redis.conf",
			`{name: t, module: core.file.replace, params: {path: ` + d + `/etc/redis.conf, regexp: '^bind 127\.0\.0\.1$', replace: "bind 0.0.0.0"}}`,
			"bind 0.0.0.0\nport 6379\n"},
		{"link", d + "/etc/enabled",
			`{name: t, module: core.file.link, params: {path: ` + d + `/etc/enabled, target: site}}`,
			"server {}\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := sh(t, h, "stat -c '%i %Y %Z' "+c.file+" 2>/dev/null || echo none")
			r := apply(t, h, d+"/d/"+c.name, "  - "+c.task+"\n", true)
			if r.Failed || !r.Changed || r.Diff == "" {
				t.Fatalf("check mode: %+v", r)
			}
			if now := sh(t, h, "stat -c '%i %Y %Z' "+c.file+" 2>/dev/null || echo none"); now != before {
				t.Fatalf("check mode touched %s: %s -> %s", c.file, before, now)
			}
			if r := apply(t, h, d+"/d/"+c.name, "  - "+c.task+"\n", false); r.Failed || !r.Changed {
				t.Fatalf("apply: %+v", r)
			}
			if got := sh(t, h, "cat "+c.file); got != c.want {
				t.Fatalf("content %q, want %q", got, c.want)
			}
			s := stamp(c.file)
			if r := apply(t, h, d+"/d/"+c.name, "  - "+c.task+"\n", false); r.Failed || r.Changed {
				t.Fatalf("second apply: %+v", r)
			}
			if now := stamp(c.file); now != s {
				t.Fatalf("second apply touched %s: %s -> %s", c.file, s, now)
			}
		})
	}
	t.Run("copied", func(t *testing.T) {
		bin := []byte{0x7f, 'E', 'L', 'F', 0, 0xff, '\n'}
		if err := h.WriteFile(d+"/d/copied/files/tool.bin", bin, 0o644); err != nil {
			t.Fatal(err)
		}
		task := `  - {name: t, module: core.file.copied, params: {path: ` + d + `/bin/tool, src: tool.bin, mode: "0755", makedirs: true}}` + "\n"
		if r := apply(t, h, d+"/d/copied", task, true); r.Failed || !r.Changed {
			t.Fatalf("check mode: %+v", r)
		}
		if r := apply(t, h, d+"/d/copied", task, false); r.Failed || !r.Changed {
			t.Fatalf("apply: %+v", r)
		}
		got, err := h.ReadFile(d + "/bin/tool")
		if err != nil || string(got) != string(bin) {
			t.Fatalf("copied %q, %v", got, err)
		}
		s := stamp(d + "/bin/tool")
		if r := apply(t, h, d+"/d/copied", task, false); r.Failed || r.Changed {
			t.Fatalf("second apply: %+v", r)
		}
		if now := stamp(d + "/bin/tool"); now != s {
			t.Fatalf("second apply touched the file: %s -> %s", s, now)
		}
	})
	t.Run("downloaded", func(t *testing.T) {
		// Served from the lab bridge, where a Keeper would listen.
		ln, err := net.Listen("tcp", net.JoinHostPort(shared.Lab().GatewayIP(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		var hits atomic.Int64
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			_, _ = w.Write([]byte("artifact v1\n"))
		})}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		sum := sha256.Sum256([]byte("artifact v1\n"))
		task := `  - {name: t, module: core.file.downloaded, params: {path: ` + d + `/opt/artifact, url: "http://` + ln.Addr().String() + `/a", sha256: ` + hex.EncodeToString(sum[:]) + `, makedirs: true}}` + "\n"
		if r := apply(t, h, d+"/d/dl", task, true); r.Failed || !r.Changed || hits.Load() != 0 {
			t.Fatalf("check mode: %+v (%d fetches)", r, hits.Load())
		}
		if r := apply(t, h, d+"/d/dl", task, false); r.Failed || !r.Changed {
			t.Fatalf("apply: %+v", r)
		}
		if got := sh(t, h, "cat "+d+"/opt/artifact"); got != "artifact v1\n" {
			t.Fatalf("downloaded %q", got)
		}
		s := stamp(d + "/opt/artifact")
		if r := apply(t, h, d+"/d/dl", task, false); r.Failed || r.Changed || hits.Load() != 1 {
			t.Fatalf("second apply: %+v (%d fetches)", r, hits.Load())
		}
		if now := stamp(d + "/opt/artifact"); now != s {
			t.Fatalf("second apply touched the file: %s -> %s", s, now)
		}
	})
	t.Run("archive", func(t *testing.T) {
		// A tar.gz made on the host by tar itself, extracted by the soul's
		// library code.
		sh(t, h, `set -e; mkdir -p `+d+`/d/arch/files `+d+`/src/app/conf `+d+`/www; cd `+d+`/src; echo 'a=1' > app/conf/app.conf; ln -s conf/app.conf app/current; tar czf `+d+`/d/arch/files/app.tgz app`)
		task := `  - {name: t, module: core.archive.extracted, params: {path: ` + d + `/www, src: app.tgz}}` + "\n"
		if r := apply(t, h, d+"/d/arch", task, true); r.Failed || !r.Changed {
			t.Fatalf("check mode: %+v", r)
		}
		if got := sh(t, h, "ls -A "+d+"/www"); got != "" {
			t.Fatalf("check mode extracted %q", got)
		}
		if r := apply(t, h, d+"/d/arch", task, false); r.Failed || !r.Changed {
			t.Fatalf("apply: %+v", r)
		}
		if got := sh(t, h, "cat "+d+"/www/app/current"); got != "a=1\n" {
			t.Fatalf("extracted %q", got)
		}
		s := stamp(d + "/www/app/conf/app.conf")
		if r := apply(t, h, d+"/d/arch", task, false); r.Failed || r.Changed {
			t.Fatalf("second apply: %+v", r)
		}
		if now := stamp(d + "/www/app/conf/app.conf"); now != s {
			t.Fatalf("second apply touched the file: %s -> %s", s, now)
		}
		// An archive with an entry escaping the destination is refused whole.
		sh(t, h, `set -e; mkdir -p `+d+`/d/evil/files; cd `+d+`/src; tar czf `+d+`/d/evil/files/evil.tgz -P app ../../../etc/os-release`)
		r := apply(t, h, d+"/d/evil", `  - {name: t, module: core.archive.extracted, params: {path: `+d+`/www, src: evil.tgz}}`+"\n", false)
		if !r.Failed || !strings.Contains(r.Msg, "climbs out") {
			t.Fatalf("escaping archive: %+v", r)
		}
	})
	t.Run("stat", func(t *testing.T) {
		task := `  - {name: t, module: core.file.stat, params: {path: ` + d + `/etc/redis.conf}, register: st}` + "\n"
		// The destiny's output exposes the probe's fields.
		main := "input: {}\ntasks:\n" + task + "output:\n  exists: \"${ register.st.exists }\"\n  sha: \"${ register.st.sha256 }\"\n  owner: \"${ register.st.owner }\"\n  mode: \"${ register.st.mode }\"\n"
		out := applyRaw(t, h, d+"/d/stat", main, true)
		var res struct {
			Output map[string]any `json:"output"`
			Failed bool           `json:"failed"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Failed {
			t.Fatalf("stat apply: %v %s", err, out)
		}
		sum := strings.Fields(sh(t, h, "sha256sum "+d+"/etc/redis.conf"))[0]
		if res.Output["exists"] != true || res.Output["sha"] != sum || res.Output["owner"] != "root" || res.Output["mode"] != "0644" {
			t.Fatalf("stat output %v (sha256sum %s)", res.Output, sum)
		}
	})
}

// TestH1EditorsOnLabHost: the editors and core.file.link refuse nobody's
// planted links like file.present does (SPEC §9), and link replaces a
// planted link instead of writing through it.
func TestH1EditorsOnLabHost(t *testing.T) {
	h := host(t)
	const u = "/srv/h1ed"
	sh(t, h, `set -e; rm -rf `+u+`; mkdir -p `+u+`/appdir `+u+`/etc `+u+`/d
echo "root:x:0:0:root:/root:/bin/bash" > `+u+`/etc/passwd-sim; chmod 0644 `+u+`/etc/passwd-sim
chown nobody:nogroup `+u+`/appdir`)
	asNobody(t, h, `cd `+u+`/appdir && ln -s `+u+`/etc/passwd-sim app.conf && ln -s `+u+`/etc conf.d`)
	statCmd := "stat -c '%n %u:%g %a %s %i %Y %Z' " + u + "/etc/passwd-sim " + u + "/etc; sha256sum " + u + "/etc/passwd-sim"
	before := sh(t, h, statCmd)
	for i, a := range []struct{ task, want string }{
		{`{name: t, module: core.file.line, params: {path: ` + u + `/appdir/app.conf, line: "nobody:x:0:0::/:/bin/sh"}}`, "path is a symlink"},
		{`{name: t, module: core.file.line, params: {path: ` + u + `/appdir/app.conf, line: "x", follow: true}}`, "unsafe path"},
		{`{name: t, module: core.file.block, params: {path: ` + u + `/appdir/conf.d/passwd-sim, block: "nobody:x:0:0::/:/bin/sh"}}`, "unsafe path"},
		{`{name: t, module: core.file.replace, params: {path: ` + u + `/appdir/app.conf, regexp: "^root", replace: "nobody"}}`, "path is a symlink"},
		{`{name: t, module: core.file.link, params: {path: ` + u + `/appdir/conf.d/passwd-sim, target: /dev/null, force: true}}`, "unsafe path"},
	} {
		r := apply(t, h, u+"/d/"+string(rune('a'+i)), "  - "+a.task+"\n", false)
		if !r.Failed || !strings.Contains(r.Msg, a.want) {
			t.Errorf("attack %d not refused: failed %v msg %q (want %q)", i, r.Failed, r.Msg, a.want)
		}
	}
	if err := h.WriteFile(u+"/d/copied/files/evil", []byte("nobody:x:0:0::/:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := apply(t, h, u+"/d/copied", `  - {name: t, module: core.file.copied, params: {path: `+u+`/appdir/app.conf, src: evil}}`+"\n", false); !r.Failed || !strings.Contains(r.Msg, "path is a symlink") {
		t.Errorf("copied through a planted link not refused: %+v", r)
	}
	// core.file.link on nobody's planted link replaces the link itself.
	r := apply(t, h, u+"/d/link", `  - {name: t, module: core.file.link, params: {path: `+u+`/appdir/app.conf, target: own.conf, force: true}}`+"\n", false)
	if r.Failed || !r.Changed {
		t.Fatalf("relinking nobody's link: %+v", r)
	}
	if after := sh(t, h, statCmd); after != before {
		t.Fatalf("root's files changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestLocalRecordOnLabHost: a soul acting as root keeps its record in its
// data dir and, systemd being PID 1 on the host, in the journal (SPEC
// §10.3), without params values.
func TestLocalRecordOnLabHost(t *testing.T) {
	h := host(t)
	if strings.TrimSpace(sh(t, h, "cat /proc/1/comm")) != "systemd" {
		t.Fatal("the lab host's PID 1 is not systemd: the default lab flavour changed")
	}
	const d = "/srv/rec"
	sh(t, h, "rm -rf "+d+" /var/lib/soulstack/soul/tasks.log; mkdir -p "+d+"/d")
	r := apply(t, h, d+"/d/rec", `  - {name: "Write the secret file", module: core.file.present, params: {path: `+d+`/pw, content: "Rec-S3cret-77\n", mode: "0600"}}`+"\n", false)
	if r.Failed || !r.Changed {
		t.Fatalf("apply: %+v", r)
	}
	rec := sh(t, h, "cat /var/lib/soulstack/soul/tasks.log; stat -c %a /var/lib/soulstack/soul/tasks.log")
	if !strings.Contains(rec, `"task":"Write the secret file"`) || !strings.Contains(rec, `"module":"core.file.present"`) ||
		!strings.Contains(rec, `"status":"changed"`) || !strings.HasSuffix(rec, "600\n") || strings.Contains(rec, "Rec-S3cret-77") {
		t.Fatalf("local record:\n%s", rec)
	}
	// journald receives datagrams asynchronously: flush before reading.
	j := sh(t, h, "journalctl --flush >/dev/null 2>&1 || true; journalctl -t soul -o json --no-pager SOULSTACK_MODULE=core.file.present")
	if !strings.Contains(j, `"SOULSTACK_TASK":"Write the secret file"`) || !strings.Contains(j, `"SOULSTACK_STATUS":"changed"`) || strings.Contains(j, "Rec-S3cret-77") {
		t.Fatalf("journal:\n%s", j)
	}
}
