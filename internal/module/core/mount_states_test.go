package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/soulstack/soulstack/internal/module"
)

// TestMountMissingOpts: the options state ephemeral compares with the
// mount table, as the kernel shows them.
func TestMountMissingOpts(t *testing.T) {
	cur := mountEntry{opts: []string{"rw", "nosuid", "relatime", "rw", "size=8192k", "mode=750", "uid=0"}}
	for _, tc := range []struct {
		opts string
		want []string
	}{
		{"defaults", nil},
		{"size=8m,mode=0750", nil},
		{"size=8192k,mode=750,rw,nosuid", nil},
		{"size=16m", []string{"size=16m"}},
		{"mode=0755", []string{"mode=0755"}},
		{"ro", []string{"ro"}},
		{"exec,dev", nil},
		{"suid", []string{"suid"}},
		{"noauto,nofail,x-systemd.automount,comment=x,_netdev", nil},
		{"noexec,size=,uid=0", []string{"noexec", "size="}},
	} {
		t.Run(tc.opts, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, missingOpts(cur, tc.opts)); diff != "" {
				t.Errorf("missingOpts(%q) (-want +got):\n%s", tc.opts, diff)
			}
		})
	}
}

// TestMountWithNoauto: boot: false adds noauto once.
func TestMountWithNoauto(t *testing.T) {
	for in, want := range map[string]string{"defaults": "defaults,noauto", "size=4m": "size=4m,noauto", "noauto,ro": "noauto,ro"} {
		if got := withNoauto(in); got != want {
			t.Errorf("withNoauto(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMountStateErrors: the new states refuse bad input naming the param.
func TestMountStateErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params map[string]any
		want   []string
	}{
		{"ephemeral without src", map[string]any{"path": "/srv/x", "fstype": "tmpfs", "state": "ephemeral"}, []string{`param "src"`, "ephemeral"}},
		{"ephemeral without fstype", map[string]any{"path": "/srv/x", "src": "tmpfs", "state": "ephemeral"}, []string{`param "fstype"`}},
		{"remounted with spaces", map[string]any{"path": "/srv/x", "state": "remounted", "opts": "ro, noexec"}, []string{`param "opts"`}},
		{"remounted nothing", map[string]any{"path": "/srv/soul-nothing-mounted-here", "state": "remounted"}, []string{`param "path"`, "nothing is mounted"}},
		{"unknown state", map[string]any{"path": "/srv/x", "state": "mountd"}, []string{`param "state"`, "ephemeral or remounted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runErr(t, "core.mount.mounted", tc.params, &module.Env{Check: true})
			wantErrContains(t, err, tc.want...)
		})
	}
}
