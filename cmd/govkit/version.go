package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// versionText is what `govkit version` prints: the module version and the
// VCS revision the Go toolchain stamped into the binary, then the Go
// version and platform, e.g.
//
//	govkit v1.2.0 (revision 4f9c2e1a7b3d, 2026-05-01T10:00:00Z) go1.26.8 linux/amd64
//	govkit (devel) (revision 4f9c2e1a7b3d, 2026-05-01T10:00:00Z, modified) go1.26.8 linux/amd64
//	govkit (devel) (revision unknown: built without VCS stamping) go1.26.8 linux/amd64
//
// The module version is "(devel)" for a build from a checkout, unless the
// toolchain derived one from a tag; `go install …@v1.2.0` records
// v1.2.0. The revision is there when the binary was built from a git
// checkout with VCS stamping on (the default of `go build`; off with
// -buildvcs=false, and `go run` never stamps). override (-ldflags
// "-X main.version=…") replaces the module version, for packagers.
func versionText(bi *debug.BuildInfo, override string) string {
	if bi == nil {
		bi = &debug.BuildInfo{}
	}
	v := bi.Main.Version
	if override != "" {
		v = override
	}
	if v == "" {
		v = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "govkit %s", v)
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		b.WriteString(" (revision " + rev)
		if t := settings["vcs.time"]; t != "" {
			b.WriteString(", " + t)
		}
		if settings["vcs.modified"] == "true" {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	} else {
		b.WriteString(" (revision unknown: built without VCS stamping)")
	}
	if bi.GoVersion != "" {
		b.WriteString(" " + bi.GoVersion)
	}
	if goos, goarch := settings["GOOS"], settings["GOARCH"]; goos != "" && goarch != "" {
		b.WriteString(" " + goos + "/" + goarch)
	}
	return b.String()
}
