package httpapi

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/govkit/govkit/internal/cliflags"
	"github.com/govkit/govkit/internal/preflight"
	"github.com/govkit/govkit/notify/mongostore"
)

// CopyStoreMain is `govkit notify copy-store --to URI`: it copies the
// store of a deployment (the same --dir, --config-dir and --data-dir as
// serve; usually the embedded one of a one-machine install) into the
// MongoDB database the URI names, every collection and document as
// stored, then creates the indexes serve needs there and checks the
// counts. Stop serve first. A target that holds documents is refused
// unless --drop. Exit codes: 0 copied, 1 refused (target not empty), 2
// bad usage or a store that cannot be opened or written.
func CopyStoreMain(ctx context.Context, args []string, env map[string]string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("govkit notify copy-store", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var loc deploymentFlags
	loc.register(fs)
	to := fs.String("to", "", "the MongoDB URI to copy into (its database, else the source's name)")
	drop := fs.Bool("drop", false, "drop the target's collections of the same names first")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, "Usage: govkit notify copy-store --to URI [--drop] [--dir DIR] [--config-dir DIR] [--data-dir DIR]")
		fmt.Fprintln(w, "\nCopies the store serve would use (the embedded one, or the datasource's) into a MongoDB database.")
		fmt.Fprintln(w, "Stop serve first; then point the datasource's uri at the target.\n\nFlags:")
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args, stdout); !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "govkit notify copy-store: %s\n", fmt.Sprintf(format, a...))
		return code
	}
	if *to == "" {
		return cliflags.Usagef(fs, "--to is required (the MongoDB URI to copy into)")
	}
	src, closeSrc, err := loc.openStore(ctx, env)
	if err != nil {
		return fail(2, "source: %v", err)
	}
	defer closeSrc()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dst, err := mongostore.Open(ctx, *to, mongostore.Options{Database: targetDatabase(*to, src.Database()), Logger: quiet})
	if err != nil {
		return fail(2, "target %s: %v", preflight.RedactURL(*to), err)
	}
	defer dst.Close(context.WithoutCancel(ctx))
	counts, err := src.CopyTo(ctx, dst, *drop)
	if errors.Is(err, mongostore.ErrNotEmpty) {
		return fail(1, "%v", err)
	}
	if err != nil {
		return fail(2, "%v", err)
	}
	if _, err := dst.EnsureIndexes(ctx); err != nil {
		return fail(2, "indexes in the target: %v", err)
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(stdout, "%-24s %d documents\n", n, counts[n])
	}
	fmt.Fprintf(stdout, "copied database %s into %s (database %s), indexes made; point the datasource's uri there and start serve\n",
		src.Database(), preflight.RedactURL(*to), dst.Database())
	return 0
}

// targetDatabase is the database a URI names, else the source's name.
func targetDatabase(uri, source string) string {
	rest := uri[strings.Index(uri, "://")+3:]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		db, _, _ := strings.Cut(rest[i+1:], "?")
		if db != "" {
			return db
		}
	}
	return source
}
