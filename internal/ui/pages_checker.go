package ui

import (
	"fmt"
	"net/http"

	"github.com/soulstack/soulstack/internal/store"
)

// tasksLimit is how many checker tasks a list shows.
const tasksLimit = 100

// checkerStatuses are the task statuses, for the list's filter.
var checkerStatuses = []string{"PENDING", "RUNNING", "SUCCESS", "FAILURE", "CANCELLED", "TIMEOUT"}

// taskFinished reports whether a checker task has reached a terminal status.
func taskFinished(t store.CheckerTask) bool {
	return t.Status != "" && t.Status != "PENDING" && t.Status != "RUNNING"
}

// proceduresView is the data of the procedures list.
type proceduresView struct {
	Procedures []store.Procedure
	Schedules  map[string]int // schedules per procedure
}

func (u *UI) procedures(r *http.Request) (view, error) {
	procs, err := u.store.ListProcedures(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("listing procedures: %w", err)
	}
	scheds, err := u.store.ListSchedules(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("listing schedules: %w", err)
	}
	pv := proceduresView{Procedures: procs, Schedules: map[string]int{}}
	for _, s := range scheds {
		pv.Schedules[s.Procedure]++
	}
	return view{Template: "procedures", Title: "Procedures", Nav: "procedures", Data: pv}, nil
}

// procedureView is the data of a procedure's page.
type procedureView struct {
	Procedure store.Procedure
	Tasks     []store.CheckerTask
	Schedules []store.Schedule
	Vars      []varField // public vars: the execute and schedule forms
	Act       actions
}

func (u *UI) procedure(r *http.Request) (view, error) {
	ctx := r.Context()
	name := r.PathValue("name")
	p, err := u.store.GetProcedure(ctx, name)
	if err != nil {
		return view{}, lookupErr(err, "procedure", name)
	}
	tasks, err := u.store.ListCheckerTasks(ctx, name, recentLimit)
	if err != nil {
		return view{}, fmt.Errorf("tasks of %s: %w", name, err)
	}
	scheds, err := u.store.ListSchedules(ctx)
	if err != nil {
		return view{}, fmt.Errorf("listing schedules: %w", err)
	}
	pv := procedureView{Procedure: p, Tasks: tasks, Vars: procedureVars(p), Act: u.actionsFor(r)}
	for _, s := range scheds {
		if s.Procedure == name {
			pv.Schedules = append(pv.Schedules, s)
		}
	}
	return view{Template: "procedure", Title: "Procedure " + name, Nav: "procedures", Data: pv}, nil
}

// tasksView is the data of the checker tasks list.
type tasksView struct {
	Tasks     []store.CheckerTask
	Procedure string
	Status    string
	Statuses  []string
}

func (u *UI) tasks(r *http.Request) (view, error) {
	q := r.URL.Query()
	tv := tasksView{Procedure: q.Get("procedure"), Status: q.Get("status"), Statuses: checkerStatuses}
	limit := tasksLimit
	if tv.Status != "" {
		limit = 0 // filter over every task of the procedure, then cut
	}
	all, err := u.store.ListCheckerTasks(r.Context(), tv.Procedure, limit)
	if err != nil {
		return view{}, fmt.Errorf("listing checker tasks: %w", err)
	}
	for _, t := range all {
		if tv.Status != "" && t.Status != tv.Status {
			continue
		}
		if len(tv.Tasks) == tasksLimit {
			break
		}
		tv.Tasks = append(tv.Tasks, t)
	}
	return view{Template: "tasks", Title: "Checker tasks", Nav: "tasks", Data: tv}, nil
}

// taskView is the data of a checker task's page and of its live fragment.
type taskView struct {
	Task store.CheckerTask
	Live bool
}

func (u *UI) loadTask(r *http.Request) (taskView, error) {
	id := r.PathValue("id")
	t, err := u.store.GetCheckerTask(r.Context(), id)
	if err != nil {
		return taskView{}, lookupErr(err, "checker task", id)
	}
	return taskView{Task: t, Live: !taskFinished(t)}, nil
}

func (u *UI) task(r *http.Request) (view, error) {
	tv, err := u.loadTask(r)
	if err != nil {
		return view{}, err
	}
	return view{Template: "task", Title: "Task " + tv.Task.ID, Nav: "tasks", Data: tv}, nil
}

// taskLive renders the refreshable part of the task page.
func (u *UI) taskLive(w http.ResponseWriter, r *http.Request) error {
	tv, err := u.loadTask(r)
	if err != nil {
		return err
	}
	return u.renderFragment(w, "task", "task-live", tv)
}

// schedulesView is the data of the schedules list.
type schedulesView struct {
	Schedules []store.Schedule
	Act       actions
}

func (u *UI) schedules(r *http.Request) (view, error) {
	s, err := u.store.ListSchedules(r.Context())
	if err != nil {
		return view{}, fmt.Errorf("listing schedules: %w", err)
	}
	return view{Template: "schedules", Title: "Schedules", Nav: "schedules", Data: schedulesView{Schedules: s, Act: u.actionsFor(r)}}, nil
}
