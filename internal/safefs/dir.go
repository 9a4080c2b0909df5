package safefs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenDir opens the existing directory at the target, never following a
// symlink there (ErrSymlink), for a library that works below it through
// the descriptor (/proc/self/fd/N): what was checked is what is used,
// whatever is renamed along the path afterwards.
func (t *Target) OpenDir() (*os.File, error) {
	f, st, err := t.openExisting(unix.O_RDONLY | unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		_ = f.Close()
		return nil, fmt.Errorf("%s is not a directory", t.given)
	}
	return f, nil
}
