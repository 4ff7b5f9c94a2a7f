package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// session is what the scenarios send: the credentials of a signed-in
// ordinary member of one group, and that group's API key.
type session struct {
	base    string
	groupID string
	// cookies are the Cookie header the browser would send to /api/…
	// (access_token, id_token, csrf_token).
	cookies string
	// bearer is the same login's access token: the dev provider hands
	// Bearer clients the very token the cookie holds.
	bearer string
	apiKey string
}

// Demo logins of the development provider (devidp.DemoUsers).
const (
	adminUser, adminPassword, adminEmail = "admin", "Admin-123", "admin@govkit.test"
	memberUser, memberPassword           = "alice", "Alice-123"
)

// prepare sets the platform up through its API as people would: the admin
// signs in and is made system admin with grant-admin, creates a group, a
// workflow and the group's API key; alice signs in and is added to the
// group as MEMBER; the API key uploads o.docs small documents.
func prepare(ctx context.Context, p *platform, o options, log io.Writer) (session, error) {
	s := session{base: p.base}
	admin, err := signIn(ctx, p, adminUser, adminPassword)
	if err != nil {
		return s, err
	}
	if err := p.grantAdmin(ctx, adminEmail); err != nil {
		return s, err
	}
	var group struct{ ID string }
	if err := admin.call(ctx, "POST", "/api/groups", map[string]any{"name": "Load " + randomHex(4)}, 201, &group); err != nil {
		return s, err
	}
	s.groupID = group.ID
	wf := map[string]any{"groupId": s.groupID, "name": "Load workflow",
		"config": map[string]any{"steps": []any{map[string]any{"name": "review"}}}}
	if err := admin.call(ctx, "POST", "/api/workflows", wf, 201, nil); err != nil {
		return s, err
	}
	var key struct{ Key string }
	if err := admin.call(ctx, "POST", "/api/api-key", map[string]any{"groupId": s.groupID}, 201, &key); err != nil {
		return s, err
	}
	s.apiKey = key.Key

	alice, err := signIn(ctx, p, memberUser, memberPassword)
	if err != nil {
		return s, err
	}
	var me struct{ Sub string }
	if err := alice.call(ctx, "GET", "/api/auth/me", nil, 200, &me); err != nil {
		return s, err
	}
	if err := admin.call(ctx, "PUT", "/api/groups/"+s.groupID+"/members/"+me.Sub, map[string]any{"role": "MEMBER"}, 200, nil); err != nil {
		return s, err
	}
	s.cookies = alice.cookieHeader("/api/auth/me")
	s.bearer = alice.cookie("/api/auth/me", "access_token")
	if s.cookies == "" || s.bearer == "" {
		return s, fmt.Errorf("alice's sign-in left no access_token cookie")
	}

	fmt.Fprintf(log, "loadrun: seeding %d documents\n", o.docs)
	return s, seed(ctx, s, o.docs)
}

// seed uploads n small documents with the group's API key, a few at a time.
func seed(ctx context.Context, s session, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	next := make(chan int)
	c := &http.Client{Timeout: time.Minute}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				body, ctype := multipartFile(fmt.Sprintf("seed-%05d.txt", i), []byte(fmt.Sprintf("seed document %d\n", i)))
				req, _ := http.NewRequestWithContext(ctx, "POST", s.base+"/api/documents?groupId="+s.groupID, bytes.NewReader(body))
				req.Header.Set("Content-Type", ctype)
				req.Header.Set("X-API-Key", s.apiKey)
				if err := check(c.Do(req)); err != nil {
					errs <- fmt.Errorf("seeding document %d: %w", i, err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// multipartFile is a multipart/form-data body with one part named file,
// as the upload route expects, and its Content-Type.
func multipartFile(name string, content []byte) ([]byte, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	part, _ := w.CreateFormFile("file", name)
	part.Write(content)
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// browser is a signed-in cookie session.
type browser struct {
	base string
	c    *http.Client
}

var authRequestID = regexp.MustCompile(`name="authRequestID" value="([^"]+)"`)

// signIn signs a demo user in as a browser does: the platform's login
// endpoint redirects to the provider (authorization code + PKCE), whose
// form is posted, and the redirects lead back through the platform's
// callback, which sets the session cookies.
func signIn(ctx context.Context, p *platform, user, password string) (*browser, error) {
	jar, _ := cookiejar.New(nil)
	b := &browser{base: p.base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	req, _ := http.NewRequestWithContext(ctx, "GET", p.base+"/api/auth/login", nil)
	resp, err := b.c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sign-in as %s: %w", user, err)
	}
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	m := authRequestID.FindSubmatch(page)
	if resp.StatusCode != 200 || m == nil {
		return nil, fmt.Errorf("sign-in as %s: the provider's login form was not reached (%s at %s)", user, resp.Status, resp.Request.URL)
	}
	form := url.Values{"authRequestID": {string(m[1])}, "username": {user}, "password": {password}, "login": {"1"}}
	req, _ = http.NewRequestWithContext(ctx, "POST", p.idp.Issuer()+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = b.c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sign-in as %s: %w", user, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if end := resp.Request.URL; end.String() != p.base && end.String() != p.base+"/" || resp.StatusCode != 200 {
		return nil, fmt.Errorf("sign-in as %s ended at %s (%s), not the frontend\n%s", user, end, resp.Status, p.tail())
	}
	return b, nil
}

func (b *browser) cookie(path, name string) string {
	u, _ := url.Parse(b.base + path)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func (b *browser) cookieHeader(path string) string {
	u, _ := url.Parse(b.base + path)
	var parts []string
	for _, c := range b.c.Jar.Cookies(u) {
		parts = append(parts, c.Name+"="+c.Value)
	}
	return strings.Join(parts, "; ")
}

// call sends a JSON request with the session's cookies (and its CSRF token
// on writes), wants the given status and decodes the answer into out.
func (b *browser) call(ctx context.Context, method, path string, body any, want int, out any) error {
	var r io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		r = bytes.NewReader(j)
	}
	req, _ := http.NewRequestWithContext(ctx, method, b.base+path, r)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != "GET" {
		req.Header.Set("X-CSRF-Token", b.cookie("/", "csrf_token"))
	}
	resp, err := b.c.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s, want %d: %s", method, path, resp.Status, want, snippet(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

// check reads and closes a response, and fails on anything but 2xx.
func check(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", resp.Status, snippet(data))
	}
	return nil
}

func snippet(b []byte) string {
	if len(b) > 300 {
		b = b[:300]
	}
	return strings.TrimSpace(string(b))
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
