// Package cliflags holds what govkit's commands do with their flags once
// they are declared.
package cliflags

import (
	"errors"
	"flag"
)

// Parse parses args with fs (made with flag.ContinueOnError) for a command
// that takes no positional arguments. When ok is false the command should
// exit with code: 0 after -h or -help (fs printed its usage), 2 after a
// bad flag (fs said why) or a stray argument (the usage is printed).
func Parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2, false
	}
	return 0, true
}
