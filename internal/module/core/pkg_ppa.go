package core

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// PPA endpoints: Launchpad's API (the PPA's signing key fingerprint) and
// the Ubuntu keyserver (the key itself). Tests point them at a local
// server through the ppa_api and keyserver params.
const (
	launchpadAPI     = "https://launchpad.net/api/1.0"
	ubuntuKeyserver  = "https://keyserver.ubuntu.com"
	launchpadContent = "https://ppa.launchpadcontent.net"
)

var (
	ppaRe         = regexp.MustCompile(`^ppa:([a-z0-9][a-z0-9.+-]*)/([a-z0-9][a-z0-9.+-]*)$`)
	fingerprintRe = regexp.MustCompile(`^[0-9A-Fa-f]{40}$`)
)

// ppaSource is what a ppa:owner/name shorthand stands for, as Ansible's
// apt_repository resolves it: the Launchpad archive's deb line for the
// host's codename, and the archive's signing key.
type ppaSource struct {
	uri, suite, component, key, fingerprint string
}

// resolvePPA translates ppa:owner/name for codename and fetches its key:
// the fingerprint from Launchpad's API, the ASCII-armored key from the
// keyserver by that fingerprint (and refuses a key that is not the one
// asked for by shape).
func resolvePPA(ctx context.Context, ppa, codename, api, keyserver string) (ppaSource, error) {
	m := ppaRe.FindStringSubmatch(ppa)
	if m == nil {
		return ppaSource{}, paramErr("ppa", "%q: want ppa:owner/name (lowercase, as Launchpad spells it)", ppa)
	}
	if codename == "" || strings.ContainsAny(codename, " /") {
		return ppaSource{}, paramErr("ppa", "needs the host's release codename (soulprint os.codename, e.g. jammy)")
	}
	owner, name := m[1], m[2]
	src := ppaSource{uri: launchpadContent + "/" + owner + "/" + name + "/ubuntu", suite: codename, component: "main"}
	var info struct {
		Fingerprint string `json:"signing_key_fingerprint"`
	}
	body, err := httpGet(ctx, strings.TrimRight(api, "/")+"/~"+owner+"/+archive/ubuntu/"+name, 1<<20)
	if err != nil {
		return ppaSource{}, fmt.Errorf("param \"ppa\": looking up %s on Launchpad: %w", ppa, err)
	}
	if err := json.Unmarshal(body, &info); err != nil || !fingerprintRe.MatchString(info.Fingerprint) {
		return ppaSource{}, fmt.Errorf("param \"ppa\": Launchpad gave no signing key fingerprint for %s", ppa)
	}
	src.fingerprint = strings.ToUpper(info.Fingerprint)
	q := url.Values{"op": {"get"}, "options": {"mr"}, "search": {"0x" + src.fingerprint}}
	key, err := httpGet(ctx, strings.TrimRight(keyserver, "/")+"/pks/lookup?"+q.Encode(), 1<<20)
	if err != nil {
		return ppaSource{}, fmt.Errorf("param \"ppa\": fetching key %s: %w", src.fingerprint, err)
	}
	src.key = strings.TrimSpace(string(key))
	if err := checkSignedBy(src.key); err != nil || strings.HasPrefix(src.key, "/") {
		return ppaSource{}, fmt.Errorf("param \"ppa\": the keyserver's answer for %s is not an ASCII-armored public key", src.fingerprint)
	}
	return src, nil
}

// httpGet fetches u and returns at most limit bytes of a 200 answer.
func httpGet(ctx context.Context, u string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/pgp-keys, */*")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, limit))
}
