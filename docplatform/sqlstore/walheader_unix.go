//go:build unix

package sqlstore

import (
	"fmt"
	"os"
	"syscall"
)

// mapWALHeader maps the first page of path (a -shm file) read-only and
// shared, so that another process's writes to it are seen.
func mapWALHeader(path string) (*walHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	// The mapping outlives the descriptor.
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < walHeaderWords*4 {
		return nil, fmt.Errorf("%s: %d bytes, too short for a WAL-index header", path, fi.Size())
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, walHeaderWords*4, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	return &walHeader{data: data}, nil
}

func (h *walHeader) close() error {
	if h == nil || h.data == nil {
		return nil
	}
	err := syscall.Munmap(h.data)
	h.data = nil
	return err
}
