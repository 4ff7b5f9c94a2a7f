package mailcatcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Open returns a Catcher that keeps what it catches in opts.Dir as well,
// one JSON file per message (mail-<id>.json, sms-<id>.json), and starts
// with what an earlier run left there, within the bounds of opts (the
// oldest beyond them are removed). A file that cannot be read is skipped
// with a warning: a catcher must start even when a file was cut short.
func Open(opts Options) (*Catcher, error) {
	if opts.Dir == "" {
		return nil, errors.New("mail catcher: Open needs Options.Dir")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("mail catcher: %w", err)
	}
	c := newCatcher(opts)
	entries, err := os.ReadDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("mail catcher: %w", err)
	}
	type file struct {
		kind string
		id   int64
		name string
	}
	var files []file
	for _, e := range entries {
		kind, rest, ok := strings.Cut(e.Name(), "-")
		idText, isJSON := strings.CutSuffix(rest, ".json")
		id, err := strconv.ParseInt(idText, 10, 64)
		if !ok || !isJSON || err != nil || (kind != "mail" && kind != "sms") {
			continue
		}
		files = append(files, file{kind, id, e.Name()})
	}
	slices.SortFunc(files, func(a, b file) int { return int(a.id - b.id) })
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(opts.Dir, f.name))
		if err != nil {
			c.opts.Logger.Warn("mail catcher: skipping a kept message", "file", f.name, "error", err)
			continue
		}
		switch f.kind {
		case "mail":
			var sm savedMail
			if err := json.Unmarshal(data, &sm); err != nil || sm.ID != f.id {
				c.opts.Logger.Warn("mail catcher: skipping a kept message", "file", f.name, "error", err)
				continue
			}
			m := parse(sm.Raw)
			m.ID, m.Envelope, m.Received, m.Size, m.raw = sm.ID, sm.Envelope, sm.Received, len(sm.Raw), sm.Raw
			c.nextID = max(c.nextID, m.ID)
			c.keepMail(m)
		case "sms":
			var s SMS
			if err := json.Unmarshal(data, &s); err != nil || s.ID != f.id {
				c.opts.Logger.Warn("mail catcher: skipping a kept message", "file", f.name, "error", err)
				continue
			}
			c.nextSMSID = max(c.nextSMSID, s.ID)
			c.keepSMS(s)
		}
	}
	return c, nil
}

// savedMail is a caught message as kept in Dir: what came over SMTP.
type savedMail struct {
	ID       int64     `json:"id"`
	Received time.Time `json:"received"`
	Envelope Envelope  `json:"envelope"`
	Raw      []byte    `json:"raw"`
}

func mailFile(id int64) string { return fmt.Sprintf("mail-%012d.json", id) }
func smsFile(id int64) string  { return fmt.Sprintf("sms-%012d.json", id) }

// saveMail and saveSMS keep a message in Dir; callers hold c.mu. A write
// that fails costs only the copy on disk, so it is logged, not returned:
// the SMTP client has been told the message was accepted.
func (c *Catcher) saveMail(m *Mail) {
	c.save(mailFile(m.ID), savedMail{m.ID, m.Received, m.Envelope, m.raw})
}

func (c *Catcher) saveSMS(s SMS) { c.save(smsFile(s.ID), s) }

func (c *Catcher) save(name string, v any) {
	if c.opts.Dir == "" {
		return
	}
	data, err := json.Marshal(v)
	if err == nil {
		err = writeAtomic(filepath.Join(c.opts.Dir, name), data)
	}
	if err != nil {
		c.opts.Logger.Error("mail catcher: message not kept on disk", "file", name, "error", err)
	}
}

// forget removes a dropped message's file; callers hold c.mu.
func (c *Catcher) forget(name string) {
	if c.opts.Dir == "" {
		return
	}
	if err := os.Remove(filepath.Join(c.opts.Dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.opts.Logger.Warn("mail catcher: dropped message left on disk", "file", name, "error", err)
	}
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".caught-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
