package core

import (
	"testing"
)

func TestEditFstab(t *testing.T) {
	old := "# /etc/fstab\nUUID=1 / ext4 defaults 0 1\ntmpfs /mnt/a\\040b tmpfs size=1m 0 0\n"
	got := string(editFstab([]byte(old), "/mnt/a b", "tmpfs /mnt/a\\040b tmpfs size=2m 0 0"))
	if want := "# /etc/fstab\nUUID=1 / ext4 defaults 0 1\ntmpfs /mnt/a\\040b tmpfs size=2m 0 0\n"; got != want {
		t.Fatalf("replace:\n%s", got)
	}
	got = string(editFstab([]byte(old), "/srv/x", "tmpfs /srv/x tmpfs defaults 0 0"))
	if want := old + "tmpfs /srv/x tmpfs defaults 0 0\n"; got != want {
		t.Fatalf("append:\n%s", got)
	}
	got = string(editFstab([]byte(old), "/mnt/a b", ""))
	if want := "# /etc/fstab\nUUID=1 / ext4 defaults 0 1\n"; got != want {
		t.Fatalf("remove:\n%s", got)
	}
	if s := fstabEscape("/mnt/a b"); s != `/mnt/a\040b` || fstabUnescape(s) != "/mnt/a b" {
		t.Fatalf("escape %q", s)
	}
}

func TestMountParams(t *testing.T) {
	for _, c := range []struct {
		p     map[string]any
		param string
	}{
		{map[string]any{"path": "/srv/x", "src": "/dev/sdb1", "fstype": "nosuchfs"}, "fstype"},
		{map[string]any{"path": "srv/x", "src": "/dev/sdb1", "fstype": "ext4"}, "path"},
		{map[string]any{"path": "/", "src": "/dev/sdb1", "fstype": "ext4"}, "path"},
		{map[string]any{"path": "/srv/x", "fstype": "ext4"}, "src"},
		{map[string]any{"path": "/srv/x", "src": "/dev/sdb1"}, "fstype"},
		{map[string]any{"path": "/srv/x", "src": "/dev/sdb1", "fstype": "ext4", "opts": "a b"}, "opts"},
		{map[string]any{"path": "/srv/x", "state": "gone"}, "state"},
	} {
		_, err := runErr(t, "core.mount.mounted", c.p, nil)
		wantErrContains(t, err, "core.mount.mounted on ", `param "`+c.param+`"`)
	}
	for _, ok := range []string{"ext4", "tmpfs", "nfs4", "fuse.sshfs"} {
		if err := checkFstype(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
