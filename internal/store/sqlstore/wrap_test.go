package sqlstore

import (
	"errors"
	"testing"

	"github.com/soulstack/soulstack/internal/domain"
)

// TestWrapUnavailableReason: the dialect's reason for an unavailable
// database is in the message clients see.
func TestWrapUnavailableReason(t *testing.T) {
	full := errors.New("database or disk is full (13)")
	s := &Store{d: Dialect{
		Name:     "fake",
		Classify: func(error) ErrorClass { return ClassUnavailable },
		Reason: func(err error) string {
			if err == full {
				return "the disk is full"
			}
			return ""
		},
	}}
	var de *domain.Error
	err := s.wrap("starting run on x", full)
	if !errors.As(err, &de) || de.Code != domain.CodeUnavailable || de.Message != "starting run on x: fake database unavailable (the disk is full)" {
		t.Fatalf("wrap = %v", err)
	}
	err = s.wrap("starting run on x", errors.New("other"))
	if !errors.As(err, &de) || de.Message != "starting run on x: fake database unavailable" {
		t.Fatalf("wrap without a reason = %v", err)
	}
}
