package catalogtest

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// TestCommitExecKeepsTheExecutableBit: a file named in exec is committed
// with mode 100755, the others with 100644.
func TestCommitExecKeepsTheExecutableBit(t *testing.T) {
	r := NewRepo(t)
	h := r.CommitExec(map[string]string{"modules/m/run": "#!/bin/sh\n", "modules/m/module.yml": "summary: x\n"}, []string{"modules/m/run"}, "m")
	c, err := r.repo.CommitObject(plumbing.NewHash(h))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]filemode.FileMode{"modules/m/run": filemode.Executable, "modules/m/module.yml": filemode.Regular} {
		e, err := tree.FindEntry(path)
		if err != nil {
			t.Fatal(err)
		}
		if e.Mode != want {
			t.Errorf("%s committed with mode %v, want %v", path, e.Mode, want)
		}
	}
}
