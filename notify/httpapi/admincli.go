package httpapi

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/govkit/govkit/internal/cliflags"
	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/config"
	"github.com/govkit/govkit/notify/mongostore"
)

// cliProfile is who `govkit notify admin` acts as, in createdBy and
// updatedBy of what it writes: someone with a shell on a node, which is
// more than super admin.
var cliProfile = notify.UserProfile{SecurityID: "govkit notify admin", AuthnStrategy: "cli", Role: notify.RoleSuperAdmin}

// AdminCommands are the subcommands of `govkit notify admin`.
var AdminCommands = []string{"add", "set-password", "list", "remove"}

// passwordRule says in words what notify.PasswordComplexity requires.
const passwordRule = "at least 10 characters (at most 72 bytes) with an upper-case letter, a lower-case letter, a digit and one of !_@#&$*"

// AdminMain is `govkit notify admin add|set-password|list|remove`: the
// way in for administrators that needs no admin address. It reads the
// configuration serve would (the same --dir, --config-dir and --data-dir,
// NODE_ENV from env) and works on the store it names, the embedded one or
// MongoDB, with the API's rules: the password complexity, emails unique
// ignoring case. Exit codes: 0 done, 1 refused (no such administrator,
// email taken, weak password), 2 bad usage or the store cannot be opened.
func AdminMain(ctx context.Context, args []string, env map[string]string, stdin io.Reader, stdout, stderr io.Writer) int {
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "Usage: govkit notify admin <command> [--dir DIR] [--config-dir DIR] [--data-dir DIR] [flags]")
		fmt.Fprintln(w, "\nCommands:")
		fmt.Fprintln(w, "  add           --email ADDRESS [--username NAME] [--password P]   add an administrator")
		fmt.Fprintln(w, "  set-password  --email ADDRESS [--password P]                     set a password; revokes the administrator's access tokens")
		fmt.Fprintln(w, "  list                                                             list administrators")
		fmt.Fprintln(w, "  remove        --email ADDRESS                                    remove an administrator with its password and tokens")
		fmt.Fprintln(w, "\nWithout --password the password is read from the first line of standard input")
		fmt.Fprintln(w, "(prefer that: a flag is visible in the process list and the shell history).")
		fmt.Fprintln(w, "Passwords need "+passwordRule+".")
	}
	if len(args) == 0 {
		cliflags.Fail(stderr, "govkit notify admin", "which command? "+strings.Join(AdminCommands, ", "))
		return 2
	}
	cmd := args[0]
	switch cmd {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "add", "set-password", "list", "remove":
	default:
		msg := fmt.Sprintf("unknown command %q", cmd)
		if strings.HasPrefix(cmd, "-") {
			msg = "unknown flag --" + strings.TrimLeft(cmd, "-")
		}
		cliflags.Fail(stderr, "govkit notify admin", msg)
		return 2
	}
	fs := flag.NewFlagSet("govkit notify admin "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var loc deploymentFlags
	loc.register(fs)
	var email, username, password *string
	if cmd != "list" {
		email = fs.String("email", "", "the administrator's email address (compared ignoring case)")
	}
	if cmd == "add" {
		username = fs.String("username", "", "the administrator's user name (optional)")
	}
	if cmd == "add" || cmd == "set-password" {
		password = fs.String("password", "", "the password (default: read the first line of standard input)")
	}
	fs.Usage = func() {
		usage(fs.Output())
		fmt.Fprintln(fs.Output(), "\nFlags of "+cmd+":")
		cliflags.PrintDefaults(fs)
	}
	if code, ok := cliflags.Parse(ctx, fs, args[1:], stdout); !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "govkit notify admin %s: %s\n", cmd, fmt.Sprintf(format, a...))
		return code
	}
	if email != nil && strings.TrimSpace(*email) == "" {
		return cliflags.Usagef(fs, "--email is required")
	}
	hash := ""
	if password != nil {
		pw := *password
		if pw == "" {
			var err error
			if pw, err = readPassword(stdin, stderr); err != nil {
				return fail(2, "reading the password from standard input: %v", err)
			}
		}
		var err error
		if hash, err = hashPassword(pw); err != nil {
			return fail(1, "the password needs %s", passwordRule)
		}
	}
	st, closeStore, err := loc.openStore(ctx, env)
	if err != nil {
		return fail(2, "%v", err)
	}
	defer closeStore()

	switch cmd {
	case "add":
		a := &notify.Administrator{Email: strings.TrimSpace(*email), Username: *username}
		if err := validEmail(a.Email); err != nil {
			return fail(1, "%v", err)
		}
		err := createAdministrator(ctx, st, cliProfile, a, hash)
		if errors.Is(err, notify.ErrDuplicate) {
			return fail(1, "an administrator with email %s exists (emails are compared ignoring case); use set-password", a.Email)
		}
		if err != nil {
			return fail(2, "%v", err)
		}
		fmt.Fprintf(stdout, "administrator %s added (id %s); sign in to the console with this email and password\n", a.Email, a.ID.Hex())
	case "set-password":
		a, err := findAdmin(ctx, st, *email)
		if err != nil {
			return fail(1, "%v", err)
		}
		// A password reset is for a lost or leaked password: the
		// tokens issued with the old one go with it.
		var revoked int64
		err = st.WithTransaction(ctx, func(ctx context.Context) error {
			_, revoked, err = changePassword(ctx, st, cliProfile, a.ID, hash, "")
			return err
		})
		if err != nil {
			return fail(2, "%v", err)
		}
		fmt.Fprintf(stdout, "password of %s set; %d access tokens revoked\n", a.Email, revoked)
	case "remove":
		a, err := findAdmin(ctx, st, *email)
		if err != nil {
			return fail(1, "%v", err)
		}
		if err := deleteAdministrator(ctx, st, a.ID); err != nil {
			return fail(2, "%v", err)
		}
		fmt.Fprintf(stdout, "administrator %s removed with its password and access tokens\n", a.Email)
	case "list":
		admins, err := st.Administrators().Find(ctx, mongostore.Query{})
		if err != nil {
			return fail(2, "%v", err)
		}
		creds, err := st.UserCredentials().Find(ctx, mongostore.Query{})
		if err != nil {
			return fail(2, "%v", err)
		}
		hasPassword := map[notify.ID]bool{}
		for _, c := range creds {
			hasPassword[c.UserID] = true
		}
		sort.Slice(admins, func(i, j int) bool { return notify.EmailKey(admins[i].Email) < notify.EmailKey(admins[j].Email) })
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "EMAIL\tUSERNAME\tPASSWORD\tID\tCREATED")
		for _, a := range admins {
			pw := "no"
			if hasPassword[a.ID] {
				pw = "yes"
			}
			created := ""
			if !a.Created.IsZero() {
				created = a.Created.UTC().Format("2006-01-02T15:04:05Z")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Email, a.Username, pw, a.ID.Hex(), created)
		}
		tw.Flush()
	}
	return 0
}

// findAdmin finds an administrator by email, ignoring case.
func findAdmin(ctx context.Context, st *mongostore.Store, email string) (*notify.Administrator, error) {
	a, err := st.FindAdministratorByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, notify.ErrNotFound) {
		return nil, fmt.Errorf("no administrator with email %s (govkit notify admin list shows them)", email)
	}
	return a, err
}

// readPassword reads the first line of r, without its line end.
func readPassword(r io.Reader, prompt io.Writer) (string, error) {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			fmt.Fprint(prompt, "Password (shown as typed; or pipe it in): ")
		}
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		if errors.Is(err, io.EOF) {
			return "", errors.New("nothing there; pass --password or pipe the password in")
		}
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// deploymentFlags are the flags that say where a deployment is, shared by
// serve, admin and check-config.
type deploymentFlags struct {
	dir, configDir, dataDir string
}

func (d *deploymentFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.dir, "dir", ".", "deployment directory: config files in DIR/src, TLS material in DIR/server/certs")
	fs.StringVar(&d.configDir, "config-dir", "", "config directory (default DIR/src)")
	fs.StringVar(&d.dataDir, "data-dir", "./data", "directory for the embedded document store (used when the datasource has no uri)")
}

// load reads the configuration as serve does.
func (d *deploymentFlags) load(env map[string]string, log func(level, msg string)) (*config.Config, error) {
	cfgDir := d.configDir
	if cfgDir == "" {
		cfgDir = filepath.Join(d.dir, "src")
	}
	if err := configDirExists(cfgDir, d.configDir != ""); err != nil {
		return nil, err
	}
	return config.Load(config.Options{
		Dir:      cfgDir,
		NodeEnv:  env["NODE_ENV"],
		Env:      env,
		CertsDir: filepath.Join(d.dir, "server", "certs"),
		Log:      log,
	})
}

// openStore opens the store the deployment's datasource names, with the
// indexes serve's primary makes (idempotent), so that the unique email
// index exists even before serve first ran.
func (d *deploymentFlags) openStore(ctx context.Context, env map[string]string) (*mongostore.Store, func(), error) {
	cfg, err := d.load(env, nil)
	if err != nil {
		return nil, nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, embedded, lookup, err := openStore(ctx, storeOptions{Config: cfg, DataDir: d.dataDir, Prepare: true, Logger: quiet})
	if err != nil {
		return nil, nil, fmt.Errorf("store: %w", err)
	}
	return st, func() {
		c := context.WithoutCancel(ctx)
		_ = st.Close(c)
		if lookup != nil {
			_ = lookup.Close()
		}
		if embedded != nil {
			_ = embedded.Stop(c)
		}
	}, nil
}
