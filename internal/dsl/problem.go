package dsl

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
)

// Problem is one validation failure: where, which key, and what to do.
type Problem struct {
	Pos     Pos    `json:"-"`
	Key     string `json:"key"`
	Message string `json:"message"`
}

// problemJSON is the wire form of a Problem: {file, line, col, key, message}.
type problemJSON struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Key     string `json:"key"`
	Message string `json:"message"`
}

// MarshalJSON renders the problem flat: {file, line, col, key, message}.
func (p Problem) MarshalJSON() ([]byte, error) {
	return json.Marshal(problemJSON{File: p.Pos.File, Line: p.Pos.Line, Col: p.Pos.Col, Key: p.Key, Message: p.Message})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (p *Problem) UnmarshalJSON(data []byte) error {
	var j problemJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*p = Problem{Pos: Pos{File: j.File, Line: j.Line, Col: j.Col}, Key: j.Key, Message: j.Message}
	return nil
}

// String renders the problem as "file:line:col: message".
func (p Problem) String() string { return p.Pos.String() + ": " + p.Message }

// Problems are all problems of a repository (or a destiny bundle), in file
// and line order.
type Problems []Problem

// Error joins the problems one per line, so Problems can travel as an error.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Err returns nil when there are no problems, else a *domain.Error with
// CodeInvalid whose Details are the problems (the API renders them as the
// file:line list of a 400 response).
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return &domain.Error{Code: domain.CodeInvalid, Message: "service repository is invalid", Details: ps, Err: ps}
}

// sortProblems orders by file, line, column and message, dropping exact
// duplicates (a shared neighbour file included twice reports once).
func sortProblems(ps Problems) Problems {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		return a.Message < b.Message
	})
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}
