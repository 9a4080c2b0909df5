// Package uiseed fills a store with a large synthetic fleet for the UI's
// scale tests, its benchmark (bench/) and its screenshots: souls inserted
// directly through the store API (no soul runs), an incarnation over many
// of them and a finished run with per-host results.
package uiseed

import (
	"context"
	"fmt"
	"time"

	"github.com/soulstack/soulstack/internal/store"
)

// SID is the SID of the i-th soul of a Fleet.
func SID(i int) string { return fmt.Sprintf("host-%05d", i) }

// Fleet inserts n souls SID(0) … SID(n-1): covens "fleet" and dc1…dc4
// (i%4), os.family redhat for every third (debian otherwise), every
// tenth disconnected and every fiftieth pending, the rest connected.
func Fleet(ctx context.Context, st store.Store, n int, now time.Time) error {
	batch := make([]store.Soul, 0, 1000)
	for i := range n {
		status := store.SoulConnected
		switch {
		case i%50 == 0:
			status = store.SoulPending
		case i%10 == 0:
			status = store.SoulDisconnected
		}
		family := "debian"
		if i%3 == 0 {
			family = "redhat"
		}
		so := store.Soul{SID: SID(i), PublicKey: []byte("key-" + SID(i)), Status: status,
			Covens: []string{"fleet", fmt.Sprintf("dc%d", i%4+1)}, Version: "0.3.0",
			Soulprint: map[string]any{
				"os":      map[string]any{"family": family, "arch": "amd64"},
				"network": map[string]any{"primary_ip": fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)},
				"cpus":    4,
			},
			LastSeen: now.Add(-time.Duration(i%600) * time.Second), CreatedAt: now.Add(-time.Hour)}
		batch = append(batch, so)
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.UpsertSouls(ctx, batch); err != nil {
				return fmt.Errorf("souls up to %d: %w", i, err)
			}
			batch = batch[:0]
		}
	}
	return nil
}

// BigRun creates incarnation name over the souls SID(0) … SID(hosts-1)
// (its creation run committed) and a finished, failed rolling run "ID"
// over them: three tasks in waves of 100 hosts, the config task changing
// a file (with its diff) on every host, the restart failing on every
// 97th host, where the last task is then skipped. It returns the run's ID.
func BigRun(ctx context.Context, st store.Store, name string, hosts int, now time.Time) (string, error) {
	members := make([]string, hosts)
	for i := range members {
		members[i] = SID(i)
	}
	if _, err := st.GetService(ctx, "web"); err != nil {
		if err := st.CreateService(ctx, store.Service{Name: "web", Git: "file:///srv/git/web.git", Ref: "v1",
			Commit: "0123456789abcdef0123456789abcdef01234567", Description: "nginx with vhosts"}); err != nil {
			return "", fmt.Errorf("service: %w", err)
		}
	}
	create := name + "-create"
	if err := st.CreateIncarnation(ctx, store.Incarnation{Name: name, Service: "web", Ref: "v1",
		Commit: "0123456789abcdef0123456789abcdef01234567", Covens: []string{"fleet"}, Members: members},
		store.Run{ID: create, Scenario: "create", CreatedAt: now.Add(-2 * time.Hour)}); err != nil {
		return "", fmt.Errorf("incarnation: %w", err)
	}
	if err := st.CommitRun(ctx, create, map[string]any{"vhosts": []any{"a.example"}, "port": 80},
		store.Snapshot{}, now.Add(-2*time.Hour+time.Minute)); err != nil {
		return "", fmt.Errorf("commit create: %w", err)
	}
	id := name + "-rollout"
	if err := st.StartRun(ctx, store.Run{ID: id, Incarnation: name, Scenario: "rollout", CreatedAt: now.Add(-10 * time.Minute)}); err != nil {
		return "", fmt.Errorf("start run: %w", err)
	}
	if err := st.SetRunStatus(ctx, id, store.RunRunning, now.Add(-10*time.Minute)); err != nil {
		return "", err
	}
	var results []store.HostResult
	for i, sid := range members {
		wave := i/100 + 1
		at := now.Add(-10*time.Minute + time.Duration(wave)*time.Second)
		res := func(seq int, task, status string) store.HostResult {
			return store.HostResult{RunID: id, Seq: seq, Path: fmt.Sprint(seq), TaskName: task, SID: sid, Wave: wave,
				Status: status, Changed: status == "changed", DurationMS: int64(20 + i%50), StartedAt: at, FinishedAt: at.Add(time.Second)}
		}
		cfg := res(1, "render vhosts", "changed")
		cfg.Diff = fmt.Sprintf("--- /etc/nginx/sites-enabled/a.conf\n+++ /etc/nginx/sites-enabled/a.conf\n@@ -1,3 +1,3 @@\n server {\n-    listen 8080;\n+    listen 80;\n     server_name %s;\n", sid)
		cfg.Data = map[string]any{"path": "/etc/nginx/sites-enabled/a.conf"}
		results = append(results, cfg)
		if i%97 == 13 {
			r := res(2, "reload nginx", "failed")
			r.RC, r.Msg, r.Stderr = 1, "nginx: configuration test failed", "nginx: [emerg] unknown directive \"listn\""
			results = append(results, r, res(3, "smoke test", "skipped"))
			continue
		}
		results = append(results, res(2, "reload nginx", "changed"), res(3, "smoke test", "ok"))
	}
	for start := 0; start < len(results); start += 1000 {
		if err := st.RecordResults(ctx, results[start:min(start+1000, len(results))]); err != nil {
			return "", fmt.Errorf("results: %w", err)
		}
	}
	if err := st.FinishRun(ctx, id, store.RunFailed, `task "reload nginx" failed on some hosts`, now.Add(-5*time.Minute)); err != nil {
		return "", fmt.Errorf("finish run: %w", err)
	}
	return id, nil
}
