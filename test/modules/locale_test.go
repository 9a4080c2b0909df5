package modules

import (
	"strings"
	"testing"
)

// TestLocaleGeneratedOnLabHost: core.locale.generated (community.general.
// locale_gen) enables the locale's line in /etc/locale.gen and runs
// locale-gen: check mode changes nothing, a second run nothing either;
// absent comments it out and the locale is gone; a locale the host does
// not support is refused naming the param.
func TestLocaleGeneratedOnLabHost(t *testing.T) {
	h := host(t)
	sh(t, h, "apt-get update -q >/dev/null && apt-get install -y -q locales >/dev/null && mkdir -p /srv/loc")
	t.Cleanup(func() {
		sh(t, h, "sed -i 's/^de_DE.UTF-8 UTF-8/# de_DE.UTF-8 UTF-8/' /etc/locale.gen; locale-gen >/dev/null; rm -rf /srv/loc")
	})
	has := func() bool { return strings.Contains(sh(t, h, "locale -a"), "de_DE.utf8") }
	if has() {
		t.Fatal("setup: de_DE.utf8 is generated already")
	}
	task := func(state string) string {
		return "{name: t, module: core.locale.generated, params: {name: de_DE.UTF-8, state: " + state + "}}"
	}
	converge(t, h, "/srv/loc/present", task("present"), "/etc/locale.gen")
	if !has() {
		t.Fatalf("de_DE.utf8 not generated: %s", sh(t, h, "locale -a"))
	}
	if got := sh(t, h, "grep -c '^de_DE.UTF-8 UTF-8$' /etc/locale.gen"); got != "1\n" {
		t.Errorf("/etc/locale.gen enables it %q times", got)
	}
	converge(t, h, "/srv/loc/absent", task("absent"), "/etc/locale.gen")
	if has() {
		t.Fatal("de_DE.utf8 still generated after absent")
	}
	wantRefused(t, h, "/srv/loc/bad", `{name: t, module: core.locale.generated, params: {name: "${ 'xx_YY.UTF-8' }"}}`, "core.locale.generated", "name")
}
