package config

// Merge deep-merges src into dst and returns dst, with the original's rules
// (lodash mergeWith with arrays replaced): objects merge key by key, arrays
// and every other value replace what was there, a nil (JSON null) value
// replaces too. Values taken from src are copied, so later changes to src do
// not show through. dst may be nil.
//
// Other packages use it to lay a service's configuration document (for
// example configuration{name:'subscription', serviceName}.value) over the
// static config: Merge(Clone(static), dynamic).
func Merge(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = Merge(dm, sm)
				continue
			}
			dst[k] = Merge(map[string]any{}, sm)
			continue
		}
		dst[k] = cloneValue(sv)
	}
	return dst
}

// Clone returns a deep copy of a config tree. Functions are shared (they are
// handles, not data).
func Clone(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return Clone(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = cloneValue(e)
		}
		return out
	default:
		return v
	}
}

// StripFuncs returns a deep copy of m without its function values, for
// encoding as JSON (encoding/json refuses funcs).
func StripFuncs(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if s, keep := stripValue(v); keep {
			out[k] = s
		}
	}
	return out
}

func stripValue(v any) (any, bool) {
	switch t := v.(type) {
	case Func:
		return nil, false
	case map[string]any:
		return StripFuncs(t), true
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			if s, keep := stripValue(e); keep {
				out = append(out, s)
			} else {
				out = append(out, nil)
			}
		}
		return out, true
	default:
		return v, true
	}
}
