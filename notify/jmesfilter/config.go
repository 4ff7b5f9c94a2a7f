package jmesfilter

import (
	"context"

	"github.com/govkit/govkit/notify/config"
)

// FromConfig turns notification.broadcastCustomFilterFunctions, as package
// config loads it, into Functions. Each _func is called as the original
// calls it: with one argument, the array of resolved arguments; a promise
// it returns is awaited by the config runtime.
func FromConfig(decls map[string]config.FilterFunction) Functions {
	fns := make(Functions, len(decls))
	for name, d := range decls {
		sig := make([]ArgSpec, len(d.Signature))
		for i, a := range d.Signature {
			types := make([]ArgType, len(a.Types))
			for k, t := range a.Types {
				types[k] = ArgType(t)
			}
			sig[i] = ArgSpec{Types: types, Optional: a.Optional, Variadic: a.Variadic}
		}
		call := d.Func
		fns[name] = Function{
			Signature: sig,
			Call: func(ctx context.Context, args []any) (any, error) {
				if call == nil {
					return nil, errNoFunc
				}
				// ctx carries the evaluation's deadline, which interrupts
				// the JavaScript; the config runtime bounds the result.
				return call(ctx, args)
			},
		}
	}
	return fns
}
