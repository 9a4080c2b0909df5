package core

import (
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
			"block":         {Type: module.TypeString, Default: "", Description: "the lines between the markers; empty removes the block, like state: absent"},
			"marker":        {Type: module.TypeString, Default: defaultMarker, Description: "marker line template; {mark} is replaced by marker_begin and marker_end"},
			"marker_begin":  {Type: module.TypeString, Default: "BEGIN", Description: "{mark} of the first marker line"},
			"marker_end":    {Type: module.TypeString, Default: "END", Description: "{mark} of the last marker line"},
			"insert_after":  insertAfterParam,
			"insert_before": insertBeforeParam,
			"state":         stateParam,
			"create":        createParam,
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
	found := false
	if remove {
		w.missingOK = w.path + " does not exist; no block to remove"
	}
	w.edit = func(old []byte, exists bool) ([]byte, error) {
		if !exists && !create && !remove {
			return nil, missingFile(w.path)
		}
		lines := splitText(old)
		bi, ei := -1, -1
		for i, l := range lines {
			if l == begin && bi < 0 {
				bi = i
			} else if l == end && bi >= 0 {
				ei = i
				break
			}
		}
		found = bi >= 0 && ei >= 0
		var out textLines
		switch {
		case found && remove:
			out = append(append(out, lines[:bi]...), lines[ei+1:]...)
		case found:
			out = append(append(out, lines[:bi]...), blockLines(begin, block, end)...)
			out = append(out, lines[ei+1:]...)
		case remove:
			out = lines
		default:
			out = insertAt(lines, pos.index(lines), blockLines(begin, block, end)...)
		}
		return editedContent(old, lines, out), nil
	}
	res, err := ensureFile(ctx, env, w)
	if res.Data != nil {
		res.Data["found"] = found
	}
	return res, err
}

func blockLines(begin, block, end string) textLines {
	out := textLines{begin}
	out = append(out, splitText([]byte(block))...)
	return append(out, end)
}
