package dev_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform/dev"
)

// groupID is the id of the one group the signed-in user belongs to.
func (s *stack) groupID(t *testing.T, c *http.Client) string {
	t.Helper()
	resp := s.do(t, c, "GET", "/api/groups", nil)
	var body struct {
		Groups []struct{ ID, Name, Role string }
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 200 || len(body.Groups) != 1 {
		t.Fatalf("GET /api/groups: %s %+v", resp.Status, body)
	}
	return body.Groups[0].ID
}

func getJSON(t *testing.T, s *stack, c *http.Client, path string, header map[string]string, v any) int {
	t.Helper()
	resp := s.do(t, c, "GET", path, header)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
	}
	return resp.StatusCode
}

// The first start of a data directory seeds the demo world through the
// store; what it printed is true: alice is ADMIN and bob MEMBER of the
// demo group, whose documents, OCR results and workflow they see, and the
// printed API key works. A second start seeds nothing and shows no key.
func TestDemoWorld(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	first, err := dev.Start(context.Background(), dev.Options{DataDir: dir, PlatformPort: "0", ProviderPort: "0", Demo: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{Stack: first, t: t, base: first.Platform.URL, out: out.String()}
	demo := first.Demo
	if demo == nil || demo.APIKey == "" {
		t.Fatalf("nothing seeded:\n%s", s.out)
	}
	for _, want := range []string{demo.APIKey, dev.DemoGroupName, "ADMIN of", "MEMBER of", "/api/api-key/regenerate", "/api/docs", "relaxed for development"} {
		if !strings.Contains(s.out, want) {
			t.Errorf("start-up output lacks %q:\n%s", want, s.out)
		}
	}

	alice := browser(t)
	s.login(t, alice, "alice", "Alice-123")
	gid := s.groupID(t, alice)
	if gid != demo.Group.ID {
		t.Fatalf("alice's group %s, want the demo group %s", gid, demo.Group.ID)
	}
	var members struct {
		Members []struct{ UserID, Role string }
	}
	if code := getJSON(t, s, alice, "/api/groups/"+gid+"/members", nil, &members); code != 200 {
		t.Fatalf("members: %d", code)
	}
	roles := map[string]string{}
	for _, m := range members.Members {
		roles[m.UserID] = m.Role
	}
	users := map[string]string{}
	for _, u := range first.Users {
		users[u.Username] = u.Subject
	}
	if roles[users["alice"]] != "ADMIN" || roles[users["bob"]] != "MEMBER" || len(roles) != 2 {
		t.Errorf("demo group members %v", roles)
	}

	bob := browser(t)
	s.login(t, bob, "bob", "Bob-123")
	var docs struct {
		Documents []struct {
			ID, FileName string
			HasOCR       bool
		}
	}
	if code := getJSON(t, s, bob, "/api/documents", nil, &docs); code != 200 || len(docs.Documents) != 3 {
		t.Fatalf("bob's documents: %d %+v", code, docs)
	}
	withOCR := 0
	for _, d := range docs.Documents {
		if !strings.HasPrefix(d.FileName, "demo-") {
			t.Errorf("document %q is not labelled as demo data", d.FileName)
		}
		if !d.HasOCR {
			continue
		}
		withOCR++
		var ocr struct {
			Engine string
			Result map[string]any
		}
		if code := getJSON(t, s, bob, "/api/documents/"+d.ID+"/ocr", nil, &ocr); code != 200 || ocr.Result["fields"] == nil {
			t.Errorf("OCR result of %s: %d %+v", d.FileName, code, ocr)
		}
		content := s.do(t, bob, "GET", "/api/documents/"+d.ID+"/content", nil)
		if b, _ := io.ReadAll(content.Body); content.StatusCode != 200 || !bytes.Contains(b, []byte("PERMIT APPLICATION")) {
			t.Errorf("content of %s: %s %q", d.FileName, content.Status, b)
		}
	}
	if withOCR != 2 {
		t.Errorf("%d documents with OCR results, want 2", withOCR)
	}
	var wfs struct{ Workflows []struct{ Name string } }
	if code := getJSON(t, s, bob, "/api/workflows", nil, &wfs); code != 200 || len(wfs.Workflows) != 1 {
		t.Errorf("workflows: %d %+v", code, wfs)
	}
	var keyDocs struct{ Documents []any }
	if code := getJSON(t, s, nil, "/api/documents", map[string]string{"X-API-Key": demo.APIKey}, &keyDocs); code != 200 || len(keyDocs.Documents) != 3 {
		t.Errorf("the printed API key: %d, %d documents", code, len(keyDocs.Documents))
	}
	first.Stop(context.Background())

	out.Reset()
	second, err := dev.Start(context.Background(), dev.Options{DataDir: dir, PlatformPort: "0", ProviderPort: "0", Demo: true}, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Stop(context.Background())
	if second.Demo != nil {
		t.Error("the second start seeded again")
	}
	if strings.Contains(out.String(), demo.APIKey) || strings.Contains(out.String(), "gk_") {
		t.Errorf("the second start shows an API key:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "seeded at the first start") || !strings.Contains(out.String(), "/api/api-key/regenerate") ||
		!strings.Contains(out.String(), `ADMIN of "`+dev.DemoGroupName+`"`) {
		t.Errorf("the second start does not say where the demo came from and how to get a key:\n%s", out.String())
	}
	groups, err := second.Platform.Store.ListGroups(context.Background())
	if err != nil || len(groups) != 1 {
		t.Errorf("groups after the second start: %v %v", groups, err)
	}
}

func TestNoDemo(t *testing.T) {
	var out bytes.Buffer
	s, err := dev.Start(context.Background(), dev.Options{DataDir: t.TempDir(), PlatformPort: "0", ProviderPort: "0"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	groups, err := s.Platform.Store.ListGroups(context.Background())
	if s.Demo != nil || err != nil || len(groups) != 0 {
		t.Fatalf("--no-demo seeded %v (%v)", groups, err)
	}
	if !strings.Contains(out.String(), "not seeded (--no-demo)") {
		t.Errorf("output does not say the demo was skipped:\n%s", out.String())
	}
}
