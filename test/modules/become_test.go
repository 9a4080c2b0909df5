package modules

import (
	"strings"
	"testing"
)

// TestExecBecomeUserOnLabHost: core.exec.run and core.cmd.shell with
// become_user run as that user (Ansible's become_user): its uid, groups
// and login environment, in its home by default; what it creates is its
// own, and what it may not touch stays untouched.
func TestExecBecomeUserOnLabHost(t *testing.T) {
	h := host(t)
	reset := "userdel -r soulbecome 2>/dev/null; groupdel soulbecomex 2>/dev/null; rm -rf /srv/bu; true"
	sh(t, h, reset)
	t.Cleanup(func() { sh(t, h, reset) })
	sh(t, h, "mkdir -p /srv/bu && groupadd soulbecomex && useradd -m -s /bin/bash -G soulbecomex soulbecome")

	r := apply(t, h, "/srv/bu/run", `  - {name: t, module: core.exec.run, params: {become_user: soulbecome, command: "{ id -un; id -Gn; echo $HOME $USER $SHELL; pwd; } > made"}}`+"\n", false)
	if r.Failed {
		t.Fatalf("run: %+v", r)
	}
	want := "soulbecome\nsoulbecome soulbecomex\n/home/soulbecome soulbecome /bin/bash\n/home/soulbecome"
	if got := strings.TrimSpace(sh(t, h, "cat /home/soulbecome/made")); got != want {
		t.Errorf("the command saw %q, want %q", got, want)
	}
	if got := sh(t, h, "stat -c %U /home/soulbecome/made"); got != "soulbecome\n" {
		t.Errorf("the file it made belongs to %q", got)
	}
	r = apply(t, h, "/srv/bu/denied", `  - {name: t, module: core.cmd.shell, params: {become_user: soulbecome, cmd: "touch /root/soulbecome-was-here"}}`+"\n", false)
	if !r.Failed || !strings.Contains(r.Msg, "Permission denied") {
		t.Errorf("writing /root as the user: %+v", r)
	}
	if got := sh(t, h, "test -e /root/soulbecome-was-here && echo yes || echo no"); got != "no\n" {
		t.Error("the user wrote into /root")
	}
	r = apply(t, h, "/srv/bu/nouser", `  - {name: t, module: core.exec.run, params: {become_user: nosuchuser, cmd: "true"}}`+"\n", false)
	if !r.Failed || !strings.Contains(r.Msg, "become_user") {
		t.Errorf("an unknown user: %+v", r)
	}
}
