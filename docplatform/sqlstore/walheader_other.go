//go:build !unix

package sqlstore

import "errors"

// mapWALHeader is unavailable here: the access cache then asks SQLite
// (PRAGMA data_version) on every check.
func mapWALHeader(string) (*walHeader, error) {
	return nil, errors.New("no shared mapping of the -shm file on this system")
}

func (h *walHeader) close() error { return nil }
