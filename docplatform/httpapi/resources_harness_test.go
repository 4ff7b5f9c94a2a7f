package httpapi_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/filestore"
	"github.com/govkit/govkit/docplatform/httpapi"
	uploads "github.com/govkit/govkit/docplatform/upload"
)

// resStore is the real store carrying the resources' configuration, as
// httpapi.WithResources does in production.
type resStore struct {
	sqlTestStore
	res httpapi.Resources
}

func (s resStore) ResourceOptions() httpapi.Resources { return s.res }

// caller is one of the access levels the resource tests try.
type caller string

const (
	anon       caller = "anonymous"
	member     caller = "member"
	groupAdmin caller = "group admin"
	other      caller = "member of another group"
	sysAdmin   caller = "system admin"
	groupKey   caller = "API key of the group"
	otherKey   caller = "API key of another group"
)

var callers = []caller{anon, member, groupAdmin, other, sysAdmin, groupKey, otherKey}

// rworld is the chain tests' world with resources: alpha has ada (ADMIN)
// and bob (MEMBER) and an API key; beta has carol (MEMBER) and its own key;
// sam is a system admin in no group.
type rworld struct {
	*world
	st      resStore
	files   *filestore.Store
	betaKey string
}

type rOpt func(*httpapi.Resources)

func newRWorld(t testing.TB, open func(testing.TB) testStore, opts ...rOpt) *rworld {
	t.Helper()
	return newRWorldSetup(t, open, nil, opts...)
}

// newRWorldSetup is newRWorld with knobs of the harness (rate limits, …).
func newRWorldSetup(t testing.TB, open func(testing.TB) testStore, knobs []func(*setup), opts ...rOpt) *rworld {
	t.Helper()
	var rs resStore
	files, err := filestore.Open(t.TempDir())
	must(t, err)
	res := httpapi.Resources{Files: files, MaxUpload: 64 << 10, ReviewLock: time.Hour}
	for _, o := range opts {
		o(&res)
	}
	w := newWorld(t, append(knobs, func(s *setup) {
		st := open(s.t).(sqlTestStore)
		res.Uploads = uploads.New(files, st, uploads.Options{})
		rs = resStore{st, res}
		s.store = rs
		s.routeMaxBody = httpapi.ResourceBodyLimits(res)
	})...)
	rw := &rworld{world: w, st: rs, files: files}
	w.store.setMember(carol.Subject, w.beta, docplatform.RoleMember)
	rw.betaKey = w.createKey(w.sysadmin, w.beta)
	return rw
}

func (rw *rworld) client(c caller) *http.Client {
	switch c {
	case member:
		return rw.member
	case groupAdmin:
		return rw.admin
	case other:
		return rw.outsider
	case sysAdmin:
		return rw.sysadmin
	}
	return nil
}

// userOf is the user id behind a person caller.
func userOf(c caller) string {
	switch c {
	case member:
		return bob.Subject
	case groupAdmin:
		return ada.Subject
	case other:
		return carol.Subject
	case sysAdmin:
		return sam.Subject
	}
	return ""
}

// call sends r as c: cookie clients add the CSRF header on writes, key
// callers send their key.
func (rw *rworld) call(c caller, r request) *http.Response {
	rw.t.Helper()
	h := map[string]string{}
	for k, v := range r.header {
		h[k] = v
	}
	switch c {
	case groupKey:
		h["X-API-Key"] = rw.key
	case otherKey:
		h["X-API-Key"] = rw.betaKey
	case anon:
	default:
		if r.method != "GET" {
			h["X-CSRF-Token"] = rw.csrf(rw.client(c))
		}
	}
	r.header = h
	return rw.do(rw.client(c), r)
}

// doc stores a document with content in group g, as an upload would.
func (rw *rworld) doc(g, name, content string) docplatform.Document {
	rw.t.Helper()
	up, err := uploads.New(rw.files, rw.st, uploads.Options{}).Receive(context.Background(), strings.NewReader(content), 1<<20)
	must(rw.t, err)
	d, err := up.Keep(context.Background(), docplatform.Document{GroupID: g, FileName: name, UploadedBy: "test"})
	must(rw.t, err)
	return d
}

func (rw *rworld) workflow(g, name string) docplatform.Workflow {
	rw.t.Helper()
	wf, _, err := rw.st.CreateWorkflow(context.Background(), docplatform.Workflow{GroupID: g, Name: name, CreatedBy: "test"}, []byte(`{"steps":["ocr"]}`))
	must(rw.t, err)
	return wf
}

// upload builds a multipart upload request of one file part.
func upload(group, filename string, content []byte) request {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", filename)
	fw.Write(content)
	mw.Close()
	return request{method: "POST", path: "/api/documents?groupId=" + group, body: b.String(), header: map[string]string{"Content-Type": mw.FormDataContentType()}}
}

func jsonBody(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func uniqName(p string) string { return p + "-" + rand.Text()[:10] }
