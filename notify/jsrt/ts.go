package jsrt

import (
	"fmt"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// TranspileTS turns a TypeScript config file into CommonJS JavaScript with an
// inline source map, so that errors raised while it runs point at lines of
// the .ts file. Type errors are not checked (esbuild strips types, as
// ts-node's transpile-only mode does); syntax errors are reported with their
// line.
func TranspileTS(name, code string) (string, error) {
	res := api.Transform(code, api.TransformOptions{
		Loader:     api.LoaderTS,
		Format:     api.FormatCommonJS,
		Target:     api.ES2017,
		Sourcemap:  api.SourceMapInline,
		Sourcefile: name,
		Platform:   api.PlatformNode,
		LogLevel:   api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		var errs []string
		first := &Error{File: name}
		for i, m := range res.Errors {
			if i == 0 && m.Location != nil {
				first.Line, first.Column = m.Location.Line, m.Location.Column+1
			}
			errs = append(errs, m.Text)
		}
		first.Message = "syntax error: " + strings.Join(errs, "; ")
		return "", first
	}
	if len(res.Code) == 0 {
		return "", fmt.Errorf("%s: esbuild produced no code", name)
	}
	return string(res.Code), nil
}
