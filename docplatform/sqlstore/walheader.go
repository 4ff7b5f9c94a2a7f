package sqlstore

import (
	"runtime/debug"
	"sync/atomic"
	"unsafe"
)

// walHeaderWords is the size, in 32-bit words, of the first copy of the
// WAL-index header at the start of a WAL database's -shm file: 48 bytes
// (https://sqlite.org/walformat.html, "The WAL-Index Header"). Its layout
// is part of SQLite's file format, shared by every process and every
// SQLite version that opens the database, so it does not change.
const walHeaderWords = 12

// walHeader is a read-only shared mapping of a WAL database's -shm file,
// used to tell cheaply that nothing was committed: every commit appends
// frames to the WAL and then rewrites the WAL-index header (mxFrame grows;
// a WAL that starts over gets a new salt), and the writer does so before
// its commit returns. So two equal readings of the header's first copy
// mean no transaction committed between them, and a reading that differs
// from the last means one may have — the caller then asks SQLite (PRAGMA
// data_version), which stays the authority.
//
// The mapping stays valid while a connection of ours keeps the -shm file
// open (SQLite truncates it only when a connection opens the database with
// no other connection holding it); the access cache's watch connection
// does, for as long as the mapping lives. Should the file still shrink
// under it, read reports a fault instead of crashing the process.
type walHeader struct {
	data []byte
}

type walHeaderValue [walHeaderWords]uint32

// read returns the header's first copy; ok is false when the mapping
// faulted (and it should be dropped).
func (h *walHeader) read() (v walHeaderValue, ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	words := (*[walHeaderWords]uint32)(unsafe.Pointer(&h.data[0]))
	for i := range v {
		// Atomic loads: another process writes these words.
		v[i] = atomic.LoadUint32(&words[i])
	}
	return v, true
}
