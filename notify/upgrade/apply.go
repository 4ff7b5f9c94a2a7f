package upgrade

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BackupDir is where a real run keeps the files it changes or removes,
// under the deployment directory: upgrade-backup/v<N>-to-v<N+1>/ followed by
// each file's own path (a second backup of the same step gets -2, -3, …).
const BackupDir = "upgrade-backup"

// applyChanges writes a step's plan all or nothing: every changed or
// removed file is first copied to the backup directory, new contents go to
// temporary files beside their targets, and only then are they renamed into
// place and removed files deleted. Any failure puts back what was already
// done and removes what was created, so the directory is as before.
func applyChanges(dir string, from int, changes []change) (backup string, err error) {
	abs := func(rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }

	var createdDirs []string // created by us, removed on failure (deepest last)
	mkdirs := func(d string) error {
		var missing []string
		for x := d; ; x = filepath.Dir(x) {
			if _, err := os.Stat(x); err == nil {
				break
			}
			missing = append(missing, x)
			if filepath.Dir(x) == x {
				break
			}
		}
		for i := len(missing) - 1; i >= 0; i-- {
			if err := os.Mkdir(missing[i], 0o755); err != nil {
				return err
			}
			createdDirs = append(createdDirs, missing[i])
		}
		return nil
	}
	var temps, backupFiles []string
	var done []change
	var undo func()
	abort := func(err error) (string, error) {
		if undo != nil {
			undo()
		}
		for _, t := range temps {
			os.Remove(t)
		}
		for _, b := range backupFiles {
			os.Remove(b)
		}
		for i := len(createdDirs) - 1; i >= 0; i-- {
			os.Remove(createdDirs[i])
		}
		return "", writeErr(dir, err)
	}

	// 1. Backups of every file that is replaced or removed.
	name := fmt.Sprintf("v%d-to-v%d", from, from+1)
	backup = filepath.Join(dir, BackupDir, name)
	for n := 2; ; n++ {
		if _, err := os.Stat(backup); os.IsNotExist(err) {
			break
		}
		backup = filepath.Join(dir, BackupDir, fmt.Sprintf("%s-%d", name, n))
	}
	for _, c := range changes {
		if c.old == nil {
			continue
		}
		dst := filepath.Join(backup, filepath.FromSlash(c.rel))
		if err := mkdirs(filepath.Dir(dst)); err != nil {
			return abort(err)
		}
		backupFiles = append(backupFiles, dst)
		if err := writeFileSync(dst, c.old, modeOf(abs(c.rel))); err != nil {
			return abort(err)
		}
	}

	// 2. New contents in temporary files beside their targets.
	type staged struct {
		tmp, dst string
		c        change
	}
	var stage []staged
	for _, c := range changes {
		if c.new == nil {
			continue
		}
		dst := abs(c.rel)
		if err := mkdirs(filepath.Dir(dst)); err != nil {
			return abort(err)
		}
		f, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".upgrade-*")
		if err != nil {
			return abort(err)
		}
		temps = append(temps, f.Name())
		_, werr := f.Write(c.new)
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Chmod(f.Name(), modeOf(dst))
		}
		if werr != nil {
			return abort(werr)
		}
		stage = append(stage, staged{f.Name(), dst, c})
	}

	// 3. Rename into place, then remove; undo on failure.
	undo = func() {
		for i := len(done) - 1; i >= 0; i-- {
			c := done[i]
			if c.old == nil {
				os.Remove(abs(c.rel))
			} else {
				_ = writeFileSync(abs(c.rel), c.old, modeOf(filepath.Join(backup, filepath.FromSlash(c.rel))))
			}
		}
	}
	for _, s := range stage {
		if err := os.Rename(s.tmp, s.dst); err != nil {
			return abort(err)
		}
		done = append(done, s.c)
	}
	for _, c := range changes {
		if c.new != nil {
			continue
		}
		if err := os.Remove(abs(c.rel)); err != nil && !os.IsNotExist(err) {
			return abort(err)
		}
		done = append(done, c)
	}
	return backup, nil
}

func modeOf(path string) os.FileMode {
	if st, err := os.Stat(path); err == nil {
		return st.Mode().Perm()
	}
	return 0o644
}

func writeFileSync(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// errWrite marks failures to write the deployment directory.
var errWrite = errors.New("cannot write the deployment directory")

func writeErr(dir string, err error) error {
	msg := err.Error()
	if errors.Is(err, os.ErrPermission) {
		msg = strings.TrimSpace(msg) + " (is the directory read-only, or owned by another user?)"
	}
	return fmt.Errorf("%w %s: %s; nothing was changed", errWrite, dir, msg)
}
