package hostsec

import (
	"strings"
	"testing"
)

// TestH1AttacksOnLabHost replays the audit's H1 attacks on a real host:
// nobody plants the links in its own directory, the real soul (root)
// applies the tasks, each attack fails and root's files keep owner, mode,
// inode, times and content.
func TestH1AttacksOnLabHost(t *testing.T) {
	h := host(t)
	const u = "/srv/h1"
	sh(t, h, `set -e; rm -rf `+u+`; mkdir -p `+u+`/appdir `+u+`/etc-sim `+u+`/etc-dir `+u+`/important `+u+`/d
echo "ORIGINAL ROOT-OWNED CONTENT" > `+u+`/etc-sim/sudoers-sim; chmod 0440 `+u+`/etc-sim/sudoers-sim
echo precious > `+u+`/important/data
chown nobody:nogroup `+u+`/appdir`)
	asNobody(t, h, `cd `+u+`/appdir && ln -s `+u+`/etc-sim/sudoers-sim app.conf && ln -s `+u+`/etc-dir data && ln -s `+u+`/important cache && ln -s `+u+`/etc-sim conf.d`)
	const watch = u + "/etc-sim/sudoers-sim " + u + "/etc-dir " + u + "/important/data " + u + "/etc-sim"
	statCmd := "stat -c '%n %u:%g %a %s %i %Y %Z' " + watch + "; sha256sum " + u + "/etc-sim/sudoers-sim " + u + "/important/data"
	before := sh(t, h, statCmd)

	attacks := []struct {
		name, task, want string
	}{
		{"present through app.conf -> sudoers (audit repro)",
			`{name: t, module: core.file.present, params: {path: ` + u + `/appdir/app.conf, content: "app_setting=1\n", owner: nobody, mode: "0640"}}`, "path is a symlink"},
		{"present with follow: true",
			`{name: t, module: core.file.present, params: {path: ` + u + `/appdir/app.conf, content: "x\n", owner: nobody, follow: true}}`, "unsafe path"},
		{"directory through data -> etc-dir (audit repro)",
			`{name: t, module: core.file.directory, params: {path: ` + u + `/appdir/data, owner: nobody, mode: "0777"}}`, "path is a symlink"},
		{"absent through cache -> important (audit repro)",
			`{name: t, module: core.file.absent, params: {path: ` + u + `/appdir/cache/data}}`, "unsafe path"},
		{"present through a symlinked parent",
			`{name: t, module: core.file.present, params: {path: ` + u + `/appdir/conf.d/sudoers-sim, content: "x\n"}}`, "unsafe path"},
		{"makedirs through a symlinked parent",
			`{name: t, module: core.file.present, params: {path: ` + u + `/appdir/conf.d/new/x, content: "x\n", makedirs: true}}`, "unsafe path"},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			r := apply(t, h, u+"/d/"+string(rune('a'+i)), "  - "+a.task+"\n", false)
			if !r.Failed || !strings.Contains(r.Msg, a.want) {
				t.Fatalf("attack not refused: failed %v, msg %q (want %q)", r.Failed, r.Msg, a.want)
			}
		})
	}
	t.Run("rendered through app.conf -> sudoers", func(t *testing.T) {
		dir := u + "/d/rendered"
		if err := h.WriteFile(dir+"/templates/app.conf.tmpl", []byte("nobody ALL=(ALL) NOPASSWD: ALL\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := apply(t, h, dir, `  - {name: t, module: core.file.rendered, params: {path: `+u+`/appdir/app.conf, template: templates/app.conf.tmpl, owner: nobody}}`+"\n", false)
		if !r.Failed || !strings.Contains(r.Msg, "path is a symlink") {
			t.Fatalf("attack not refused: failed %v, msg %q", r.Failed, r.Msg)
		}
	})
	if after := sh(t, h, statCmd); after != before {
		t.Fatalf("root's files changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if out := sh(t, h, "ls -A "+u+"/etc-dir "+u+"/etc-sim"); strings.Contains(out, "new") || strings.Contains(out, "soulstack") {
		t.Fatalf("something was created in root's directories: %s", out)
	}
	// nobody still cannot write the sudoers stand-in.
	if _, _, err := h.Exec(t.Context(), "setpriv --reuid=65534 --regid=65534 --clear-groups /bin/sh -c 'echo x > "+u+"/etc-sim/sudoers-sim'"); err == nil {
		t.Fatal("nobody can write the sudoers stand-in")
	}
	// Legitimate management of nobody's own file still works, idempotently.
	task := `  - {name: t, module: core.file.present, params: {path: ` + u + `/appdir/own/app.conf, content: "a=1\n", owner: nobody, mode: "0640", makedirs: true}}` + "\n"
	if r := apply(t, h, u+"/d/legit", task, false); r.Failed || !r.Changed {
		t.Fatalf("legitimate write: %+v", r)
	}
	if r := apply(t, h, u+"/d/legit", task, false); r.Failed || r.Changed {
		t.Fatalf("legitimate write, second run: %+v", r)
	}
	if got := sh(t, h, "stat -c '%U %a' "+u+"/appdir/own "+u+"/appdir/own/app.conf"); got != "nobody 755\nnobody 640\n" {
		t.Fatalf("legitimate write: owners/modes %q", got)
	}
}
