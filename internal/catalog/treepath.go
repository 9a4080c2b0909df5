package catalog

import (
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/soulstack/soulstack/internal/domain"
)

// checkTreePaths refuses a tree holding an entry no checkout may write: an
// empty name, ".", "..", ".git" (any case), or a name with a slash or a
// control character (audit I3). git itself never makes such entries, but
// a crafted commit can; go-git refuses them later with an error that
// would read as an internal failure, so they are named here as the
// repository's fault.
func checkTreePaths(repo *git.Repository, tree *object.Tree, dir string) error {
	for _, e := range tree.Entries {
		if err := validEntryName(e.Name); err != nil {
			return &domain.Error{Code: domain.CodeInvalid,
				Message: fmt.Sprintf("repository tree entry %q (under %q) is not a safe path: %v; the commit was crafted outside git — fix the repository", e.Name, "/"+dir, err)}
		}
		if e.Mode != filemode.Dir {
			continue
		}
		sub, err := repo.TreeObject(e.Hash)
		if err != nil {
			return fmt.Errorf("reading tree %s: %w", path.Join(dir, e.Name), err)
		}
		if err := checkTreePaths(repo, sub, path.Join(dir, e.Name)); err != nil {
			return err
		}
	}
	return nil
}

func validEntryName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("it names no file")
	case strings.EqualFold(name, ".git"):
		return fmt.Errorf("it would be git metadata")
	case strings.ContainsAny(name, "/\\"):
		return fmt.Errorf("it holds a path separator")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("it holds a control character")
		}
	}
	return nil
}
