package core

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
	"github.com/soulstack/soulstack/internal/module"
)

// defaultMarker is the marker line of core.file.block; {mark} becomes
// marker_begin or marker_end.
const defaultMarker = "# {mark} SOUL STACK MANAGED BLOCK"

func init() {
	register("core.file.block", module.Schema{
		Summary: "Ensure a block of lines between marker lines is in a file (or is not)",
		Params: editParams(map[string]module.Param{
			"block":           {Type: module.TypeString, Default: "", Description: "the lines between the markers; empty removes the block, like state: absent"},
			"marker":          {Type: module.TypeString, Default: defaultMarker, Description: "marker line template; {mark} is replaced by marker_begin and marker_end"},
			"marker_begin":    {Type: module.TypeString, Default: "BEGIN", Description: "{mark} of the first marker line"},
			"marker_end":      {Type: module.TypeString, Default: "END", Description: "{mark} of the last marker line"},
			"insert_after":    insertAfterParam,
			"insert_before":   insertBeforeParam,
			"state":           stateParam,
			"create":          createParam,
			"append_newline":  {Type: module.TypeBool, Default: false, Description: "when the block is written, make sure a blank line follows it (unless it ends the file)"},
			"prepend_newline": {Type: module.TypeBool, Default: false, Description: "when the block is written, make sure a blank line precedes it (unless it starts the file)"},
		}),
		Output: withFields(fileOutput, map[string]module.Field{
			"found": outputField(module.TypeBool, "the markers were in the file before the edit"),
		}),
	}, fileBlock)
}

// fileBlock is blockinfile: the lines between the begin and end markers
// are replaced by block (the markers inserted at insert_after/
// insert_before, EOF by default, when absent); state absent, or an empty
// block, removes the markers and what is between them.
func fileBlock(ctx context.Context, p map[string]any, env *module.Env) (domain.Result, error) {
	a := newArgs(p)
	block := a.str("block")
	marker, mBegin, mEnd := a.str("marker"), a.str("marker_begin"), a.str("marker_end")
	if marker == "" {
		marker = defaultMarker
	}
	if mBegin == "" {
		mBegin = "BEGIN"
	}
	if mEnd == "" {
		mEnd = "END"
	}
	w, state, create, err := editorWant(a)
	if err != nil {
		return domain.Result{}, err
	}
	pos, err := parseInsertPos(a)
	if err != nil {
		return domain.Result{}, err
	}
	if !strings.Contains(marker, "{mark}") || strings.Contains(marker, "\n") {
		return domain.Result{}, fmt.Errorf("param \"marker\": %q must be one line containing {mark}", marker)
	}
	begin, end := strings.ReplaceAll(marker, "{mark}", mBegin), strings.ReplaceAll(marker, "{mark}", mEnd)
	if begin == end {
		return domain.Result{}, fmt.Errorf("params marker_begin and marker_end must differ")
	}
	remove := state == "absent" || block == ""
	appendNL, prependNL := a.boolean("append_newline", false), a.boolean("prepend_newline", false)
	if a.err != nil {
		return domain.Result{}, a.err
	}
	found := false
	if remove {
		w.missingOK = w.path + " does not exist; no block to remove"
	}
	w.edit = func(old []byte, exists bool) ([]byte, error) {
		if !exists && !create && !remove {
			return nil, missingFile(w.path)
		}
		lines := splitText(old)
		// As Ansible: the last begin and the last end marker delimit
		// the block, in either order.
		bi, ei := -1, -1
		for i, l := range lines {
			if l == begin {
				bi = i
			}
			if l == end {
				ei = i
			}
		}
		found = bi >= 0 && ei >= 0
		out := append(textLines(nil), lines...)
		at := 0
		switch {
		case found:
			at, ei = min(bi, ei), max(bi, ei)
			out = append(out[:at], out[ei+1:]...)
		case remove:
			return old, nil
		default:
			at = blockIndex(old, lines, pos)
		}
		if !remove {
			add := blockLines(begin, block, end)
			if prependNL && at > 0 && out[at-1] != "" {
				add = append(textLines{""}, add...)
			}
			if appendNL && at < len(out) && out[at] != "" {
				add = append(add, "")
			}
			out = insertAt(out, at, add...)
		}
		return editedContent(old, lines, out), nil
	}
	res, err := ensureFile(ctx, env, w)
	if res.Data != nil {
		res.Data["found"] = found
	}
	return res, err
}

// blockIndex is where core.file.block inserts a new block: pos.index of
// lines, except that a regexp with the (?m) flag is searched in the whole
// text as Ansible does, so it can match across lines (the block goes
// after the line where the first match ends, or before the line where it
// starts).
func blockIndex(old []byte, lines textLines, pos insertPos) int {
	re := pos.re()
	if re == nil || !multiline(re.String()) {
		return pos.index(lines)
	}
	loc := re.FindIndex(old)
	switch {
	case loc == nil:
		return len(lines)
	case pos.after != nil:
		return min(bytes.Count(old[:loc[1]], []byte("\n"))+1, len(lines))
	}
	return bytes.Count(old[:loc[0]], []byte("\n"))
}

// multiline reports whether expr starts with a flag group setting m, as
// in "(?m)" or "(?sm)".
func multiline(expr string) bool {
	if !strings.HasPrefix(expr, "(?") {
		return false
	}
	end := strings.IndexAny(expr, ":)")
	on, _, _ := strings.Cut(expr[2:max(end, 2)], "-")
	return end > 0 && strings.Contains(on, "m")
}

func blockLines(begin, block, end string) textLines {
	out := textLines{begin}
	out = append(out, splitText([]byte(block))...)
	return append(out, end)
}
