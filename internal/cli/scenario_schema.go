package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/editorschema"
)

func init() {
	scenarioSubcommands = append(scenarioSubcommands, newScenarioSchemaCmd)
}

func newScenarioSchemaCmd(g *Globals) *cobra.Command {
	var url, print string
	c := &cobra.Command{
		Use:   "schema [<repo-dir>]",
		Short: "Give a service repository's files the JSON Schemas editors complete and check them with",
		Long: `Writes the editor schemas (JSON Schema of service.yml, scenario and destiny
main.yml, included task files, essence, health checks and rules, built from
the validator's own definitions and the modules' params) into
<repo-dir>/.soulstack/schemas/, and puts a modeline on the first line of each
of those files:

  # yaml-language-server: $schema=../../.soulstack/schemas/scenario.schema.json

Editors using the YAML language server (VS Code with redhat.vscode-yaml,
Neovim, Helix, …) then complete keys, module names and each module's params,
and mark mistakes as you type. Running it again updates the schemas and
leaves files with the right modeline alone.

With --url the modelines name <url><file> instead (for example the published
https://raw.githubusercontent.com/soulstack/soulstack/main/docs/schemas/) and
nothing is written under .soulstack/. With --print KIND one schema is printed
(service, scenario, destiny, tasks, essence, health, rule, procedure) and no
file is touched. Works offline.`,
		Example: `  soulctl scenario schema ./my-service
  soulctl scenario schema ./my-service --url https://raw.githubusercontent.com/soulstack/soulstack/main/docs/schemas/
  soulctl scenario schema --print procedure > procedure.schema.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.capture {
				return errLocalFiles("scenario schema")
			}
			return runScenarioSchema(cmd.OutOrStdout(), args, url, print)
		},
	}
	c.Flags().StringVar(&url, "url", "", "point the modelines at this base URL instead of writing the schemas into the repository")
	c.Flags().StringVar(&print, "print", "", "print the schema of this kind (service, scenario, destiny, tasks, essence, health, rule, procedure) and touch no file")
	return c
}

func runScenarioSchema(out io.Writer, args []string, url, print string) error {
	if print != "" {
		if len(args) > 0 || url != "" {
			return cmdutil.Usage(errors.New("--print takes no repository and no --url"))
		}
		d, err := editorschema.Lookup(print)
		if err != nil {
			return cmdutil.Usage(err)
		}
		_, err = out.Write(d.JSON)
		return err
	}
	if len(args) != 1 {
		return cmdutil.Usage(errors.New("give the service repository directory (or --print KIND)"))
	}
	changes, err := editorschema.WriteModelines(args[0], url)
	if err != nil {
		return cmdutil.Usage(err)
	}
	if url == "" {
		fmt.Fprintf(out, "schemas written to %s\n", editorschema.LocalDir)
	}
	for _, c := range changes {
		fmt.Fprintf(out, "%s: $schema=%s\n", c.File, c.URL)
	}
	fmt.Fprintf(out, "%s set\n", plural(len(changes), "modeline"))
	return nil
}
