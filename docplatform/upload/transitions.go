package upload

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/govkit/govkit/docplatform"
)

// State is a step of an upload's life (see the package doc's drawing).
type State uint8

const (
	Receiving State = iota
	Stored
	Completed
	Committed
	Discarding
	Gone
)

var stateNames = [...]string{"receiving", "stored", "completed", "committed", "discarding", "gone"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// ParseState is the State named s (as String spells it).
func ParseState(s string) (State, bool) {
	i := slices.Index(stateNames[:], s)
	return State(i), i >= 0
}

// follows lists the states each state may move to.
var follows = [...][]State{
	Receiving:  {Stored, Gone},
	Stored:     {Completed, Discarding},
	Completed:  {Committed, Discarding},
	Committed:  {Discarding},
	Discarding: {Gone},
	Gone:       nil,
}

// to moves u to next, doing what the step takes. On an error u stays
// where it was, except where another process moved the upload first:
// then u is where that process left it (committed, or discarding) and the
// error says so when u did not get where it was going.
func (u *Upload) to(ctx context.Context, next State) error {
	if !slices.Contains(follows[u.state], next) {
		return fmt.Errorf("upload: %s cannot follow %s", next, u.state)
	}
	m, key := u.m, u.doc.StorageKey
	var err error
	switch next {
	case Stored:
		u.doc, err = m.rows.RecordUpload(ctx, u.doc)
	case Completed:
		if u.staged != nil {
			err = u.staged.Complete(ctx)
		} else {
			err = m.files.Finish(ctx, key, u.doc.Size)
		}
	case Committed:
		var d docplatform.Document
		d, err = m.rows.CommitUpload(ctx, key)
		if errors.Is(err, docplatform.ErrConflict) {
			u.state = Discarding
			return ErrDiscarded
		}
		if err == nil {
			u.doc = d
		}
	case Discarding:
		if u.state == Committed {
			err = m.rows.DeleteDocument(ctx, u.doc.ID)
			break
		}
		var committed bool
		committed, err = m.rows.DiscardUpload(ctx, key)
		if err == nil && committed {
			// Another process committed it first: it stays, as that
			// document.
			if u.doc, err = m.rows.CommitUpload(ctx, key); err == nil {
				u.state = Committed
				m.observe(ctx, Committed)
			}
			return err
		}
	case Gone:
		if u.state == Receiving {
			u.staged.Abort()
			break
		}
		if err = m.files.Discard(ctx, key); err == nil {
			err = m.rows.ForgetUpload(ctx, key)
		}
	}
	if err != nil {
		return err
	}
	u.state = next
	m.observe(ctx, next)
	return nil
}
