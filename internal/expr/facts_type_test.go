package expr

import "testing"

// TestFactShapeSecondSet: the facts of SPEC §9's second set are declared
// with their types, so a typo or a wrong operator is caught at load time.
func TestFactShapeSecondSet(t *testing.T) {
	env := ForKind(KindScenario)
	sc := &TypeScope{}
	for _, ok := range []string{
		`soulprint.self.memory_mb > 1024`,
		`soulprint.self.cpus >= 2`,
		`soulprint.self.virtualization == "none"`,
		`soulprint.self.mounts.exists(m, m.path == "/" && m.fstype == "ext4" && "ro" in m.options)`,
		`soulprint.self.os.distribution + "-" + soulprint.self.os.version + "-" + soulprint.self.os.codename`,
		`soulprint.self.init == "systemd"`,
		`soulprint.self.boot_id != ""`,
	} {
		if _, err := env.Compile(ok); err != nil {
			t.Fatalf("Compile(%s): %v", ok, err)
		}
		if _, err := env.TypeCheck(ok, sc); err != nil {
			t.Errorf("TypeCheck(%s): %v", ok, err)
		}
	}
	for _, bad := range []string{
		`soulprint.self.memory_mb + "MB"`,
		`soulprint.self.cpus == "2"`,
		`soulprint.self.mounts[0].path > 1`,
		`soulprint.self.virtualization > 1`,
	} {
		if _, err := env.Compile(bad); err != nil {
			t.Fatalf("Compile(%s): %v", bad, err)
		}
		_, err := env.TypeCheck(bad, sc)
		if err == nil {
			t.Errorf("TypeCheck(%s) accepted a type error", bad)
			continue
		}
		t.Logf("%s: %v", bad, err)
	}
}
