package ansibleimport

import (
	"fmt"
	"sort"
	"strings"
)

// moduleInto says, for the docs, what each entry of moduleTable becomes.
var moduleInto = map[string]string{
	"template":        "`core.file.rendered` (Jinja engine; `src` from the role's templates/)",
	"copy":            "`core.file.copied` (`src` from files/, or `remote_src`), `core.file.present` with `content`",
	"file":            "by `state`: `core.file.directory`, `core.file.absent`, `core.file.link` (also `hard`), `core.file.touched`",
	"lineinfile":      "`core.file.line`",
	"blockinfile":     "`core.file.block`",
	"replace":         "`core.file.replace`",
	"apt":             "`core.pkg.installed` (`latest`), `core.pkg.removed`",
	"package":         "`core.pkg.installed`, `core.pkg.removed` (apt or dnf by the host's family)",
	"dnf":             "`core.pkg.installed`, `core.pkg.removed`",
	"yum":             "`core.pkg.installed`, `core.pkg.removed`",
	"service":         "`core.service.state`",
	"systemd":         "`core.service.state`",
	"systemd_service": "`core.service.state`",
	"command":         "`core.exec.run` with `cmd` and `args` (no shell, as Ansible's command)",
	"shell":           "`core.cmd.shell`",
	"user":            "`core.user.present`, `core.user.absent`",
	"group":           "`core.group.present`, `core.group.absent`",
	"cron":            "`core.cron.present` (the five fields joined into `schedule`)",
	"sysctl":          "`core.sysctl.present`",
	"mount":           "`core.mount.mounted`",
	"authorized_key":  "`core.ssh.authorized_key`",
	"hostname":        "`core.system.hostname`",
	"timezone":        "`core.system.timezone`",
	"get_url":         "`core.file.downloaded` (a literal `sha256:` checksum)",
	"unarchive":       "`core.archive.extracted`",
	"debug":           "`core.test.echo`",
	"fail":            "`core.test.fail`",
	"assert":          "`core.test.fail` with `when:` the negated `that:`",
	"wait_for":        "`core.wait.port`, `core.wait.file`",
	"stat":            "`core.file.stat` (`result.stat.x` reads `register.result.x`)",
	"reboot":          "`core.system.rebooted`",
	"ping":            "`core.test.ping`",
	"pause":           "`core.test.sleep` (a pause that prompts is manual)",
	"ini_file":        "`core.file.ini`",
	"git":             "`core.git` (go-git: no git program on the host)",
}

// Reference writes the Markdown tables of the import's mappings: task
// keywords, modules and facts. docs/ansible.md holds it between markers,
// kept current by a test.
func Reference() string {
	var b strings.Builder
	b.WriteString("### Modules\n\nEvery other module becomes a `core.exec.run` placeholder that fails validation at its line (manual). An argument a module here does not take is reported, never dropped.\n\n| Ansible module | Soul Stack |\n|---|---|\n")
	for _, m := range ModuleTable() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", m, moduleInto[m])
	}
	b.WriteString("\n### Facts\n\nRead as `ansible_<name>`, `ansible_facts.<name>` or `ansible_facts['<name>']`. A string compared with a fact whose values Soul Stack spells differently is rewritten (`ansible_os_family == \"Debian\"` → `soulprint.self.os.family == \"debian\"`).\n\n| Ansible fact | soulprint | values | what is lost |\n|---|---|---|---|\n")
	for _, f := range FactTable() {
		cel := "—"
		if f.CEL != "" {
			cel = "`" + f.CEL + "`"
		}
		vals := ""
		if f.Values != nil {
			vals = valuesDoc(f)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Ansible, cel, vals, f.Lost)
	}
	return b.String()
}

// valuesDoc lists the value rewrites of a fact by probing the known values.
func valuesDoc(f Fact) string {
	var out []string
	for _, v := range []string{"Debian", "Ubuntu", "RedHat", "CentOS", "Rocky", "AlmaLinux", "Fedora", "Amazon", "OracleLinux", "Suse", "SLES", "openSUSE Leap", "Archlinux", "Alpine", "Linux Mint", "Kali", "x86_64", "aarch64", "systemd", "sysvinit", "service"} {
		if w, ok := f.Values(v); ok {
			out = append(out, fmt.Sprintf("%s → %s", v, w))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
