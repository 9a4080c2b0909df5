package soulcmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/cmdutil"
	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/executor"
	"github.com/soulstack/soulstack/internal/soul"
)

func init() { subcommands = append(subcommands, newApplyCmd) }

// applyTask is one line of `soul apply --local -o json`.
type applyTask struct {
	Name    string `json:"name"`
	Module  string `json:"module"`
	Status  string `json:"status"`
	Changed bool   `json:"changed"`
	Failed  bool   `json:"failed"`
	RC      int    `json:"rc"`
	Stdout  string `json:"stdout"`
	Stderr  string `json:"stderr"`
	Msg     string `json:"msg,omitempty"`
	Diff    string `json:"diff"`
}

// newApplyCmd is `soul apply --local <destiny-dir>`: run a destiny on this
// host without a Keeper, like salt-call --local.
func newApplyCmd() *cobra.Command {
	var (
		local             bool
		inputJSON         string
		check             bool
		output, sid, root string
		dataDir, modsDir  string
	)
	c := &cobra.Command{
		Use:   "apply --local <destiny-dir>",
		Short: "Run a destiny on this host without a Keeper",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if !local {
				return cmdutil.Usage(fmt.Errorf("only --local is supported: souls receive work from their Keeper with `soul run`"))
			}
			if output != "json" && output != "table" {
				return cmdutil.Usage(fmt.Errorf("--output must be table or json, not %q", output))
			}
			var input map[string]any
			if inputJSON != "" {
				if err := json.Unmarshal([]byte(inputJSON), &input); err != nil {
					return cmdutil.Usage(fmt.Errorf("--input is not a JSON object: %w", err))
				}
			}
			dir := filepath.Clean(args[0])
			files, err := executor.ReadDir(dir)
			if err != nil {
				return cmdutil.Usage(fmt.Errorf("reading destiny %s: %w", dir, err))
			}
			mods, err := localModules(dir, modsDir, c.Flags().Changed("modules"))
			if err != nil {
				return cmdutil.Usage(err)
			}
			facts, err := soul.CollectFacts(soul.FactsOptions{SID: sid, Root: root})
			if err != nil {
				return cmdutil.Failed(fmt.Errorf("collecting facts: %w", err))
			}
			runner := &soul.ModuleRunner{Root: root, Facts: func() map[string]any { return facts }}
			name := filepath.Base(dir)
			res := executor.RunBundle(c.Context(), &dispatch.Bundle{Destiny: name, Files: files, Input: input, Modules: mods}, facts,
				executor.Options{Check: check, Call: executor.CallerFor(runner)})
			recordApply(c, dataDir, root, check, name, res)
			if output == "json" {
				err = writeApplyJSON(c.OutOrStdout(), res)
			} else {
				err = writeApplyTable(c.OutOrStdout(), name, res)
			}
			if err != nil {
				return err
			}
			if res.Failed {
				return &cmdutil.ExitError{Code: cmdutil.ExitFailed, Err: fmt.Errorf("destiny %s failed: %s", name, res.Msg)}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&local, "local", false, "run locally without a Keeper (required)")
	c.Flags().StringVar(&inputJSON, "input", "", "destiny input as a JSON object")
	c.Flags().BoolVar(&check, "check", false, "check mode: report what would change, change nothing")
	c.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	c.Flags().StringVar(&sid, "sid", "", "soul identity (default: the host's FQDN)")
	c.Flags().StringVar(&root, "root", "", "confine file modules to this directory")
	c.Flags().StringVar(&modsDir, "modules", "", "the service repository whose modules/<name>/ the destiny calls as service.<name> (default: the repository around <destiny-dir> when it is destiny/<name> of one)")
	c.Flags().StringVar(&dataDir, "data-dir", defaultSoulDataDir, "where the local task record (tasks.log) is kept; written when running as root without --root, or when this flag is given")
	return c
}

// localModules loads the custom modules of the repository repo (or, when
// not given, of the repository around dir when dir is destiny/<name> of
// one and has modules/), wired as a bundle carries them.
func localModules(dir, repo string, given bool) (map[string]*dispatch.CustomModule, error) {
	if !given {
		parent := filepath.Dir(dir)
		if filepath.Base(parent) != "destiny" {
			return nil, nil
		}
		repo = filepath.Dir(parent)
		if st, err := os.Stat(filepath.Join(repo, "modules")); err != nil || !st.IsDir() {
			return nil, nil
		}
	}
	mods, problems := dsl.LoadModules(os.DirFS(repo))
	if len(problems) > 0 {
		return nil, fmt.Errorf("custom modules of %s:\n%v", repo, problems)
	}
	return executor.WireAll(mods), nil
}

// flatten lists a destiny's tasks with block children inline.
func flatten(prefix string, ts []domain.TaskResult) []applyTask {
	var out []applyTask
	for _, t := range ts {
		name := t.Name
		if prefix != "" {
			name = prefix + " / " + name
		}
		if t.Module == "" && len(t.Tasks) > 0 {
			out = append(out, flatten(name, t.Tasks)...)
			continue
		}
		out = append(out, applyTask{Name: name, Module: t.Module, Status: string(t.Status()), Changed: t.Changed,
			Failed: t.Failed, RC: t.RC, Stdout: t.Stdout, Stderr: t.Stderr, Msg: t.Msg, Diff: t.Diff})
	}
	return out
}

func writeApplyJSON(w io.Writer, res domain.Result) error {
	out := struct {
		Tasks  []applyTask    `json:"tasks"`
		Output map[string]any `json:"output"`
		Failed bool           `json:"failed"`
		Msg    string         `json:"msg,omitempty"`
	}{Tasks: flatten("", res.Tasks), Output: res.Output, Failed: res.Failed, Msg: res.Msg}
	if out.Tasks == nil {
		out.Tasks = []applyTask{}
	}
	if out.Output == nil {
		out.Output = map[string]any{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeApplyTable(w io.Writer, name string, res domain.Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tMODULE\tSTATUS\tMSG")
	changed, failedN := 0, 0
	tasks := flatten("", res.Tasks)
	for _, t := range tasks {
		msg := strings.SplitN(t.Msg, "\n", 2)[0]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Module, t.Status, msg)
		if t.Changed {
			changed++
		}
		if t.Failed {
			failedN++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "destiny %s: %d tasks, %d changed, %d failed\n", name, len(tasks), changed, failedN)
	return err
}

// defaultSoulDataDir is the data dir of a soul installed on a host.
const defaultSoulDataDir = "/var/lib/soulstack/soul"

// recordApply appends the tasks a local apply ran to the soul's local
// record (SPEC §10.3), as `soul run` does: by default only when the soul
// acts as root on the host itself (root, no --root). A record that cannot
// be written is a warning: the tasks already ran.
func recordApply(c *cobra.Command, dataDir, root string, check bool, name string, res domain.Result) {
	if !c.Flags().Changed("data-dir") && (os.Geteuid() != 0 || root != "") {
		return
	}
	journal := ""
	if root == "" && soul.SystemdBooted() {
		journal = soul.JournalSocket
	}
	l, err := soul.OpenTaskLog(filepath.Join(dataDir, soul.TaskLogFile), soul.TaskLogOptions{Journal: journal})
	if err == nil {
		w := dispatch.Work{RunID: "local", Task: "apply --local " + name, Check: check, Bundle: &dispatch.Bundle{Destiny: name}}
		err = l.Record(w, res, time.Now())
		if cerr := l.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(c.ErrOrStderr(), "warning: could not write the local task record in %s: %v\n", dataDir, err)
	}
}
