package cli

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
)

// warnPlainHTTP writes a warning to w when keeper is a plain http:// URL
// of a host other than loopback and a token is about to be sent to it
// (audit L6): the bearer token crosses the network in clear.
func warnPlainHTTP(w io.Writer, keeper, token string) {
	if w == nil || strings.TrimSpace(token) == "" || !plainRemote(keeper) {
		return
	}
	fmt.Fprintf(w, "warning: sending your token in clear over plain HTTP to %s: use https:// (soulctl login --keeper https://… --fingerprint <CA fingerprint>)\n", keeper)
}

// plainRemote reports whether keeper is an http:// URL whose host is not
// loopback.
func plainRemote(keeper string) bool {
	u, err := url.Parse(keeper)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
