package hostsec

import (
	"strings"
	"testing"
)

// TestH1AuthorizedKeyPlantedLinksOnLabHost: audit H1 for the one module
// that writes into a directory its user owns by design — a user plants
// ~/.ssh -> /root/.ssh, or ~/.ssh/authorized_keys -> a root-only file, and
// core.ssh.authorized_key (the real soul, root) refuses both; root's files
// keep owner, mode, inode and content.
func TestH1AuthorizedKeyPlantedLinksOnLabHost(t *testing.T) {
	h := host(t)
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ5UqUXbk1eJrV8zEtKoqNtG7bKxRKNbsNDSyE8mvKC mallory@a"
	const u = "/srv/h1key"
	sh(t, h, `set -e; id mallory >/dev/null 2>&1 || useradd -m -s /bin/sh mallory
rm -rf `+u+` /home/mallory/.ssh; mkdir -p `+u+`/d /root/.ssh; chmod 0700 /root/.ssh
touch /root/.ssh/authorized_keys; chmod 0600 /root/.ssh/authorized_keys
echo "root:SECRET-HASH:19000::::::" > `+u+`/shadow-sim; chmod 0640 `+u+`/shadow-sim`)
	asMallory := func(script string) {
		t.Helper()
		sh(t, h, "setpriv --reuid=mallory --regid=mallory --init-groups /bin/sh -c "+shq(script))
	}
	statCmd := "stat -c '%n %U:%G %a %s %i %Y' /root/.ssh /root/.ssh/authorized_keys " + u + "/shadow-sim; sha256sum /root/.ssh/authorized_keys " + u + "/shadow-sim"
	before := sh(t, h, statCmd)
	task := `  - {name: t, module: core.ssh.authorized_key, params: {user: mallory, key: "` + key + `"}}` + "\n"

	asMallory("ln -s /root/.ssh /home/mallory/.ssh")
	if r := apply(t, h, u+"/d/dir", task, false); !r.Failed || !strings.Contains(r.Msg, "path is a symlink") {
		t.Errorf("~/.ssh -> /root/.ssh not refused: %+v", r)
	}
	asMallory("rm /home/mallory/.ssh && mkdir -m 0700 /home/mallory/.ssh && ln -s " + u + "/shadow-sim /home/mallory/.ssh/authorized_keys")
	if r := apply(t, h, u+"/d/file", task, false); !r.Failed || !strings.Contains(r.Msg, "path is a symlink") {
		t.Errorf("~/.ssh/authorized_keys -> shadow not refused: %+v", r)
	}
	if after := sh(t, h, statCmd); after != before {
		t.Fatalf("root's files changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Without the links the key lands in mallory's own file.
	asMallory("rm /home/mallory/.ssh/authorized_keys")
	if r := apply(t, h, u+"/d/ok", task, false); r.Failed || !r.Changed {
		t.Fatalf("mallory's own authorized_keys: %+v", r)
	}
	if got := sh(t, h, "stat -c '%U %a' /home/mallory/.ssh/authorized_keys; cat /home/mallory/.ssh/authorized_keys"); got != "mallory 600\n"+key+"\n" {
		t.Fatalf("authorized_keys: %q", got)
	}
}
