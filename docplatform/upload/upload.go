// Package upload moves an uploaded document through its life, so that a
// document is never listed without its bytes, and bytes are never kept
// without a row that names them, whichever process dies or stalls at
// whichever moment:
//
//		  Receive          Keep                                   Delete
//		 ┌───────────┐ row  ┌────────┐ object ┌───────────┐ row   ┌───────────┐
//		 │ receiving ├─────▶│ stored ├───────▶│ completed ├──────▶│ committed │
//		 └─────┬─────┘      └───┬────┘        └─────┬─────┘       └─────┬─────┘
//		       │ body failed    │ a step failed     │                   │ deleted
//		       │                ▼                   ▼                   │
//		       │              ┌───────────────────────┐                 │
//		       │              │       discarding      │◀────────────────┘
//		       │              └───────────┬───────────┘
//		       ▼    staged bytes aborted  │ bytes removed, then the row
//		     gone ◀───────────────────────┘
//
//	  - receiving: the body streams into the store's staging area (a
//	    temporary file, an unfinished multipart upload); no row names it.
//	  - stored: every byte is staged and a row of the uploads table names
//	    the key and the document it will be; nothing lists it.
//	  - completed: the store made the bytes readable under the key (the
//	    rename, CompleteMultipartUpload); the row is still stored.
//	  - committed: one transaction moved the row into documents: it is
//	    listed, and its bytes were readable before it was.
//	  - discarding: the row says the bytes must go (a step failed, the
//	    document was deleted); it is not listed.
//	  - gone: the bytes were removed, and then the row.
//
// Every transition is made by Upload.to, in transitions.go; each change of
// a row is conditioned on the state it leaves, so when two processes move
// one upload (its replica and a sweeper) one wins and the other learns
// what became of it. Sweepers also claim an upload before taking it over
// (a compare-and-set on the row's time), so that only one of several
// finishes it: two completing one multipart upload at once could each see
// it, for a moment, neither staged nor readable, and discard it.
//
// What a process that dies between two states leaves, and what the
// Sweeper of any replica does with it once it is older than Abandoned
// (by then no request can still be working on it: a request's body has
// the server's read timeout, 60 s, and its completion a minute):
//
//   - receiving: staged bytes that no row names: removed.
//   - stored: a stored row with whole staged bytes: completed and
//     committed. The document appears although its uploader got no 201; a
//     retry of the upload makes a second document, with the same SHA-256.
//   - completed: a stored row whose object is readable: committed.
//   - committed: nothing to do.
//   - discarding: the bytes are removed, then the row.
//
// A sweeper also removes objects that no row names (left by versions
// before this package). The argument that this is safe, and that a
// sweeper never removes the bytes of an upload that lives: a row names a
// key before its object can exist (stored precedes completed), a key
// moves between the uploads and documents tables within one transaction,
// and a row is deleted only after its bytes are gone; the sweeper lists
// the store first and asks the database second, so a key it finds in no
// row has no future. Staged bytes without a row are removed only when
// older than Abandoned; a process that was merely stalled that long and
// carries on finds its staging gone and its upload fails, leaving
// nothing. So does one whose stored row a sweeper took over: it either
// finds the upload committed (and answers 201) or discarded (and fails).
package upload

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/filestore"
)

// Files is a document store: filestore.Store (a directory) or
// s3store.Store (object storage).
type Files interface {
	// Stage streams r into the staging area of a new key (see filestore).
	Stage(ctx context.Context, r io.Reader, max int64) (*filestore.Upload, error)
	// Finish makes key's staged bytes readable if they are whole (size
	// bytes), then checks that key holds size bytes (filestore.ErrNotFound
	// if not).
	Finish(ctx context.Context, key string, size int64) error
	// Discard removes key's staged bytes and then its readable bytes.
	Discard(ctx context.Context, key string) error
	// Staged calls fn with the key of each staging area begun before t.
	Staged(ctx context.Context, before time.Time, fn func(key string) error) error
	// Stored calls fn with the readable keys, up to batch at a time.
	Stored(ctx context.Context, batch int, fn func(keys []string) error) error
}

// Rows is the database's side of the life (sqlstore.Store). Each method
// that changes a row changes it only from the state named.
type Rows interface {
	// RecordUpload: receiving → stored. ErrNotFound: the group is gone.
	RecordUpload(ctx context.Context, d docplatform.Document) (docplatform.Document, error)
	// CommitUpload: stored → committed; a committed upload is returned as
	// it is. ErrConflict: it is discarding or gone; ErrNotFound: its group
	// was deleted.
	CommitUpload(ctx context.Context, key string) (docplatform.Document, error)
	// DiscardUpload: stored → discarding; committed reports that the
	// upload is a document instead.
	DiscardUpload(ctx context.Context, key string) (committed bool, err error)
	// DeleteDocument: committed → discarding.
	DeleteDocument(ctx context.Context, id string) error
	// ForgetUpload: discarding → gone, once the bytes are.
	ForgetUpload(ctx context.Context, key string) error
	// ClaimUpload makes the caller the one sweeper taking over an upload
	// StaleUploads showed as changed at since (it marks it changed now);
	// false when another process changed it first.
	ClaimUpload(ctx context.Context, key string, since time.Time) (bool, error)
	// StaleUploads lists up to limit rows in stored or discarding that
	// entered their state before t, oldest first.
	StaleUploads(ctx context.Context, before time.Time, limit int) ([]docplatform.UploadRecord, error)
	// KnownKeys says which keys a row names (documents or uploads), in
	// one snapshot.
	KnownKeys(ctx context.Context, keys []string) (map[string]bool, error)
}

// Options configure a Manager.
type Options struct {
	Logger *slog.Logger // nil: slog.Default()
	// Observe is told of each state an upload reaches, and of each part
	// of the body staged while it is receiving. Tests use it to stop a
	// process at a chosen step; it runs on the request's goroutine.
	Observe func(ctx context.Context, s State)
}

// Manager moves uploads through their life, and sweeps what processes
// that died left behind. It is safe for concurrent use.
type Manager struct {
	files   Files
	rows    Rows
	log     *slog.Logger
	observe func(context.Context, State)
}

// New returns a Manager of documents whose bytes are in files and whose
// rows are in rows.
func New(files Files, rows Rows, o Options) *Manager {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Observe == nil {
		o.Observe = func(context.Context, State) {}
	}
	return &Manager{files: files, rows: rows, log: o.Logger, observe: o.Observe}
}

// Upload is one upload on its way through its life.
type Upload struct {
	m      *Manager
	state  State
	staged *filestore.Upload // nil for an upload taken over by a sweeper
	doc    docplatform.Document
}

// State is where the upload is.
func (u *Upload) State() State { return u.state }

// Receive streams body (at most max bytes) into the store: the upload is
// receiving until it returns and staged when it returns. On an error
// nothing is left (see filestore's errors).
func (m *Manager) Receive(ctx context.Context, body io.Reader, max int64) (*Upload, error) {
	ctx = filestore.WithTrace(ctx, &filestore.Trace{PartStaged: func(int64) { m.observe(ctx, Receiving) }})
	staged, err := m.files.Stage(ctx, body, max)
	if err != nil {
		return nil, err
	}
	return &Upload{m: m, state: Receiving, staged: staged, doc: docplatform.Document{
		StorageKey: staged.Key, Size: staged.Size, SHA256: staged.SHA256, ContentType: staged.ContentType,
	}}, nil
}

// Key, Size, SHA256 and ContentType describe the received bytes.
func (u *Upload) Key() string         { return u.doc.StorageKey }
func (u *Upload) Size() int64         { return u.doc.Size }
func (u *Upload) SHA256() string      { return u.doc.SHA256 }
func (u *Upload) ContentType() string { return u.doc.ContentType }

// Abandon throws away an upload that is still receiving (the request
// failed before Keep); once Keep has begun it does nothing, so `defer
// u.Abandon()` is always safe.
func (u *Upload) Abandon() {
	if u.state == Receiving {
		u.to(context.Background(), Gone)
	}
}

// Keep makes the received upload the document d describes (GroupID,
// FileName, UploadedBy; the rest comes from the bytes): stored, completed,
// committed. If a step fails, the upload is discarded and the step's
// error returned — unless another process committed it meanwhile, which
// makes it a success. When the database cannot be reached to record the
// discard, the row stays stored and a sweeper finishes the upload later.
// ctx should outlive the client: a commit cut short is left to a sweeper.
func (u *Upload) Keep(ctx context.Context, d docplatform.Document) (docplatform.Document, error) {
	u.doc.ID, u.doc.GroupID, u.doc.FileName, u.doc.UploadedBy = d.ID, d.GroupID, d.FileName, d.UploadedBy
	if err := u.to(ctx, Stored); err != nil {
		u.to(ctx, Gone)
		return docplatform.Document{}, err
	}
	for _, next := range []State{Completed, Committed} {
		if err := u.to(ctx, next); err != nil {
			return u.fail(ctx, err)
		}
	}
	return u.doc, nil
}

// fail discards a kept upload after a step failed with cause; if another
// process committed it meanwhile, that is the upload's outcome.
func (u *Upload) fail(ctx context.Context, cause error) (docplatform.Document, error) {
	if u.state == Discarding || u.state == Gone {
		return docplatform.Document{}, cause // a sweeper is discarding it
	}
	if err := u.to(ctx, Discarding); err != nil {
		u.m.log.WarnContext(ctx, "upload: failed upload left for the sweeper",
			slog.String("key", u.doc.StorageKey), slog.String("error", err.Error()))
		return docplatform.Document{}, cause
	}
	if u.state == Committed {
		return u.doc, nil
	}
	if err := u.to(ctx, Gone); err != nil {
		u.m.log.WarnContext(ctx, "upload: failed upload's bytes left for the sweeper",
			slog.String("key", u.doc.StorageKey), slog.String("error", err.Error()))
	}
	return docplatform.Document{}, cause
}

// Delete removes the committed document d: its row leaves the listing
// (discarding), then its bytes go, then the row that named them. If the
// bytes cannot be removed now, a sweeper removes them later; the
// document is gone for readers either way.
func (m *Manager) Delete(ctx context.Context, d docplatform.Document) error {
	u := &Upload{m: m, state: Committed, doc: d}
	if err := u.to(ctx, Discarding); err != nil {
		return err
	}
	if err := u.to(ctx, Gone); err != nil {
		m.log.WarnContext(ctx, "upload: deleted document's bytes left for the sweeper",
			slog.String("document", d.ID), slog.String("error", err.Error()))
	}
	return nil
}

// ErrDiscarded is Keep's error when another process (a sweeper that took
// a stalled upload over) discarded the upload first.
var ErrDiscarded = errors.New("upload: the upload was discarded by another process")
