package auth

import (
	"slices"

	"github.com/soulstack/soulstack/internal/domain"
)

// Permission is one thing an Archon may be allowed to do (issue 34). A
// role is a set of permissions; a grant gives a role on a scope.
type Permission string

// The permissions. Every API route declares the one it needs
// (internal/api's route table); docs/access.md lists which routes need
// which.
const (
	// PermAuthenticated is no permission at all: any authenticated Archon
	// may call the route (whoami, its own tokens, lists that show only
	// what the caller may read).
	PermAuthenticated Permission = ""

	PermRead              Permission = "read"               // see souls, services, incarnations, runs, procedures, …
	PermRun               Permission = "run"                // start a scenario run
	PermCheckRun          Permission = "check_run"          // start a check-mode run, a drift check, edit drift schedules
	PermUnlock            Permission = "unlock"             // unlock an error_locked incarnation
	PermResume            Permission = "resume"             // resume a failed run
	PermCancel            Permission = "cancel"             // cancel a run
	PermUpgrade           Permission = "upgrade"            // move an incarnation to another ref
	PermCreateIncarnation Permission = "create_incarnation" // create an incarnation (on its service), change its members
	PermDeleteIncarnation Permission = "delete_incarnation" // delete an incarnation
	PermRegisterService   Permission = "register_service"   // register, update, delete services
	PermReadSecrets       Permission = "read_secrets"       // list secret names (never values)
	PermManageSecrets     Permission = "manage_secrets"     // set, delete secrets
	PermManageSouls       Permission = "manage_souls"       // accept, reject, delete, rekey souls, edit covens, join tokens
	PermManageProcedures  Permission = "manage_procedures"  // put, delete procedures; create, delete schedules
	PermExecuteProcedures Permission = "execute_procedures" // execute procedures, cancel Checker tasks
	PermPauseRules        Permission = "pause_rules"        // pause and resume rules
	PermReadAudit         Permission = "read_audit"         // read the audit log
	PermOwnTokens         Permission = "own_tokens"         // mint and revoke one's own API tokens
	PermManageKeeper      Permission = "manage_keeper"      // cloud providers and profiles, keeper rules, notification endpoints
	PermManageAccess      Permission = "manage_access"      // archons, others' tokens, teams, roles, grants
)

// PermissionInfo describes a permission for documentation and the CLI.
type PermissionInfo struct {
	Name        Permission `json:"name"`
	Description string     `json:"description"`
}

// Permissions lists every permission with what it allows.
var Permissions = []PermissionInfo{
	{PermRead, "see souls, services, incarnations, runs, history, health, procedures, tasks, schedules, rules"},
	{PermRun, "start a scenario run"},
	{PermCheckRun, "start a check-mode run or a drift check; set drift schedules"},
	{PermUnlock, "unlock an error_locked incarnation"},
	{PermResume, "resume a failed run"},
	{PermCancel, "cancel a run"},
	{PermUpgrade, "upgrade an incarnation to another ref of its service"},
	{PermCreateIncarnation, "create an incarnation of a service; add and remove its members"},
	{PermDeleteIncarnation, "delete an incarnation"},
	{PermRegisterService, "register, update and delete services"},
	{PermReadSecrets, "list secret names, owners and scopes (never values)"},
	{PermManageSecrets, "set and delete secrets"},
	{PermManageSouls, "accept, reject, delete and rekey souls; edit covens; create join tokens"},
	{PermManageProcedures, "put and delete Checker procedures; create and delete schedules"},
	{PermExecuteProcedures, "execute procedures; cancel Checker tasks"},
	{PermPauseRules, "pause and resume rules"},
	{PermReadAudit, "read the audit log"},
	{PermOwnTokens, "mint and revoke one's own API tokens"},
	{PermManageKeeper, "cloud providers and profiles, Keeper-wide rules, notification endpoints"},
	{PermManageAccess, "archons, other Archons' tokens, teams, custom roles and grants"},
}

// ParsePermission validates s as a permission.
func ParsePermission(s string) (Permission, error) {
	for _, p := range Permissions {
		if string(p.Name) == s {
			return p.Name, nil
		}
	}
	return "", domain.Errorf(domain.CodeInvalid, "unknown permission %q: see `soulctl access permissions` or docs/access.md", s)
}

// builtinRoles are the built-in roles as sets of permissions. admin,
// operator and viewer are exactly the powers those roles had before
// permissions existed (a test pins every route against that matrix).
var builtinRoles = map[Role][]Permission{
	RoleViewer:  {PermRead},
	RoleAuditor: {PermRead, PermReadAudit},
	RoleOperator: {
		PermRead, PermReadSecrets, PermRun, PermCheckRun, PermUnlock, PermResume, PermCancel,
		PermCreateIncarnation, PermDeleteIncarnation, PermManageProcedures, PermExecuteProcedures,
		PermPauseRules, PermOwnTokens,
	},
	RoleNone: {},
}

func init() {
	all := make([]Permission, 0, len(Permissions))
	for _, p := range Permissions {
		all = append(all, p.Name)
	}
	builtinRoles[RoleAdmin] = all
}

// BuiltinRole returns the permissions of a built-in role and whether name
// is one.
func BuiltinRole(name string) ([]Permission, bool) {
	ps, ok := builtinRoles[Role(name)]
	return slices.Clone(ps), ok
}

// BuiltinRoles lists the built-in roles' names, least privileged first.
func BuiltinRoles() []Role { return slices.Clone(Roles) }
