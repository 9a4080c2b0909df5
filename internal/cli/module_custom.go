package cli

import (
	"fmt"
	"os"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/module/custom"
)

// serviceModules loads the custom modules of the service repository repo
// ("" = none); a module with problems is an error naming file and line.
func serviceModules(repo string) (map[string]*custom.Module, error) {
	if repo == "" {
		return nil, nil
	}
	st, err := os.Stat(repo)
	if err != nil || !st.IsDir() {
		return nil, cmdutil.Usage(fmt.Errorf("--service %s: not a service repository directory", repo))
	}
	mods, problems := dsl.LoadModules(os.DirFS(repo))
	if len(problems) > 0 {
		return nil, cmdutil.Usage(fmt.Errorf("custom modules of %s:\n%v", repo, problems))
	}
	return mods, nil
}

// customDoc describes a custom module: its schema, plus how it behaves in
// check mode (as it declares), its bounds and its description.
func customDoc(m *custom.Module) ModuleDoc {
	d := moduleDoc(m.Name(), m.Schema())
	d.Flags = append(d.Flags, flagCustom)
	d.Description = m.Spec.Description
	d.Timeout = m.Spec.Timeout.String()
	d.MaxOutput = m.Spec.MaxOutput
	if m.Spec.CheckMode {
		d.CheckMode = "runs with check: true in its request (it declares check_mode: true): reports what it would change, changes nothing"
	} else {
		d.CheckMode = "not run: reported unknown (\"would run\"); declare check_mode: true in module.yml once the program honours check: true"
	}
	d.Confinement = "the program runs as the soul's user; under a soul's --root what it does is not confined"
	return d
}
