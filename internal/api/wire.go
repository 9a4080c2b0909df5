package api

import (
	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/store"
)

// The handlers answer with apitypes resources, never store records: these
// copy field by field, so a field added to a store record reaches the API
// only when it is added here and in apitypes (and the OpenAPI document).

// wireList converts a list, never nil (an empty list is [] on the wire).
func wireList[S, W any](xs []S, conv func(S) W) []W {
	out := make([]W, len(xs))
	for i, x := range xs {
		out[i] = conv(x)
	}
	return out
}

func wireArchon(a store.Archon) apitypes.Archon {
	return apitypes.Archon{ID: a.ID, Name: a.Name, Role: a.Role, CreatedAt: a.CreatedAt, DisabledAt: a.DisabledAt}
}

func wireToken(t store.Token) apitypes.Token {
	return apitypes.Token{ID: t.ID, ArchonID: t.ArchonID, Description: t.Description, ExpiresAt: t.ExpiresAt,
		RevokedAt: t.RevokedAt, CreatedAt: t.CreatedAt, ParentID: t.ParentID}
}

func wireAudit(e store.AuditEntry) apitypes.AuditEntry {
	return apitypes.AuditEntry{ID: e.ID, Time: e.Time, ArchonID: e.ArchonID, Action: e.Action, Target: e.Target, Summary: e.Summary}
}

func wireSoul(s store.Soul) apitypes.Soul {
	return apitypes.Soul{SID: s.SID, PublicKey: s.PublicKey, Status: s.Status, Covens: s.Covens, Soulprint: s.Soulprint,
		Version: s.Version, KeeperID: s.KeeperID, LastSeen: s.LastSeen, CreatedAt: s.CreatedAt}
}

func wireJoinToken(t store.JoinToken) apitypes.JoinToken {
	return apitypes.JoinToken{ID: t.ID, Covens: t.Covens, ExpiresAt: t.ExpiresAt, CreatedBy: t.CreatedBy,
		CreatedAt: t.CreatedAt, Uses: t.Uses, MaxUses: t.MaxUses, RevokedAt: t.RevokedAt}
}

func wireService(s store.Service) apitypes.Service {
	return apitypes.Service{Name: s.Name, Git: s.Git, Ref: s.Ref, Commit: s.Commit, Description: s.Description,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func wireIncarnation(i store.Incarnation) apitypes.Incarnation {
	return apitypes.Incarnation{Name: i.Name, Service: i.Service, Ref: i.Ref, Commit: i.Commit, Covens: i.Covens,
		Input: i.Input, Essence: i.Essence, Status: i.Status, State: i.State, ActiveRun: i.ActiveRun,
		LockReason: i.LockReason, Members: i.Members, CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt}
}

func wireRun(r store.Run) apitypes.Run {
	return apitypes.Run{ID: r.ID, Incarnation: r.Incarnation, Scenario: r.Scenario, Input: r.Input, Check: r.Check,
		Status: r.Status, Error: r.Error, ArchonID: r.ArchonID, KeeperID: r.KeeperID, ResumedFrom: r.ResumedFrom,
		Commit: r.Commit, Members: r.Members, UpgradeRef: r.UpgradeRef, Drift: r.Drift, ResultsPrunedAt: r.ResultsPrunedAt, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
}

// wireHostResult is nil for nil (run events without a result).
func wireHostResult(h *store.HostResult) *apitypes.HostResult {
	if h == nil {
		return nil
	}
	return &apitypes.HostResult{Seq: h.Seq, Path: h.Path, TaskName: h.TaskName, SID: h.SID, Wave: h.Wave,
		Status: h.Status, Changed: h.Changed, RC: h.RC, Stdout: h.Stdout, Stderr: h.Stderr, Msg: h.Msg,
		Diff: h.Diff, DurationMS: h.DurationMS, Data: h.Data, StartedAt: h.StartedAt, FinishedAt: h.FinishedAt}
}

func wireSnapshot(s store.Snapshot) apitypes.Snapshot {
	return apitypes.Snapshot{ID: s.ID, Incarnation: s.Incarnation, RunID: s.RunID, Scenario: s.Scenario,
		State: s.State, Summary: s.Summary, ResumedFrom: s.ResumedFrom, Results: s.Results, CreatedAt: s.CreatedAt}
}

// wireDrift is the wire form of an incarnation's drift record.
func wireDrift(d store.Drift) apitypes.Drift {
	out := apitypes.Drift{Incarnation: d.Incarnation}
	if d.Schedule != nil {
		out.Schedule = &apitypes.DriftSchedule{Scenario: d.Schedule.Scenario, Every: apitypes.Duration(d.Schedule.Every)}
	}
	if r := d.Report; r != nil {
		rep := &apitypes.DriftReport{RunID: r.RunID, Scenario: r.Scenario, Drifted: r.Drifted, Tasks: r.Tasks,
			Error: r.Error, CheckedAt: r.CheckedAt}
		if r.Hosts != nil {
			rep.Hosts = make(map[string]apitypes.DriftHost, len(r.Hosts))
			for sid, h := range r.Hosts {
				var tasks []apitypes.DriftTask
				for _, t := range h.Tasks {
					tasks = append(tasks, apitypes.DriftTask{Path: t.Path, Task: t.Task, Msg: t.Msg, Diff: t.Diff})
				}
				rep.Hosts[sid] = apitypes.DriftHost{Status: h.Status, Tasks: tasks, Msg: h.Msg}
			}
		}
		out.Report = rep
	}
	return out
}

func wireTrigger(t store.PendingTrigger) apitypes.Trigger {
	return apitypes.Trigger{Incarnation: t.Incarnation, Scenario: t.Scenario, Task: t.Task, SID: t.SID,
		RunID: t.RunID, CreatedAt: t.CreatedAt}
}

func wireProcedure(p store.Procedure) apitypes.Procedure {
	return apitypes.Procedure{Name: p.Name, Source: p.Source, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func wireCheckerTask(t store.CheckerTask) apitypes.CheckerTask {
	out := apitypes.CheckerTask{ID: t.ID, Procedure: t.Procedure, Vars: t.Vars, Status: t.Status, RunError: t.RunError,
		Message: t.Message, ParentID: t.ParentID, ScheduleID: t.ScheduleID, KeeperID: t.KeeperID,
		CreatedAt: t.CreatedAt, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
	for _, l := range t.Log {
		out.Log = append(out.Log, apitypes.CheckerLogLine{Time: l.Time, Step: l.Step, Kind: l.Kind, Message: l.Message, Data: l.Data})
	}
	return out
}

func wireSchedule(s store.Schedule) apitypes.Schedule {
	return apitypes.Schedule{ID: s.ID, Procedure: s.Procedure, Vars: s.Vars, Cron: s.Cron, OwnerID: s.OwnerID,
		Owner: s.Owner, Paused: s.Paused, PauseReason: s.PauseReason, CreatedAt: s.CreatedAt}
}

func wireSecret(s store.Secret, usedBy []string) apitypes.Secret {
	scope := s.ScopeKind
	if scope == "" || scope == store.ScopeKeeper {
		scope = store.ScopeKeeper
	} else {
		scope += ":" + s.Scope
	}
	return apitypes.Secret{Name: s.Name, Owner: s.Owner, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, UsedBy: usedBy, Scope: scope}
}

func wireCloudProvider(p store.CloudProvider) apitypes.CloudProvider {
	return apitypes.CloudProvider{Name: p.Name, Kind: p.Kind, Config: p.Config, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func wireCloudProfile(p store.CloudProfile) apitypes.CloudProfile {
	return apitypes.CloudProfile{Name: p.Name, Provider: p.Provider, Spec: p.Spec, Covens: p.Covens,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

func wireCloudInstance(i store.CloudInstance) apitypes.CloudInstance {
	return apitypes.CloudInstance{Provider: i.Provider, Name: i.Name, Incarnation: i.Incarnation, Profile: i.Profile,
		ID: i.ID, Address: i.Address, SID: i.SID, CreatedAt: i.CreatedAt}
}
