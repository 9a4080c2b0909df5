package cloud

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/store"
)

// created makes sure the wanted instances exist (idempotent by name):
// recorded ones are kept, ones recorded but never confirmed are looked up
// with the provider's list and adopted or created again, the missing ones
// are recorded first, then created, each with its own bootstrap. Then it
// waits until every instance's soul is connected; they join the
// incarnation.
func (m *Manager) created(ctx context.Context, c Call) (Outcome, error) {
	var out Outcome
	p, err := readParams(c.Params)
	if err != nil {
		return out, err
	}
	if p.profile == "" {
		return out, errors.New("profile is required")
	}
	t, err := m.target(ctx, c.Incarnation, p.provider, p.profile)
	if err != nil {
		return out, err
	}
	rec, err := m.recorded(ctx, c.Incarnation, p.provider)
	if err != nil {
		return out, err
	}
	names, err := wanted(p, c.Incarnation, rec)
	if err != nil {
		return out, err
	}
	var missing, unconfirmed []string
	for _, n := range names {
		in, ok := rec[n]
		switch {
		case !ok:
			missing = append(missing, n)
		case in.ID == "":
			unconfirmed = append(unconfirmed, n)
		}
	}
	if c.Check {
		res := &out.Result
		res.Changed = len(missing)+len(unconfirmed) > 0
		res.Data = map[string]any{"would_create": strSlice(append(slices.Clone(missing), unconfirmed...)), "instances": views(pick(rec, names))}
		res.Msg = fmt.Sprintf("would create %d instance(s) of profile %s: %s; %d exist already", len(missing)+len(unconfirmed), p.profile, dash(append(missing, unconfirmed...)), len(names)-len(missing)-len(unconfirmed))
		return out, nil
	}
	// Instances recorded earlier whose creation never answered: the
	// provider says whether they exist (adopt) or not (create again).
	if len(unconfirmed) > 0 {
		found, err := t.driver.List(ctx, t.request("list", unconfirmed))
		if err != nil {
			return out, fmt.Errorf("asking provider %s about instances created earlier without an answer (%s): %w", p.provider, strings.Join(unconfirmed, ", "), err)
		}
		for _, f := range found {
			in, ok := rec[f.Name]
			if !ok || in.ID != "" {
				continue
			}
			in.ID, in.Address = f.ID, f.Address
			if in.ID == "" {
				in.ID = f.Name
			}
			if err := m.Store.PutCloudInstance(ctx, in); err != nil {
				return out, err
			}
			rec[f.Name] = in
		}
		for _, n := range unconfirmed {
			if rec[n].ID == "" {
				missing = append(missing, n)
			}
		}
		slices.Sort(missing)
	}
	created, err := m.create(ctx, c, t, missing, rec)
	out.Result.Changed = len(created) > 0
	if err != nil {
		out.Result.Data = map[string]any{"instances": views(pick(rec, names)), "created": strSlice(created)}
		return out, err
	}
	if err := m.awaitSouls(ctx, names, rec); err != nil {
		out.Result.Data = map[string]any{"instances": views(pick(rec, names)), "created": strSlice(created)}
		return out, err
	}
	list := pick(rec, names)
	out.Result.Data = map[string]any{"instances": views(list), "created": strSlice(created)}
	if len(created) > 0 {
		out.Result.Msg = fmt.Sprintf("created %s; %d instance(s) of profile %s, every soul connected", strings.Join(created, ", "), len(names), p.profile)
	} else {
		out.Result.Msg = fmt.Sprintf("%d instance(s) of profile %s exist, every soul connected", len(names), p.profile)
	}
	for _, in := range list {
		out.Join = append(out.Join, in.SID)
	}
	return out, nil
}

// create records and creates the missing instances; it returns the names
// the provider created.
func (m *Manager) create(ctx context.Context, c Call, t target, missing []string, rec map[string]store.CloudInstance) ([]string, error) {
	if len(missing) == 0 {
		return nil, nil
	}
	keeperURL := ""
	if m.KeeperURL != nil {
		keeperURL = m.KeeperURL()
	}
	covens := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(c.Covens), t.prof.Covens...))))
	for _, n := range missing {
		if err := m.freeSID(ctx, n); err != nil {
			return nil, err
		}
		// Recorded before the provider is asked: a provider that hangs or
		// fails half-way leaves a record a re-run adopts, never an orphan.
		in := store.CloudInstance{Provider: t.prov.Name, Name: n, Incarnation: c.Incarnation, Profile: t.prof.Name, SID: n}
		if err := m.Store.PutCloudInstance(ctx, in); err != nil {
			return nil, fmt.Errorf("recording instance %s: %w", n, err)
		}
		rec[n] = in
	}
	var (
		mu      sync.Mutex
		created []string
	)
	errs := parallel(missing, func(n string) error {
		boot, err := m.newBootstrap(ctx, c.Incarnation, n, keeperURL, covens)
		if err != nil {
			return err
		}
		req := t.request("create", []string{n})
		req.Bootstrap = &boot
		got, err := t.driver.Create(ctx, req)
		if err != nil {
			return errors.New(mask(err.Error(), boot.JoinToken))
		}
		i := slices.IndexFunc(got, func(x Instance) bool { return x.Name == n })
		if i < 0 {
			// The token stays valid (one use, short TTL): had the
			// provider made the instance after all, a re-run adopts it
			// and its soul can still join.
			return fmt.Errorf("provider %s returned %d instance(s) for %s, none of that name", t.prov.Name, len(got), n)
		}
		mu.Lock()
		in := rec[n]
		mu.Unlock()
		in.ID, in.Address = got[i].ID, got[i].Address
		if in.ID == "" {
			in.ID = n
		}
		if err := m.Store.PutCloudInstance(context.WithoutCancel(ctx), in); err != nil {
			return err
		}
		mu.Lock()
		rec[n] = in
		created = append(created, n)
		mu.Unlock()
		return nil
	})
	slices.Sort(created)
	if len(errs) > 0 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(errs)) {
			parts = append(parts, n+": "+errs[n].Error())
		}
		return created, fmt.Errorf("creating %d of %d instance(s) failed (the instances are recorded: a re-run adopts or creates them again): %s", len(errs), len(missing), strings.Join(parts, "; "))
	}
	return created, nil
}

// freeSID makes room for a new instance's soul: a soul of that SID that is
// not connected (one of an earlier instance of that name) is forgotten,
// so the new host's key can take the SID; a connected one is a conflict.
func (m *Manager) freeSID(ctx context.Context, sid string) error {
	s, err := m.Store.GetSoul(ctx, sid)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return nil
	case err != nil:
		return err
	case s.Status == store.SoulConnected:
		return fmt.Errorf("a soul named %s is connected already: an instance cannot take its name (choose other names)", sid)
	}
	_, err = m.Store.DeleteSoul(ctx, sid)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	return err
}

// awaitSouls waits until the soul of every named instance is connected,
// or ctx ends (the task's timeout).
func (m *Manager) awaitSouls(ctx context.Context, names []string, rec map[string]store.CloudInstance) error {
	poll := m.Poll
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	start := time.Now()
	for {
		var waiting []string
		for _, n := range names {
			s, err := m.Store.GetSoul(ctx, rec[n].SID)
			if err != nil || s.Status != store.SoulConnected {
				waiting = append(waiting, n)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the souls of %s did not connect within %s (the instances are recorded: a re-run waits for them again)", strings.Join(waiting, ", "), time.Since(start).Round(time.Second))
		case <-time.After(poll):
		}
	}
}

// absent deletes the named instances of this incarnation (those not
// recorded are absent already) and forgets their souls.
func (m *Manager) absent(ctx context.Context, c Call) (Outcome, error) {
	var out Outcome
	p, err := readParams(c.Params)
	if err != nil {
		return out, err
	}
	if p.names == nil {
		return out, errors.New("names is required")
	}
	rec, err := m.recorded(ctx, c.Incarnation, p.provider)
	if err != nil {
		return out, err
	}
	var gone []string
	for _, n := range p.names {
		if _, ok := rec[n]; ok {
			gone = append(gone, n)
		}
	}
	slices.Sort(gone)
	out.Result.Changed = len(gone) > 0
	out.Result.Data = map[string]any{"deleted": strSlice(gone)}
	if c.Check {
		out.Result.Msg = "would delete " + dash(gone)
		return out, nil
	}
	if len(gone) == 0 {
		out.Result.Msg = "no such instance: nothing to delete"
		return out, nil
	}
	t, err := m.target(ctx, c.Incarnation, p.provider, "")
	if err != nil {
		return out, err
	}
	out.Leave, err = m.delete(ctx, t, gone, rec)
	out.Result.Msg = "deleted " + strings.Join(gone, ", ")
	return out, err
}

// delete deletes instances through the provider, then forgets them and
// their souls; it returns their SIDs.
func (m *Manager) delete(ctx context.Context, t target, names []string, rec map[string]store.CloudInstance) ([]string, error) {
	if err := t.driver.Delete(ctx, t.request("delete", names)); err != nil {
		return nil, err
	}
	var sids []string
	for _, n := range names {
		in := rec[n]
		if err := m.Store.DeleteCloudInstance(ctx, in.Provider, in.Name); err != nil {
			return sids, err
		}
		if in.SID != "" {
			if _, err := m.Store.DeleteSoul(ctx, in.SID); err != nil && !errors.Is(err, domain.ErrNotFound) {
				return sids, err
			}
			sids = append(sids, in.SID)
		}
	}
	return sids, nil
}

// Destroy deletes every instance recorded for incarnation inc (DELETE
// /v1/incarnations/{name}?destroy=true) and returns their names.
func (m *Manager) Destroy(ctx context.Context, inc string) ([]string, error) {
	list, err := m.Store.ListCloudInstances(ctx, inc)
	if err != nil {
		return nil, err
	}
	byProvider := map[string]map[string]store.CloudInstance{}
	for _, in := range list {
		if byProvider[in.Provider] == nil {
			byProvider[in.Provider] = map[string]store.CloudInstance{}
		}
		byProvider[in.Provider][in.Name] = in
	}
	var done []string
	for _, prov := range slices.Sorted(maps.Keys(byProvider)) {
		t, err := m.target(ctx, inc, prov, "")
		if err != nil {
			return done, err
		}
		names := slices.Sorted(maps.Keys(byProvider[prov]))
		if _, err := m.delete(ctx, t, names, byProvider[prov]); err != nil {
			return done, fmt.Errorf("deleting the instances of provider %s: %w", prov, err)
		}
		done = append(done, names...)
	}
	return done, nil
}

func pick(rec map[string]store.CloudInstance, names []string) []store.CloudInstance {
	var out []store.CloudInstance
	for _, n := range names {
		if in, ok := rec[n]; ok {
			out = append(out, in)
		}
	}
	return out
}

func strSlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func dash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}
