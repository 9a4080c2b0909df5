package cloud

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/soulstack/soulstack/internal/jointoken"
	"github.com/soulstack/soulstack/internal/store"
)

// Bootstrap is what a new instance needs to become a soul of this Keeper.
// JoinToken is secret: it is masked in every message the Manager writes.
type Bootstrap struct {
	// UserData is a cloud-init document: it sets the host name to the
	// instance name (the soul's SID) and runs Script.
	UserData string `json:"user_data"`
	// JoinToken is a one-time join token (one use, short TTL) carrying
	// the incarnation's and the profile's covens and the Keeper's
	// fingerprint.
	JoinToken string `json:"join_token"`
	// KeeperURL is the URL the instance reaches the Keeper at.
	KeeperURL string `json:"keeper_url"`
	// Script is the shell command of UserData that installs and starts
	// the soul (for providers that run commands rather than cloud-init).
	// It holds no token: it reads JoinToken from JoinTokenPath (write it
	// there first, mode 0600) and removes that file. A token on a command
	// line would be readable by every local user in the process list.
	Script string `json:"script"`
	// TLSPin is curl's --pinnedpubkey of the Keeper's certificate (for
	// providers that write their own install command).
	TLSPin string `json:"tls_pin,omitempty"`
}

// newBootstrap makes a one-time join token for instance name and the
// user-data installing the soul from keeperURL with it.
func (m *Manager) newBootstrap(ctx context.Context, inc, name, keeperURL string, covens []string) (Bootstrap, error) {
	secret, err := jointoken.NewSecret()
	if err != nil {
		return Bootstrap{}, err
	}
	now := m.now().Truncate(time.Second)
	jt := store.JoinToken{
		ID:         uuid.NewString(),
		SecretHash: jointoken.Hash(secret),
		Covens:     covens,
		ExpiresAt:  now.Add(m.tokenTTL()),
		CreatedBy:  "cloud:" + inc + "/" + name,
		CreatedAt:  now,
		MaxUses:    1,
	}
	if err := m.Store.CreateJoinToken(ctx, jt); err != nil {
		return Bootstrap{}, fmt.Errorf("creating the join token of %s: %w", name, err)
	}
	tok := jointoken.Encode(secret, m.Fingerprint)
	script := InstallScript(keeperURL, m.TLSPin)
	return Bootstrap{UserData: UserData(name, script, tok), JoinToken: tok, KeeperURL: keeperURL, Script: script, TLSPin: m.TLSPin}, nil
}

// JoinTokenPath is where a new instance's bootstrap finds its join token:
// root's tmpfs, gone at the next boot, and removed by the bootstrap.
const JoinTokenPath = "/run/soulstack-join-token"

// InstallScript is the shell command that installs the soul from the
// Keeper at keeperURL (its install.sh, the download pinned to pin when
// given) with the join token read from JoinTokenPath: the token is on no
// command line. A failed download fails the command.
func InstallScript(keeperURL, pin string) string {
	pinOpt := ""
	if pin != "" {
		pinOpt = "--pinnedpubkey " + shellQuote(pin) + " "
	}
	return "{ curl -fsSL " + pinOpt + "-k " + shellQuote(strings.TrimRight(keeperURL, "/")+"/install.sh") + " || echo exit 1; }" +
		" | sh -s -- --join-token-file " + JoinTokenPath + "; rc=$?; rm -f " + JoinTokenPath + "; exit $rc"
}

// UserData is the cloud-init document of instance name: the join token
// written to JoinTokenPath (0600, by cloud-init itself, so on no command
// line), then script run.
func UserData(name, script, token string) string {
	var b strings.Builder
	b.WriteString("#cloud-config\n")
	b.WriteString("# Soul Stack bootstrap: the host name is the soul's SID; the soul\n")
	b.WriteString("# is installed from the Keeper with a one-time join token.\n")
	fmt.Fprintf(&b, "hostname: %s\n", name)
	fmt.Fprintf(&b, "fqdn: %s\n", name)
	b.WriteString("preserve_hostname: false\n")
	b.WriteString("write_files:\n")
	fmt.Fprintf(&b, "  - path: %s\n", JoinTokenPath)
	b.WriteString("    permissions: '0600'\n")
	b.WriteString("    owner: root:root\n")
	fmt.Fprintf(&b, "    content: %s\n", yamlQuote(token))
	b.WriteString("runcmd:\n")
	fmt.Fprintf(&b, "  - [sh, -c, %s]\n", yamlQuote(script))
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// yamlQuote quotes s as a YAML double-quoted scalar.
func yamlQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
