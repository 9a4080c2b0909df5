package catalog

import (
	"errors"
	"fmt"

	"github.com/soulstack/soulstack/internal/apitypes"
	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/dsl"
)

// invalidService classifies a Loader error: DSL problems become a 400 whose
// details list every problem with file, line and column; other invalid
// errors keep their details; anything else (an unreadable tree) stays an
// internal error.
//
// pinned says the commit was validated before (an incarnation is pinned to
// it) and is refused now, by a keeper whose validation is stricter: the way
// out is a fixed commit the service and the incarnation move to.
func invalidService(name, commit string, err error, pinned bool) error {
	var ps dsl.Problems
	if errors.As(err, &ps) && len(ps) > 0 {
		advice := "fix the repository and try again"
		if pinned {
			advice = fmt.Sprintf("fix the repository, then move the service (soulctl service update %s --ref …) and its incarnations (soulctl incarnation upgrade) to the fixed commit", name)
		}
		return &domain.Error{
			Code:    domain.CodeInvalid,
			Message: fmt.Sprintf("service %s at commit %.12s is invalid (%d %s); %s", name, commit, len(ps), plural(len(ps), "problem"), advice),
			Details: Problems(ps),
			Err:     err,
		}
	}
	if domain.ErrorCode(err) == domain.CodeInvalid {
		return fmt.Errorf("service %s at commit %.12s is invalid: %w", name, commit, err)
	}
	return fmt.Errorf("loading service %s at commit %.12s: %w", name, commit, err)
}

// Problems converts DSL problems to their wire form.
func Problems(ps dsl.Problems) []apitypes.Problem {
	out := make([]apitypes.Problem, len(ps))
	for i, p := range ps {
		out[i] = apitypes.Problem{
			File: p.Pos.File, Line: p.Pos.Line, Col: p.Pos.Col,
			Key: p.Key, Message: p.Message, Text: p.String(),
		}
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
