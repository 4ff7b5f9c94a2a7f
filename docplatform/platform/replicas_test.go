package platform_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform/devidp"
	"github.com/govkit/govkit/docplatform/s3store"
	"github.com/govkit/govkit/docplatform/sqlstore"
	"github.com/govkit/govkit/internal/testsvc"
)

// These tests run the platform as operators run it at scale: two real
// `docplatform serve` processes (this test binary started again as
// TestServeChild) behind a reverse proxy that alternates between them,
// sharing one PostgreSQL database, one Redis and one S3-compatible
// bucket, with the development OpenID provider in the test process.

// replica is one `docplatform serve` process.
type replica struct {
	cmd  *exec.Cmd
	url  *url.URL
	logs *syncBuffer
	done chan struct{}
	// lines are the lines it prints on standard output; stdin is its
	// standard input (see TestServeChild).
	lines chan string
	stdin io.WriteCloser
}

// lineWatch passes each complete line written to it to fn.
type lineWatch struct {
	mu   sync.Mutex
	part []byte
	fn   func(line string)
}

func (w *lineWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.fn(string(w.part[:i]))
		w.part = w.part[i+1:]
	}
}

// cluster is the replicas, the proxy in front of them and the shared
// parts behind them.
type cluster struct {
	t        *testing.T
	env      []string
	replicas []*replica
	proxy    *httptest.Server
	next     atomic.Uint64
	idp      *devidp.Server
	s3       testsvc.S3
	files    *s3store.Store
	mu       sync.Mutex
}

// replicaHeader pins a request to one replica (its index); without it the
// proxy alternates. servedBy names the replica that answered.
const (
	replicaHeader = "X-Test-Replica"
	servedBy      = "X-Test-Served-By"
)

func (c *cluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(c.next.Add(1)-1) % len(c.replicas)
	if pin := r.Header.Get(replicaHeader); pin != "" {
		i, _ = strconv.Atoi(pin)
	}
	c.mu.Lock()
	target := c.replicas[i].url
	c.mu.Unlock()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set(servedBy, strconv.Itoa(i))
			return nil
		},
	}
	rp.ServeHTTP(w, r)
}

func startCluster(t *testing.T, extra ...string) *cluster {
	t.Helper()
	pg := testsvc.RequirePostgres(t)
	rd := testsvc.RequireRedis(t)
	s3 := testsvc.RequireS3(t)
	c := newCluster(t, append([]string{
		"DATABASE_URL=" + pg, "REDIS_URL=redis://" + rd.Addr, "REDIS_KEY_PREFIX=" + rd.Prefix,
		"DOCUMENT_STORAGE=s3://" + s3.Bucket + "/documents", "AWS_ENDPOINT_URL=" + s3.Endpoint, "AWS_REGION=" + s3.Region,
		"AWS_ACCESS_KEY_ID=" + s3.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + s3.SecretAccessKey,
	}, extra...)...)
	c.s3 = s3
	c.replicas = []*replica{c.start(), c.start()}
	files, err := s3store.Open(context.Background(), s3store.Config{Bucket: s3.Bucket, Prefix: "documents/", Endpoint: s3.Endpoint,
		Region: s3.Region, AccessKeyID: s3.AccessKeyID, SecretAccessKey: s3.SecretAccessKey})
	if err != nil {
		t.Fatal(err)
	}
	c.files = files
	return c
}

// newCluster starts the proxy and the development provider, and keeps
// env (the database and storage) for the replicas c.start starts.
func newCluster(t *testing.T, env ...string) *cluster {
	t.Helper()
	c := &cluster{t: t}
	c.proxy = httptest.NewServer(c)
	t.Cleanup(c.proxy.Close)
	idp, err := devidp.Start(context.Background(), "127.0.0.1:0", devidp.Config{
		Clients: []devidp.Client{{ID: "platform", Secret: "platform-secret",
			RedirectURIs: []string{c.proxy.URL + "/api/auth/callback"}, PostLogoutRedirectURIs: []string{c.proxy.URL}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idp.Close() })
	c.idp = idp
	c.env = append([]string{
		"GOVKIT_SERVE_CHILD=1",
		"SSO_AUTH_SERVER_URL=" + idp.URL, "SSO_REALM=" + idp.Realm,
		"SSO_CLIENT_ID=platform", "SSO_CLIENT_SECRET=platform-secret",
		"SSO_REDIRECT_URI=" + c.proxy.URL + "/api/auth/callback", "FRONTEND_URL=" + c.proxy.URL,
		"COOKIE_SECRET=" + strings.Repeat("r", 40), "NODE_ENV=test",
		"TRUSTED_PROXIES=127.0.0.1/32",
		"DOCUMENT_MAX_BYTES=" + strconv.Itoa(32<<20),
	}, env...)
	return c
}

// start runs one more `docplatform serve` process, with extra
// variables besides the cluster's.
func (c *cluster) start(extra ...string) *replica {
	t := c.t
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
	cmd.Env = append(append(append(os.Environ(), "GOVKIT_SERVE_DIR="+t.TempDir()), c.env...), extra...)
	r := &replica{cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{}), lines: make(chan string, 16)}
	listening := make(chan string, 1)
	cmd.Stderr = io.MultiWriter(r.logs, &lineWatch{fn: func(line string) {
		if u, ok := logURL(line, "listening"); ok {
			select {
			case listening <- u:
			default:
			}
		}
	}})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if r.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			t.Logf("replica %d log:\n%s", cmd.Process.Pid, r.logs.String())
		}
	})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case r.lines <- sc.Text():
			default: // nobody is waiting for it
			}
		}
	}()
	select {
	case addr := <-listening:
		r.url, _ = url.Parse(addr)
	case <-r.done:
		t.Fatalf("replica exited at start:\n%s", r.logs.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("replica did not start:\n%s", r.logs.String())
	}
	return r
}

// browser is a user agent with its own cookies that sends every request
// through the proxy, pinned to a replica or not, from a client address.
type browser struct {
	c      *cluster
	client *http.Client
	pin    atomic.Int32 // replica index + 1; 0 alternates
	ip     string
}

func (c *cluster) browser(ip string) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{c: c, ip: ip}
	b.client = &http.Client{Jar: jar, Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if strings.HasPrefix(r.URL.String(), c.proxy.URL) {
			r = r.Clone(r.Context())
			if p := b.pin.Load(); p > 0 {
				r.Header.Set(replicaHeader, strconv.Itoa(int(p-1)))
			}
			if b.ip != "" {
				r.Header.Set("X-Forwarded-For", b.ip)
			}
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	return b
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// on pins the browser's next requests to replica i (-1: alternate).
func (b *browser) on(i int) *browser { b.pin.Store(int32(i + 1)); return b }

func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.c.proxy.URL)
	for _, ck := range b.client.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

type answer struct {
	status     int
	body       []byte
	servedBy   string
	retryAfter string
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("not JSON (%d): %s", a.status, a.body)
	}
	return m
}

// do sends a request through the proxy; writes carry the CSRF token.
func (b *browser) do(method, path string, body io.Reader, header map[string]string) answer {
	t := b.c.t
	t.Helper()
	req, err := http.NewRequest(method, b.c.proxy.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if method != "GET" {
		req.Header.Set("X-CSRF-Token", b.cookie("csrf_token"))
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, data, resp.Header.Get(servedBy), resp.Header.Get("Retry-After")}
}

var authRequestID = regexp.MustCompile(`name="authRequestID" value="([^"]+)"`)

// signIn goes through the platform's login, the provider's form and the
// callback, all on replica i.
func (b *browser) signIn(i int, user, password string) {
	t := b.c.t
	t.Helper()
	b.on(i)
	defer b.on(-1)
	resp, err := b.client.Get(b.c.proxy.URL + "/api/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := authRequestID.FindSubmatch(page)
	if m == nil {
		t.Fatalf("login form not reached: %s at %s", resp.Status, resp.Request.URL)
	}
	resp, err = b.client.PostForm(b.c.idp.Issuer()+"/login", url.Values{
		"authRequestID": {string(m[1])}, "username": {user}, "password": {password}, "login": {"1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Request.URL.String(); got != b.c.proxy.URL {
		t.Fatalf("sign-in as %s ended at %s", user, got)
	}
	if got := resp.Header.Get(servedBy); got != strconv.Itoa(i) {
		t.Fatalf("the callback was served by replica %q, want %d", got, i)
	}
}

// multipartBody is a document upload of data named name.
func multipartBody(name string, data []byte) (io.Reader, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", name)
	w.Write(data)
	mw.Close()
	return &buf, mw.FormDataContentType()
}

func (b *browser) upload(group, name string, data []byte, header map[string]string) answer {
	body, ct := multipartBody(name, data)
	h := map[string]string{"Content-Type": ct}
	for k, v := range header {
		h[k] = v
	}
	return b.do("POST", "/api/documents?groupId="+group, body, h)
}

func randomData(t *testing.T, n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestTwoReplicasWorkAsOne(t *testing.T) {
	c := startCluster(t, "THROTTLE_GLOBAL_LIMIT=40", "API_KEY_MAX_FAILED_ATTEMPTS=4", "THROTTLE_AUTH_LIMIT=1000", "THROTTLE_AUTH_REFRESH_LIMIT=1000")
	admin := devidp.DemoUsers()[0]
	alice := devidp.DemoUsers()[1]
	grantAdmin(t, c, admin.Subject)

	// Signed in through replica 0; the session works on replica 1.
	ab := c.browser("")
	ab.signIn(0, admin.Username, admin.Password)
	if a := ab.on(1).do("GET", "/api/auth/me", nil, nil); a.status != 200 || a.servedBy != "1" || a.json(t)["isSystemAdmin"] != true {
		t.Fatalf("me on replica 1 after signing in on 0: %d %s", a.status, a.body)
	}
	// Refreshed through replica 1; the new cookies work on replica 0.
	oldAccess := ab.cookie("access_token")
	if a := ab.on(1).do("POST", "/api/auth/refresh", nil, nil); a.status != 200 {
		t.Fatalf("refresh on replica 1: %d %s", a.status, a.body)
	}
	if ab.cookie("access_token") == oldAccess {
		t.Fatal("refresh set no new access token")
	}
	if a := ab.on(0).do("GET", "/api/auth/me", nil, nil); a.status != 200 {
		t.Fatalf("me on replica 0 after refreshing on 1: %d %s", a.status, a.body)
	}

	g := ab.on(0).do("POST", "/api/groups", strings.NewReader(`{"name":"Scale"}`), nil)
	if g.status != 201 {
		t.Fatalf("create group: %d %s", g.status, g.body)
	}
	group := g.json(t)["id"].(string)

	// Uploaded through one replica, downloaded through the other; a
	// document of several parts is streamed to the store and back.
	small := append([]byte("%PDF-1.7\n"), randomData(t, 5000)...)
	big := randomData(t, 12<<20+17)
	var docs []string
	for i, data := range [][]byte{small, big} {
		up := ab.on(1).upload(group, fmt.Sprintf("doc%d.pdf", i), data, nil)
		if up.status != 201 {
			t.Fatalf("upload on replica 1: %d %s", up.status, up.body)
		}
		id := up.json(t)["id"].(string)
		docs = append(docs, id)
		down := ab.on(0).do("GET", "/api/documents/"+id+"/content", nil, nil)
		if down.status != 200 || down.servedBy != "0" || !bytes.Equal(down.body, data) {
			t.Fatalf("download on replica 0: %d, %d bytes, want %d", down.status, len(down.body), len(data))
		}
	}
	// An upload over DOCUMENT_MAX_BYTES leaves neither a row nor an object.
	if a := ab.on(0).upload(group, "huge.bin", randomData(t, 32<<20+1), nil); a.status != 413 {
		t.Fatalf("oversized upload: %d %s", a.status, a.body)
	}
	c.expectDocuments(ab, group, len(docs))

	// An API key made on one replica works on the other.
	k := ab.on(0).do("POST", "/api/api-key", strings.NewReader(`{"groupId":"`+group+`"}`), nil)
	if k.status != 201 {
		t.Fatalf("create API key: %d %s", k.status, k.body)
	}
	key := k.json(t)["key"].(string)
	machine := c.browser("")
	if a := machine.on(1).upload(group, "by-key.txt", []byte("from a machine"), map[string]string{"X-API-Key": key}); a.status != 201 {
		t.Fatalf("upload with the API key on replica 1: %d %s", a.status, a.body)
	} else {
		docs = append(docs, a.json(t)["id"].(string))
	}

	// A review lock taken on one replica is held on the other.
	bb := c.browser("")
	bb.signIn(1, alice.Username, alice.Password)
	if a := ab.on(1).do("PUT", "/api/groups/"+group+"/members/"+alice.Subject, strings.NewReader(`{"role":"MEMBER"}`), nil); a.status/100 != 2 {
		t.Fatalf("add alice: %d %s", a.status, a.body)
	}
	if a := ab.on(0).do("POST", "/api/documents/"+docs[0]+"/reviews", nil, nil); a.status != 201 {
		t.Fatalf("start review on replica 0: %d %s", a.status, a.body)
	}
	if a := bb.on(1).do("POST", "/api/documents/"+docs[0]+"/reviews", nil, nil); a.status != 409 {
		t.Fatalf("second reviewer on replica 1: %d %s, want 409", a.status, a.body)
	}
	if a := bb.on(0).do("POST", "/api/documents/"+docs[1]+"/reviews", nil, nil); a.status != 201 {
		t.Fatalf("alice reviews another document: %d %s", a.status, a.body)
	}

	// One per-IP budget across the replicas: 40 requests from a client,
	// alternating, then both refuse.
	visitor := c.browser("203.0.113.7")
	for i := range 40 {
		if a := visitor.do("GET", "/api/auth/me", nil, nil); a.status != 401 {
			t.Fatalf("request %d of the budget: %d", i+1, a.status)
		}
	}
	for i := range 2 {
		if a := visitor.on(i).do("GET", "/api/auth/me", nil, nil); a.status != 429 {
			t.Fatalf("41st request on replica %d: %d, want 429", i, a.status)
		}
	}

	// One API-key failure budget: 4 failures spread over both replicas,
	// then the next attempt is refused before any key comparison, even
	// with the right key, on either.
	guesser := c.browser("203.0.113.8")
	for i := range 4 {
		if a := guesser.on(i%2).do("GET", "/api/documents", nil, map[string]string{"X-API-Key": "gk_wrong" + strconv.Itoa(i)}); a.status != 401 && a.status != 403 {
			t.Fatalf("bad key %d: %d %s", i+1, a.status, a.body)
		}
	}
	for i := range 2 {
		if a := guesser.on(i).do("GET", "/api/documents", nil, map[string]string{"X-API-Key": key}); a.status != 429 {
			t.Fatalf("after 4 failures, replica %d: %d, want 429", i, a.status)
		}
	}
}

// Killing a replica with SIGKILL, even in the middle of an upload, loses
// no upload that was answered 201, and the upload it was receiving leaves
// neither a row nor an object.
func TestKillingAReplicaLosesNoCommittedUpload(t *testing.T) {
	c := startCluster(t, "THROTTLE_AUTH_LIMIT=1000")
	admin := devidp.DemoUsers()[0]
	grantAdmin(t, c, admin.Subject)
	ab := c.browser("")
	ab.signIn(0, admin.Username, admin.Password)
	g := ab.do("POST", "/api/groups", strings.NewReader(`{"name":"Crash"}`), nil)
	if g.status != 201 {
		t.Fatalf("create group: %d %s", g.status, g.body)
	}
	group := g.json(t)["id"].(string)

	committed := map[string][]byte{}
	for i := range 4 {
		data := randomData(t, 1000+i*(3<<20))
		a := ab.on(i%2).upload(group, fmt.Sprintf("c%d.bin", i), data, nil)
		if a.status != 201 {
			t.Fatalf("upload %d: %d %s", i, a.status, a.body)
		}
		committed[a.json(t)["id"].(string)] = data
	}

	// An upload to replica 0 that is cut by the kill: once the store holds
	// a part of it, the replica dies.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	ab.on(0)
	cut := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("POST", c.proxy.URL+"/api/documents?groupId="+group, pr)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("X-CSRF-Token", ab.cookie("csrf_token"))
		resp, err := ab.client.Do(req)
		if err != nil {
			cut <- answer{status: -1}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cut <- answer{status: resp.StatusCode, body: body}
	}()
	fw, _ := mw.CreateFormFile("file", "cut.bin")
	if _, err := fw.Write(randomData(t, s3store.MinPartSize+1000)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, incomplete, err := c.files.Files(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if incomplete > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cut upload never reached the store")
		}
		time.Sleep(20 * time.Millisecond)
	}
	victim := c.replicas[0]
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	pw.CloseWithError(io.ErrClosedPipe)
	if a := <-cut; a.status == 201 {
		t.Fatalf("the cut upload was answered 201: %s", a.body)
	}

	// Everything answered 201 is listed and readable on the survivor, and
	// the cut upload left no row and no object.
	ab.on(1)
	c.expectDocuments(ab, group, len(committed))
	for id, data := range committed {
		if a := ab.do("GET", "/api/documents/"+id+"/content", nil, nil); a.status != 200 || !bytes.Equal(a.body, data) {
			t.Fatalf("document %s after the kill: %d, %d bytes", id, a.status, len(a.body))
		}
	}

	// A new process takes the dead one's place and serves the same data.
	// (The cut upload's parts stay in the store as an unfinished multipart
	// upload, invisible to readers, until a replica's sweep finds it older
	// than upload.Abandoned: TestKillingAReplicaAtEachStepOfAnUpload.)
	fresh := c.start()
	c.mu.Lock()
	c.replicas[0] = fresh
	c.mu.Unlock()
	ab.on(0)
	for id, data := range committed {
		if a := ab.do("GET", "/api/documents/"+id+"/content", nil, nil); a.status != 200 || !bytes.Equal(a.body, data) || a.servedBy != "0" {
			t.Fatalf("document %s on the restarted replica: %d, %d bytes", id, a.status, len(a.body))
		}
	}
}

// expectDocuments checks that the group lists n documents and the store
// holds exactly n objects.
func (c *cluster) expectDocuments(b *browser, group string, n int) {
	t := c.t
	t.Helper()
	a := b.do("GET", "/api/documents?groupId="+group, nil, nil)
	if a.status != 200 {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	if got := len(a.json(t)["documents"].([]any)); got != n {
		t.Fatalf("%d documents listed, want %d", got, n)
	}
	objects, _, err := c.files.Files(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if objects != n {
		t.Fatalf("%d objects in the store, want %d", objects, n)
	}
}

// grantAdmin makes sub a system admin, as `govkit docplatform grant-admin
// --sub` does.
func grantAdmin(t *testing.T, c *cluster, sub string) {
	t.Helper()
	var dbURL string
	for _, kv := range c.env {
		if v, ok := strings.CutPrefix(kv, "DATABASE_URL="); ok {
			dbURL = v
		}
	}
	st, err := sqlstore.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.GrantAdmin(context.Background(), "", sub); err != nil {
		t.Fatal(err)
	}
}
