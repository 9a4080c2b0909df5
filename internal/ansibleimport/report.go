package ansibleimport

import (
	"bytes"
	"fmt"
	"strings"
)

// report writes IMPORT.md: one row per upstream task, exact, approximated
// (with what is lost) or manual (with why), file:line on both sides.
func (im *Import) report(r *Role) []byte {
	var b bytes.Buffer
	n := im.Counts()
	total := len(im.Rows)
	fmt.Fprintf(&b, "# Import of the Ansible role %s\n\n", r.Name)
	fmt.Fprintf(&b, "Made by `soulctl import ansible` (offline, deterministic). %d upstream tasks: **%d exact**, %d approximated, %d manual",
		total, n[Exact], n[Approximated], n[Manual])
	if total > 0 {
		fmt.Fprintf(&b, " (%.0f %% exact)", 100*float64(n[Exact])/float64(total))
	}
	b.WriteString(".\n\n")
	b.WriteString("- **exact**: the task does here what it did in Ansible.\n")
	b.WriteString("- **approximated**: it nearly does; the notes say what is lost. The task carries an `# import: approximated` comment.\n")
	b.WriteString("- **manual**: a person must decide. The task carries a `# TODO(import)` comment and fails `soulctl scenario validate` at its line until then.\n\n")
	b.WriteString("The role's variables keep their names: the destiny's tasks run in one block whose `vars:` give them (defaults come from the destiny's typed `input:`, fed from `essence/_default.yaml` by `scenario/create`), so templates read them unchanged.\n\n")
	for _, note := range im.notes {
		fmt.Fprintf(&b, "- Note: %s\n", note)
	}
	if len(im.notes) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("| upstream | output | task | module | into | fidelity | notes |\n|---|---|---|---|---|---|---|\n")
	for _, row := range im.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", row.Upstream, row.Output, cell(row.Name), row.Module, row.Into, row.Fidelity, cell(strings.Join(row.Notes, "; ")))
	}
	return b.Bytes()
}

func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
