package cloud

import (
	"fmt"

	"github.com/soulstack/soulstack/internal/store"
)

// NewLocal returns the driver of local provider p; defaultDir holds its
// hosts unless the provider's config names a dir.
func NewLocal(p store.CloudProvider, defaultDir string) (Driver, error) {
	if _, err := ParseLocal(p.Config); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("cloud provider %s: the local kind is not available in this build", p.Name)
}
