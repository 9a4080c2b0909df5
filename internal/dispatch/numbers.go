package dispatch

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/soulstack/soulstack/internal/domain"
)

// Numbers keep their YAML type end to end (SPEC §9): work and results
// cross the wire as JSON, whose plain decoding turns every number into a
// float64 — a template on the soul would then render 600100000 as
// 6.001e+08. DecodeWork and DecodeResult decode integers as int64.

// DecodeWork decodes one piece of work, integers as int64.
func DecodeWork(data []byte) (Work, error) {
	var w Work
	if err := decodeNumbers(data, &w); err != nil {
		return Work{}, err
	}
	if w.Call != nil {
		w.Call.Params = normalizeMap(w.Call.Params)
		w.Call.TemplateData = normalizeMap(w.Call.TemplateData)
	}
	if w.Bundle != nil {
		w.Bundle.Input = normalizeMap(w.Bundle.Input)
		w.Bundle.Essence = normalizeMap(w.Bundle.Essence)
	}
	return w, nil
}

// DecodeResult decodes a module or destiny result, integers as int64.
func DecodeResult(data []byte) (domain.Result, error) {
	var r domain.Result
	if err := decodeNumbers(data, &r); err != nil {
		return domain.Result{}, err
	}
	normalizeResult(&r)
	return r, nil
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func normalizeResult(r *domain.Result) {
	r.Data = normalizeMap(r.Data)
	r.Output = normalizeMap(r.Output)
	for i := range r.Results {
		normalizeResult(&r.Results[i])
	}
	for i := range r.Tasks {
		normalizeResult(&r.Tasks[i].Result)
	}
}

func normalizeMap(m map[string]any) map[string]any {
	for k, v := range m {
		m[k] = NormalizeNumbers(v)
	}
	return m
}

// NormalizeNumbers replaces the json.Number values of a decoded tree: an
// integer literal becomes int64 (float64 when it does not fit), any other
// number float64.
func NormalizeNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i
			}
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		return normalizeMap(x)
	case []any:
		for i, e := range x {
			x[i] = NormalizeNumbers(e)
		}
	}
	return v
}
