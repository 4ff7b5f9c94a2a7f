package platform_test

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/docplatform/filestore"
	"github.com/govkit/govkit/docplatform/s3store"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/docplatform/upload"
	"github.com/govkit/govkit/internal/testsvc"
)

// killRig is a platform whose replica 0 can be killed at a chosen step of
// an upload, with what the test needs to look behind the API: the
// database and the document store the replicas share.
type killRig struct {
	c     *cluster
	rows  *sqlstore.Store
	files interface {
		upload.Files
		Open(ctx context.Context, key string, size int64) (io.ReadSeekCloser, error)
	}
	// count is the store's objects and staged uploads.
	count func() (objects, staged int)
	group string
	key   string // the group's API key
}

// The upload's steps at which a replica is killed, and what a sweep makes
// of the upload afterwards: kept (listed, whole) or gone.
var killSteps = []struct {
	at        upload.State
	keptAfter bool
	listed    bool // before the sweep
}{
	{upload.Receiving, false, false}, // during the body: a part is staged
	{upload.Stored, true, false},     // after the parts: its row is stored
	{upload.Completed, true, false},  // after completion: the object is readable
	{upload.Committed, true, true},   // after the commit: listed, not yet answered
}

// TestKillingAReplicaAtEachStepOfAnUpload kills a real `docplatform serve`
// process with SIGKILL at each step of an upload, stopped there by the
// test hook (not by timing), on PostgreSQL + S3 and on SQLite + a
// directory. After the kill, and after a new process has started on the
// same data, every listed document's bytes are readable; then a sweep (as
// any replica runs) finishes or removes what the dead process left, and
// the listing and the store hold exactly the same documents.
func TestKillingAReplicaAtEachStepOfAnUpload(t *testing.T) {
	rigs := []struct {
		name string
		make func(t *testing.T) *killRig
	}{
		{"postgres+s3", func(t *testing.T) *killRig {
			pg := testsvc.RequirePostgres(t)
			s3 := testsvc.RequireS3(t)
			c := newCluster(t, "DATABASE_URL="+pg,
				"DOCUMENT_STORAGE=s3://"+s3.Bucket+"/documents", "AWS_ENDPOINT_URL="+s3.Endpoint, "AWS_REGION="+s3.Region,
				"AWS_ACCESS_KEY_ID="+s3.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+s3.SecretAccessKey)
			files, err := s3store.Open(context.Background(), s3store.Config{Bucket: s3.Bucket, Prefix: "documents/", Endpoint: s3.Endpoint,
				Region: s3.Region, AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey})
			if err != nil {
				t.Fatal(err)
			}
			return newKillRig(t, c, pg, files, func() (int, int) {
				o, s, err := files.Files(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return o, s
			})
		}},
		{"sqlite+disk", func(t *testing.T) *killRig {
			dir := t.TempDir()
			db, docs := filepath.Join(dir, "platform.db"), filepath.Join(dir, "documents")
			c := newCluster(t, "DATABASE_URL="+db, "DOCUMENT_STORAGE="+docs)
			files, err := filestore.Open(docs)
			if err != nil {
				t.Fatal(err)
			}
			return newKillRig(t, c, db, files, func() (int, int) {
				o, s, err := files.Files()
				if err != nil {
					t.Fatal(err)
				}
				return o, s
			})
		}},
	}
	for _, rm := range rigs {
		t.Run(rm.name, func(t *testing.T) {
			k := rm.make(t)
			want := map[string][]byte{} // documents that must be listed, whole
			for _, step := range killSteps {
				t.Run("killed when "+step.at.String(), func(t *testing.T) {
					data := randomData(t, s3store.MinPartSize+(1<<20)) // two parts
					name := "killed-" + step.at.String() + ".bin"
					k.killDuring(t, step.at, name, data)

					// A new process takes the dead one's place; every listed
					// document is readable, through it and the other.
					k.c.replace(0)
					got := k.expectReadable(t, name, data)
					if got != step.listed {
						t.Fatalf("listed after the kill: %v, want %v", got, step.listed)
					}

					// A sweep, as every replica runs (here without waiting
					// for upload.Abandoned), finishes or removes what was left.
					n, err := upload.New(k.files, k.rows, upload.Options{}).Sweep(context.Background(), time.Now().Add(time.Minute), true)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("sweep: %+v", n)
					if got := k.expectReadable(t, name, data); got != step.keptAfter {
						t.Fatalf("listed after the sweep: %v, want %v", got, step.keptAfter)
					}
					if step.keptAfter {
						want[name] = data
					}
					k.expectExactly(t, want)
				})
			}
			// A replica that only stalled (stopped by the hook, not
			// killed) while two sweepers take its upload over, as they
			// would after upload.Abandoned, and then carries on: the
			// upload ends either answered 201 and listed whole (the
			// sweepers committed it and the replica learns so) or failed
			// and gone — never listed without its bytes, never answered
			// 201 without being listed.
			for _, step := range []struct {
				at   upload.State
				kept bool
			}{{upload.Receiving, false}, {upload.Stored, true}, {upload.Completed, true}} {
				t.Run("stalled when "+step.at.String()+" while two sweepers take over", func(t *testing.T) {
					data := randomData(t, s3store.MinPartSize+(1<<20))
					name := "stalled-" + step.at.String() + ".bin"
					victim, answered := k.stopAt(t, step.at, name, data)
					k.sweepTwice(t)
					if _, err := io.WriteString(victim.stdin, "go on\n"); err != nil {
						t.Fatal(err)
					}
					status := <-answered
					if got := k.expectReadable(t, name, data); got != (status == http.StatusCreated) || got != step.kept {
						t.Fatalf("answered %d, listed %v; want listed %v, and 201 exactly when listed", status, got, step.kept)
					}
					if step.kept {
						want[name] = data
					}
					k.sweepTwice(t)
					k.expectExactly(t, want)
				})
			}
		})
	}
}

func newKillRig(t *testing.T, c *cluster, dbURL string, files interface {
	upload.Files
	Open(ctx context.Context, key string, size int64) (io.ReadSeekCloser, error)
}, count func() (int, int)) *killRig {
	t.Helper()
	c.replicas = []*replica{c.start(), c.start()}
	rows, err := sqlstore.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rows.Close() })
	admin := devidp.DemoUsers()[0]
	grantAdmin(t, c, admin.Subject)
	ab := c.browser("")
	ab.signIn(0, admin.Username, admin.Password)
	g := ab.do("POST", "/api/groups", strings.NewReader(`{"name":"Killed"}`), nil)
	if g.status != 201 {
		t.Fatalf("create group: %d %s", g.status, g.body)
	}
	group := g.json(t)["id"].(string)
	key := ab.do("POST", "/api/api-key", strings.NewReader(`{"groupId":"`+group+`"}`), nil)
	if key.status != 201 {
		t.Fatalf("create API key: %d %s", key.status, key.body)
	}
	return &killRig{c: c, rows: rows, files: files, count: count, group: group, key: key.json(t)["key"].(string)}
}

// killDuring starts replica 0 again with the hook set to stop at step,
// uploads data to it, and SIGKILLs it once it has stopped there.
func (k *killRig) killDuring(t *testing.T, at upload.State, name string, data []byte) {
	t.Helper()
	victim, answered := k.stopAt(t, at, name, data)
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	if status := <-answered; status == http.StatusCreated {
		t.Fatalf("an upload killed when %s was answered 201", at)
	}
}

// stopAt starts replica 0 again with the hook set to stop at step and
// uploads data to it; it returns once the replica has stopped there, with
// the channel the upload's status will come on (-1: no answer).
func (k *killRig) stopAt(t *testing.T, at upload.State, name string, data []byte) (*replica, chan int) {
	t.Helper()
	c := k.c
	victim := c.start("GOVKIT_TEST_UPLOAD_STOP=" + at.String())
	c.mu.Lock()
	old := c.replicas[0]
	c.replicas[0] = victim
	c.mu.Unlock()
	old.cmd.Process.Kill()
	<-old.done

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(data)
	mw.Close()
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", c.proxy.URL+"/api/documents?groupId="+k.group, &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("X-API-Key", k.key)
		req.Header.Set(replicaHeader, "0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	select {
	case line := <-victim.lines:
		if line != "upload stopped at "+at.String() {
			t.Fatalf("the replica said %q", line)
		}
	case status := <-answered:
		t.Fatalf("the upload was answered %d without stopping at %s", status, at)
	case <-victim.done:
		t.Fatalf("the replica exited:\n%s", victim.logs.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("the upload never reached %s", at)
	}
	return victim, answered
}

// sweepTwice runs two sweeps at once, as two replicas would, taking over
// everything however young.
func (k *killRig) sweepTwice(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := upload.New(k.files, k.rows, upload.Options{}).Sweep(context.Background(), time.Now().Add(time.Minute), true)
			if err != nil {
				t.Error(err)
			}
			t.Logf("sweep: %+v", n)
		}()
	}
	wg.Wait()
}

// replace starts a new process in place of replica i (stopping the old
// one if it still runs).
func (c *cluster) replace(i int) {
	fresh := c.start()
	c.mu.Lock()
	old := c.replicas[i]
	c.replicas[i] = fresh
	c.mu.Unlock()
	old.cmd.Process.Kill()
	<-old.done
}

// expectReadable checks, through both replicas, that every listed
// document's bytes are readable and whole (the one named name being
// data), and reports whether name is listed.
func (k *killRig) expectReadable(t *testing.T, name string, data []byte) bool {
	t.Helper()
	found := false
	for i := range k.c.replicas {
		machine := k.c.browser("").on(i)
		a := machine.do("GET", "/api/documents?groupId="+k.group+"&limit=200", nil, map[string]string{"X-API-Key": k.key})
		if a.status != 200 {
			t.Fatalf("list on replica %d: %d %s", i, a.status, a.body)
		}
		found = false
		for _, d := range a.json(t)["documents"].([]any) {
			doc := d.(map[string]any)
			content := machine.do("GET", "/api/documents/"+doc["id"].(string)+"/content", nil, map[string]string{"X-API-Key": k.key})
			if content.status != 200 || int64(len(content.body)) != int64(doc["size"].(float64)) {
				t.Fatalf("listed document %s on replica %d: %d, %d bytes: %s", doc["fileName"], i, content.status, len(content.body), content.body)
			}
			if doc["fileName"] == name {
				found = true
				if !bytes.Equal(content.body, data) {
					t.Fatalf("%s is listed with other bytes", name)
				}
			}
		}
	}
	return found
}

// expectExactly checks that the group lists exactly the documents named
// in want, that the store holds their objects and nothing else (no
// object, no staged upload beside them), and that no upload row is left.
func (k *killRig) expectExactly(t *testing.T, want map[string][]byte) {
	t.Helper()
	docs, err := k.rows.ListDocuments(context.Background(), docplatform.DocumentFilter{GroupIDs: []string{k.group}, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(want) {
		names := []string{}
		for _, d := range docs {
			names = append(names, d.FileName)
		}
		t.Fatalf("listed %v, want %d documents", names, len(want))
	}
	for _, d := range docs {
		if _, ok := want[d.FileName]; !ok {
			t.Fatalf("%s is listed", d.FileName)
		}
	}
	if objects, staged := k.count(); objects != len(want) || staged != 0 {
		t.Fatalf("the store holds %d objects and %d staged uploads; want %d and 0", objects, staged, len(want))
	}
	if left, err := k.rows.StaleUploads(context.Background(), time.Now().Add(time.Hour), 10); err != nil || len(left) != 0 {
		t.Fatalf("upload rows left: %v %v", left, err)
	}
}
