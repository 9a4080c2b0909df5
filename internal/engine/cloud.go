package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/soulstack/soulstack/internal/dispatch"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
	"github.com/soulstack/soulstack/internal/expr"
	"github.com/soulstack/soulstack/internal/store"
)

// CloudCall is one keeper-side cloud module call (core.cloud.created,
// core.cloud.absent, SPEC §10.6) with the incarnation it runs for.
type CloudCall struct {
	Module      string
	Params      map[string]any
	Incarnation string
	// Covens are the incarnation's covens (the new souls join with them).
	Covens []string
	Check  bool
	RunID  string
}

// CloudOutcome is a cloud call's result and the membership change it
// asks for: Join are SIDs that become members of the incarnation (their
// souls are connected), Leave SIDs that stop being members.
type CloudOutcome struct {
	Result domain.Result
	Join   []string
	Leave  []string
}

// Cloud runs the cloud modules for the engine (the keeper wires
// internal/cloud's Manager); nil fails them with a clear message.
type Cloud func(ctx context.Context, c CloudCall) CloudOutcome

// IsCloudModule reports the modules the engine hands to Config.Cloud.
func IsCloudModule(name string) bool {
	return name == "core.cloud.created" || name == "core.cloud.absent"
}

// cloud runs a cloud module call for this run's incarnation and applies
// the membership change it asks for: the store first, then this run's
// view, so the next task on sees the new members (incarnation.members,
// host_count, on:).
func (r *runner) cloud(ctx context.Context, w dispatch.Work) domain.Result {
	if r.e.cfg.Cloud == nil {
		return domain.Result{Failed: true, RC: -1, Msg: "this keeper runs no cloud providers (start it with a data dir so core.cloud.* can run)"}
	}
	start := time.Now()
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = r.e.cfg.DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := r.e.cfg.Cloud(cctx, CloudCall{
		Module: w.Call.Module, Params: w.Call.Params, Incarnation: r.inc.Name,
		Covens: slices.Clone(r.inc.Covens), Check: w.Check, RunID: r.run.ID,
	})
	res := out.Result
	if res.DurationMS == 0 {
		res.DurationMS = time.Since(start).Milliseconds()
	}
	if w.Check || (len(out.Join) == 0 && len(out.Leave) == 0) {
		return res
	}
	bg := context.WithoutCancel(ctx)
	if len(out.Join) > 0 {
		if err := r.e.cfg.Store.AddMembers(bg, r.inc.Name, out.Join); err != nil {
			res.Failed = true
			res.Msg = joinMsg(res.Msg, fmt.Sprintf("adding %v as members: %v", out.Join, err))
			return res
		}
	}
	if len(out.Leave) > 0 {
		if err := r.e.cfg.Store.RemoveMembers(bg, r.inc.Name, out.Leave); err != nil {
			res.Failed = true
			res.Msg = joinMsg(res.Msg, fmt.Sprintf("removing %v from the members: %v", out.Leave, err))
			return res
		}
	}
	if err := r.changeMembers(bg, out.Join, out.Leave); err != nil {
		res.Failed = true
		res.Msg = joinMsg(res.Msg, err.Error())
	}
	return res
}

func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// changeMembers updates the run's members, hosts and base activation.
// It runs while the keeper's step is the only work of the run.
func (r *runner) changeMembers(ctx context.Context, join, leave []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	set := map[string]bool{}
	for _, s := range r.members {
		set[s] = true
	}
	for _, s := range join {
		set[s] = true
	}
	for _, s := range leave {
		delete(set, s)
	}
	members := slices.Sorted(maps.Keys(set))
	souls, err := r.readMembers(ctx, members)
	if err != nil {
		return fmt.Errorf("reading the new members' soulprints: %w", err)
	}
	hosts := make(map[string]*host, len(members))
	sps := make([]map[string]any, 0, len(members))
	for _, s := range souls {
		facts := s.Facts()
		facts["sid"] = s.SID
		hosts[s.SID] = &host{sid: s.SID, covens: s.Covens, facts: facts}
	}
	for _, sid := range members {
		h := hosts[sid]
		if h == nil {
			h = &host{sid: sid, facts: map[string]any{"sid": sid}}
			hosts[sid] = h
		}
		sps = append(sps, h.facts)
	}
	ms := make([]any, len(members))
	for i, m := range members {
		ms[i] = m
	}
	inc := maps.Clone(r.base.Incarnation)
	inc["members"], inc["host_count"] = ms, int64(len(members))
	r.members, r.hosts = members, hosts
	r.base.Incarnation = inc
	r.base.Soulprint = expr.Soulprint{Hosts: sps, Members: sps}
	r.inc.Members = members
	return nil
}

// currentMembers returns the members as they are now (cloud steps change
// them during a run).
func (r *runner) currentMembers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.members
}

// provisions reports whether scenario sc creates hosts (a
// core.cloud.created step): its incarnation may start with no member.
func provisions(sc *dsl.Scenario) bool {
	var walk func([]*dsl.Task) bool
	walk = func(ts []*dsl.Task) bool {
		for _, t := range ts {
			if t.Module == "core.cloud.created" || walk(t.Block) {
				return true
			}
		}
		return false
	}
	return walk(sc.Tasks)
}

// notCloudMade drops from added the members that cloud instances of
// incarnation inc brought in: a run that provisioned hosts and then failed
// added them itself, so they do not stop its resume (SPEC §10.6: a resume
// adopts what was created).
func notCloudMade(ctx context.Context, st store.Store, inc string, added []string) ([]string, error) {
	if len(added) == 0 {
		return added, nil
	}
	list, err := st.ListCloudInstances(ctx, inc)
	if err != nil {
		return nil, fmt.Errorf("listing the cloud instances of %s: %w", inc, err)
	}
	made := map[string]bool{}
	for _, in := range list {
		made[in.SID] = true
	}
	var out []string
	for _, sid := range added {
		if !made[sid] {
			out = append(out, sid)
		}
	}
	return out, nil
}
