package cloud

import (
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/soulstack/soulstack/internal/store"
)

// TestUserData: the bootstrap is valid cloud-config that names the host
// after the instance, writes the join token to a 0600 file (cloud-init
// writes it: on no command line) and pipes the Keeper's install.sh,
// pinned, into sh reading the token from that file; the command holds no
// token (sh -c's argument is in the process list).
func TestUserData(t *testing.T) {
	script := InstallScript("https://10.1.2.1:8443/", "sha256//abc=")
	if want := `{ curl -fsSL --pinnedpubkey 'sha256//abc=' -k 'https://10.1.2.1:8443/install.sh' || echo exit 1; } | sh -s -- --join-token-file /run/soulstack-join-token; rc=$?; rm -f /run/soulstack-join-token; exit $rc`; script != want {
		t.Fatalf("script = %s\nwant     %s", script, want)
	}
	const token = "SSJ1.s3cr3t.ff"
	ud := UserData("web-1", script, token)
	if !strings.HasPrefix(ud, "#cloud-config\n") {
		t.Fatalf("user data does not start with #cloud-config:\n%s", ud)
	}
	var doc struct {
		Hostname   string     `yaml:"hostname"`
		FQDN       string     `yaml:"fqdn"`
		Runcmd     [][]string `yaml:"runcmd"`
		WriteFiles []struct {
			Path, Permissions, Owner, Content string
		} `yaml:"write_files"`
	}
	if err := yaml.Unmarshal([]byte(ud), &doc); err != nil {
		t.Fatalf("user data is not YAML: %v\n%s", err, ud)
	}
	if doc.Hostname != "web-1" || doc.FQDN != "web-1" || len(doc.Runcmd) != 1 || !slices.Equal(doc.Runcmd[0], []string{"sh", "-c", script}) {
		t.Fatalf("user data = %+v", doc)
	}
	if strings.Contains(strings.Join(doc.Runcmd[0], " "), token) {
		t.Fatalf("the join token is on runcmd's command line: %q", doc.Runcmd[0])
	}
	if len(doc.WriteFiles) != 1 || doc.WriteFiles[0].Path != JoinTokenPath || doc.WriteFiles[0].Permissions != "0600" ||
		doc.WriteFiles[0].Owner != "root:root" || doc.WriteFiles[0].Content != token {
		t.Fatalf("write_files = %+v, want the token in %s, 0600", doc.WriteFiles, JoinTokenPath)
	}
	if got := InstallScript("https://k:1", ""); strings.Contains(got, "pinnedpubkey") {
		t.Errorf("no pin, yet: %s", got)
	}
}

// TestWanted: count names instances <incarnation>-<profile>-<i>, keeps
// the recorded ones, fills gaps first and never shrinks; names are taken
// as given.
func TestWanted(t *testing.T) {
	rec := map[string]store.CloudInstance{
		"shop-small-1": {Name: "shop-small-1", Profile: "small"},
		"shop-small-3": {Name: "shop-small-3", Profile: "small"},
		"shop-big-1":   {Name: "shop-big-1", Profile: "big"},
	}
	for _, tc := range []struct {
		p    params
		want []string
	}{
		{params{profile: "small", count: 3, hasCount: true}, []string{"shop-small-1", "shop-small-2", "shop-small-3"}},
		{params{profile: "small", count: 1, hasCount: true}, []string{"shop-small-1", "shop-small-3"}},
		{params{profile: "big", count: 2, hasCount: true}, []string{"shop-big-1", "shop-big-2"}},
		{params{profile: "small", names: []string{"b", "a", "b"}}, []string{"a", "b"}},
	} {
		got, err := wanted(tc.p, "shop", rec)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("wanted(%+v) = %v, %v; want %v", tc.p, got, err, tc.want)
		}
	}
	if _, err := wanted(params{profile: "small"}, "shop", rec); err == nil {
		t.Error("neither count nor names: no error")
	}
	if _, err := wanted(params{profile: "small", count: 1, hasCount: true}, strings.Repeat("x", 60), nil); err == nil || !strings.Contains(err.Error(), "give names instead") {
		t.Errorf("too long a generated name: %v", err)
	}
}

// TestReadParams: values as the engine renders them, and the refusals.
func TestReadParams(t *testing.T) {
	p, err := readParams(map[string]any{"provider": "lab", "profile": "x", "count": float64(2), "names": []any{"a"}})
	if err != nil || p.count != 2 || !p.hasCount || !slices.Equal(p.names, []string{"a"}) {
		t.Fatalf("readParams = %+v, %v", p, err)
	}
	for _, bad := range []map[string]any{
		{"profile": "x", "count": int64(1)},
		{"provider": "lab", "count": 1.5},
		{"provider": "lab", "names": []any{"Not_A_Host"}},
		{"provider": "lab", "names": []any{1}},
	} {
		if _, err := readParams(bad); err == nil {
			t.Errorf("readParams(%v): no error", bad)
		}
	}
}

// TestProviderConfig: exec and local configs are strictly checked, and
// masking hides every env value.
func TestProviderConfig(t *testing.T) {
	good := store.CloudProvider{Name: "hc", Kind: KindExec, Config: map[string]any{"executable": "/bin/p", "args": []any{"a"}, "env": map[string]any{"TOKEN": "v", "REGION": "fsn1"}, "timeout": "90s"}}
	if err := ValidateProvider(good); err != nil {
		t.Fatal(err)
	}
	m := MaskProvider(good)
	env := m.Config["env"].(map[string]any)
	if env["TOKEN"] != "****" || env["REGION"] != "****" || good.Config["env"].(map[string]any)["REGION"] != "fsn1" {
		t.Errorf("masked = %v (the original must stay intact: %v)", m.Config, good.Config)
	}
	if err := ValidateProvider(store.CloudProvider{Name: "l", Kind: KindLocal, Config: map[string]any{"dir": "rel"}}); err == nil {
		t.Error("a relative local dir was accepted")
	}
	if err := ValidateProfile(store.CloudProfile{Name: "p", Spec: map[string]any{"rootfs": "/r", "extra": 1}}, KindLocal); err == nil {
		t.Error("an unknown key of a local spec was accepted")
	}
	if err := ValidateProfile(store.CloudProfile{Name: "p", Spec: map[string]any{"anything": 1}}, KindExec); err != nil {
		t.Errorf("an exec profile's spec is the provider's business: %v", err)
	}
}
