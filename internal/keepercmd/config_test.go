package keepercmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigValidate: the packaged keeper.yaml is valid; an unknown key, a
// bad value and a missing file are exit 2 with the problem named.
func TestConfigValidate(t *testing.T) {
	t.Setenv("SOULSTACK_DATABASE_URL", "")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name, file string
		code       int
		want       string
	}{
		{"packaged", filepath.Join("..", "..", "packaging", "keeper.yaml"), 0, "keeper.yaml: ok"},
		{"unknown key", write("typo.yaml", "data_dir: /tmp/x\nlisten_addr: \":8080\"\n"), 2, "listen_addr"},
		{"bad value", write("bad.yaml", "data_dir: /tmp/x\nlog_format: xml\nfan_out: 0\n"), 2, "log_format \"xml\""},
		{"missing file", filepath.Join(dir, "nope.yaml"), 2, "nope.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), []string{"config", "validate", "--config", tt.file}, &out, &errb)
			if code != tt.code || !strings.Contains(out.String()+errb.String(), tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d mentioning %q", code, out.String(), errb.String(), tt.code, tt.want)
			}
		})
	}
}
