package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soulstack/soulstack/internal/apiclient"
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/cmdutil"
)

func resumeRun(ctx context.Context, cl *apiclient.Client, id string, req apitypes.ResumeRequest) (raw[accepted], error) {
	return call[accepted](ctx, cl, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/resume", nil, req)
}

// newRunResumeCmd is `soulctl run resume`: SPEC §8.8.
func newRunResumeCmd(g *Globals) *cobra.Command {
	var (
		id, reason, input string
		ff                followFlags
	)
	c := &cobra.Command{
		Use:   "resume [apply-id] --reason TEXT [--input JSON] [--wait|--watch]",
		Short: "Resume a failed, cancelled or aborted run where it stopped",
		Long: `Starts a new run (resumed_from the old one) of the same scenario, input and
commit on the error_locked incarnation, unlocking it (the reason is
audited). Tasks that finished on every host are not run again — their
recorded results fill register — except read-only probes (changed_when:
false), which run again first; execution restarts at the first task that
did not finish everywhere, for a serial: task at its first unfinished wave.
The state commits only if everything, old and new, succeeded. Refused when
the service commit or the members changed since, or when the run is not
the incarnation's last run. --input gives again the values of secret
inputs (the run stored them masked); nothing else can change.`,
		Example: `  soulctl run resume 7f0c… --reason "replaced the disk of web-3" --watch`,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rid, cl, err := g.nameAndClient(cmd, args, id, "id")
			if err != nil {
				return err
			}
			if strings.TrimSpace(reason) == "" {
				return cmdutil.Usage(errors.New("--reason is required: say why the hosts may be trusted again (it is audited)"))
			}
			req := apitypes.ResumeRequest{Reason: reason}
			if req.Input, err = jsonObject(g, "input", input); err != nil {
				return err
			}
			acc, err := resumeRun(cmd.Context(), cl, rid, req)
			if err != nil {
				return err
			}
			if !ff.any() {
				if ff.printID(g, cmd, acc.View.ApplyID) {
					return nil
				}
				return g.Emit(cmd, acc.JSON, func(w io.Writer) error {
					return startedLines(w, "resume of run "+rid, acc.View.ApplyID)
				})
			}
			r, err := g.awaitRun(cmd, cl, acc.View.ApplyID, ff.watch, ff.timeout)
			if err != nil {
				return err
			}
			if ff.printID(g, cmd, acc.View.ApplyID) {
				return runOutcome(r.View)
			}
			if err := g.emitFollowed(cmd, r, ff.watch); err != nil {
				return err
			}
			return runOutcome(r.View)
		},
	}
	addNameFlag(c, &id, "id", "apply_id of the run to resume")
	c.Flags().StringVar(&reason, "reason", "", "why the hosts may be trusted again (required, audited)")
	c.Flags().StringVar(&input, "input", "", "the secret inputs given again: JSON object or @file")
	ff.register(c)
	return c
}
