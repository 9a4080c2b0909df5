package core

import (
	"fmt"
	"strings"
	"time"

	"github.com/soulstack/soulstack/internal/module"
	"github.com/soulstack/soulstack/internal/safefs"
)

// defaultTimeFormat is Ansible's modification_time_format and
// access_time_format default (strftime).
const defaultTimeFormat = "%Y%m%d%H%M.%S"

// timeParams are Ansible's modification_time/access_time parameters; def
// is the default of both ("preserve" or "now").
func timeParams(def string) map[string]module.Param {
	p := map[string]module.Param{}
	for _, k := range []string{"modification_time", "access_time"} {
		what := map[string]string{"modification_time": "modification", "access_time": "access"}[k]
		p[k] = module.Param{Type: module.TypeString, Default: def,
			Description: fmt.Sprintf(`%s time to set: "preserve" (leave it), "now" (always changes), or a time written in %s_format (local time)`, what, k)}
		p[k+"_format"] = module.Param{Type: module.TypeString, Default: defaultTimeFormat, Check: checkStrftime,
			Description: fmt.Sprintf("strftime format of %s (%%Y %%m %%d %%H %%M %%S %%y %%b %%B %%a %%A %%p %%I %%j %%z %%Z %%%%)", k)}
	}
	return p
}

// timeSpec is one wanted time: preserve (zero value), now, or at.
type timeSpec struct {
	now, set bool
	at       time.Time
}

// fileTimes are the wanted access and modification times.
type fileTimes struct{ atime, mtime timeSpec }

func parseFileTimes(a *args, def string) (fileTimes, error) {
	var ft fileTimes
	for _, x := range []struct {
		key  string
		spec *timeSpec
	}{{"modification_time", &ft.mtime}, {"access_time", &ft.atime}} {
		v, format := a.str(x.key), a.str(x.key+"_format")
		if a.err != nil {
			return ft, a.err
		}
		if v == "" {
			v = def
		}
		if format == "" {
			format = defaultTimeFormat
		}
		switch v {
		case "preserve":
		case "now":
			x.spec.now = true
		default:
			layout, err := strftimeLayout(format)
			if err != nil {
				return ft, fmt.Errorf("param %q: %w", x.key+"_format", err)
			}
			at, err := time.ParseInLocation(layout, v, time.Local)
			if err != nil {
				return ft, fmt.Errorf("param %q: %q is not \"preserve\", \"now\" or a time in the format %q", x.key, v, format)
			}
			x.spec.set, x.spec.at = true, at
		}
	}
	return ft, nil
}

// resolve returns the times to set on a file whose current times are in
// fi (nil when the file is being created), now being the time of the
// call, and the diff lines. A nil time is left alone.
func (ft fileTimes) resolve(fi *safefs.Info, now time.Time) (atime, mtime *time.Time, changes []string) {
	one := func(name string, s timeSpec, cur time.Time) *time.Time {
		switch {
		case s.now:
			changes = append(changes, fmt.Sprintf("%s -> now", name))
			return &now
		case s.set && (fi == nil || !cur.Equal(s.at)):
			from := "unset"
			if fi != nil {
				from = cur.Format(time.RFC3339)
			}
			changes = append(changes, fmt.Sprintf("%s %s -> %s", name, from, s.at.Format(time.RFC3339)))
			at := s.at
			return &at
		}
		return nil
	}
	var ca, cm time.Time
	if fi != nil {
		ca, cm = fi.ATime, fi.ModTime
	}
	mtime = one("modification_time", ft.mtime, cm)
	atime = one("access_time", ft.atime, ca)
	return atime, mtime, changes
}

// checkStrftime validates a literal *_format value at load time.
func checkStrftime(s string) error {
	_, err := strftimeLayout(s)
	return err
}

// strftimeLayout turns a strftime format into a Go time layout.
func strftimeLayout(f string) (string, error) {
	repl := map[byte]string{'Y': "2006", 'm': "01", 'd': "02", 'H': "15", 'M': "04", 'S': "05", 'y': "06",
		'b': "Jan", 'B': "January", 'a': "Mon", 'A': "Monday", 'p': "PM", 'I': "03", 'j': "002",
		'z': "-0700", 'Z': "MST", '%': "%"}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		if i+1 >= len(f) {
			return "", fmt.Errorf("format %q ends with a lone %%", f)
		}
		i++
		r, ok := repl[f[i]]
		if !ok {
			return "", fmt.Errorf("format %q: %%%c is not supported", f, f[i])
		}
		b.WriteString(r)
	}
	return b.String(), nil
}
