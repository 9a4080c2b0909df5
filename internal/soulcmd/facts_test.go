package soulcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestFactsCommand(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		decode func([]byte, any) error
	}{
		{"json", []string{"facts", "-o", "json", "--sid", "soul-7.lab"}, json.Unmarshal},
		{"yaml", []string{"facts", "--output", "yaml", "--sid", "soul-7.lab"}, yaml.Unmarshal},
		{"default is json", []string{"facts", "--sid", "soul-7.lab"}, json.Unmarshal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := Main(context.Background(), tt.args, &out, &errOut); code != 0 {
				t.Fatalf("exit %d, stderr: %s", code, errOut.String())
			}
			var facts map[string]any
			if err := tt.decode(out.Bytes(), &facts); err != nil {
				t.Fatalf("decoding %q: %v", out.String(), err)
			}
			if facts["sid"] != "soul-7.lab" {
				t.Errorf("sid = %v", facts["sid"])
			}
			osf, ok := facts["os"].(map[string]any)
			if !ok || osf["arch"] == "" {
				t.Errorf("os facts missing: %v", facts["os"])
			}
		})
	}
}

func TestFactsCommandBadOutput(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main(context.Background(), []string{"facts", "-o", "table"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "json or yaml") {
		t.Errorf("exit %d, stderr %q; want 2 and a message naming the formats", code, errOut.String())
	}
}
