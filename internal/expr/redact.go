package expr

import (
	"errors"
	"regexp"
	"strings"
)

// quotedRE matches what CEL's and Go's error messages quote of a value:
// "…" (timestamp) and `…` (regexp).
var quotedRE = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`")

// noSuchKeyRE matches CEL's "no such key: <key>", which names the key.
var noSuchKeyRE = regexp.MustCompile(`no such key: .*`)

// redactError returns err's message without the bytes of the values it
// quotes: when an evaluation reads secrets, CEL's own messages
// (`invalid RFC 3339 timestamp "…"`, "error parsing regexp: … `…`",
// "no such key: …") would carry parts of them into run results that
// viewers read (audit finding N4). What remains names the function and
// the problem.
func redactError(err error) error {
	msg := err.Error()
	out := quotedRE.ReplaceAllString(msg, "(value withheld)")
	out = noSuchKeyRE.ReplaceAllString(out, "no such key (the key is withheld)")
	if out == msg {
		return err
	}
	return errors.New(strings.TrimSpace(out) + " (the expression reads secrets: values are not shown)")
}
