package webui_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/govkit/govkit/docplatform"
)

// call sends a JSON request as the signed-in person (with the CSRF
// header on writes) and decodes the answer into out.
func (c *client) call(method, path string, body, out any) {
	c.w.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.w.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != "GET" {
		req.Header.Set("X-CSRF-Token", c.csrf())
	}
	c.send(req, out)
}

func (c *client) send(req *http.Request, out any) {
	c.w.t.Helper()
	resp, err := c.c.Do(req)
	if err != nil {
		c.w.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		c.w.t.Fatalf("%s %s: %s %s", req.Method, req.URL.Path, resp.Status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.w.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
		}
	}
}

// upload posts a file to a group as this client; key, when set, is the
// group's API key (a machine uploading).
func (c *client) upload(groupID, name string, content []byte, key string) docplatform.Document {
	c.w.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", name)
	part.Write(content)
	mw.Close()
	req, _ := http.NewRequest("POST", c.w.base+"/api/documents?groupId="+groupID, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if key != "" {
		req.Header.Set("X-API-Key", key)
	} else {
		req.Header.Set("X-CSRF-Token", c.csrf())
	}
	var d struct {
		ID      string `json:"id"`
		GroupID string `json:"groupId"`
	}
	c.send(req, &d)
	return docplatform.Document{ID: d.ID, GroupID: d.GroupID, FileName: name}
}

// machine is the group's API key at work (an OCR engine).
func (c *client) machine(key, method, path string, body any) {
	c.w.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, c.w.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	c.send(req, nil)
}

// demo is a small world of two teams, made through the real API where a
// person or a machine would act: sign-ins, an API key, uploads, OCR
// results, workflows with versions, reviews (one in progress, one done)
// and a pending membership request.
type demo struct {
	finance, permits     docplatform.Group
	invoice, lease, plan docplatform.Document // invoice: OCR, reviewed; lease: OCR, locked by bob; plan: no OCR
	receipt              docplatform.Document // OCR, waiting for review
	workflow             string
	bobSession           string
	aliceSession         string
}

func seedDemo(t *testing.T, w *world) demo {
	t.Helper()
	var d demo
	d.finance = w.group("Finance", map[string]docplatform.Role{"alice": docplatform.RoleAdmin, "bob": docplatform.RoleMember})
	d.permits = w.group("Permits", map[string]docplatform.Role{"bob": docplatform.RoleAdmin, "alice": docplatform.RoleMember})
	alice, bob := w.signedInClient("alice"), w.signedInClient("bob")

	var created struct {
		Key string `json:"key"`
	}
	alice.call("POST", "/api/api-key", map[string]string{"groupId": d.finance.ID}, &created)
	key := created.Key

	pdf := func(title string) []byte {
		return []byte("%PDF-1.4\n% " + title + "\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	}
	d.invoice = alice.upload(d.finance.ID, "Invoice 1042 — Northwind Supplies.pdf", pdf("invoice"), "")
	d.lease = alice.upload(d.finance.ID, "Office lease 2026.pdf", pdf("lease"), "")
	d.receipt = alice.upload(d.finance.ID, "Scanned receipt 0375.png", pngBytes(), key)
	alice.upload(d.finance.ID, "Vendor list.txt", []byte("Northwind Supplies\nContoso Ltd\nFabrikam Inc\n"), "")
	d.plan = bob.upload(d.permits.ID, "Site plan — 14 Elm Street.pdf", pdf("site plan"), "")
	bob.upload(d.permits.ID, "Permit application 2211.pdf", pdf("permit"), "")

	ocr := map[string]any{
		d.invoice.ID: map[string]any{"invoiceNumber": "1042", "vendor": "Northwind Supplies", "date": "2026-10-02", "total": "1,250.00", "currency": "CAD"},
		d.lease.ID:   map[string]any{"tenant": "City Finance Office", "landlord": "Harbour Properties", "start": "2026-01-01", "monthlyRent": "4,800.00"},
		// The engine's confidence, overall and in one field.
		d.receipt.ID: map[string]any{"merchant": "Office Depot", "total": map[string]any{"value": "87.40", "confidence": 0.62}, "items": []any{map[string]any{"name": "Paper A4", "qty": 4}, map[string]any{"name": "Toner", "qty": 1}}, "confidence": 0.91},
	}
	for id, result := range ocr {
		alice.machine(key, "PUT", "/api/documents/"+id+"/ocr", map[string]any{"engine": "tesseract 5.4", "result": result})
	}

	var wf struct {
		ID string `json:"id"`
	}
	alice.call("POST", "/api/workflows", map[string]any{"groupId": d.finance.ID, "name": "Invoice intake", "description": "OCR every invoice, then a person checks the totals.",
		"config": map[string]any{"steps": []any{map[string]any{"type": "ocr", "engine": "tesseract", "languages": []string{"eng"}}, map[string]any{"type": "review", "required": true}}}}, &wf)
	alice.call("POST", "/api/workflows/"+wf.ID+"/versions", map[string]any{"config": map[string]any{"steps": []any{map[string]any{"type": "ocr", "engine": "tesseract", "languages": []string{"eng", "fra"}}, map[string]any{"type": "review", "required": true, "fields": []string{"total", "vendor"}}}}}, nil)
	d.workflow = wf.ID
	bob.call("POST", "/api/workflows", map[string]any{"groupId": d.permits.ID, "name": "Permit triage", "description": "Sort applications by district.", "config": map[string]any{"steps": []any{map[string]any{"type": "classify", "labels": []string{"north", "south"}}}}}, nil)

	// Bob holds the lease; Alice reviewed the invoice and is on the receipt.
	var s struct {
		ID string `json:"id"`
	}
	bob.call("POST", "/api/documents/"+d.lease.ID+"/reviews", nil, &s)
	d.bobSession = s.ID
	alice.call("POST", "/api/documents/"+d.invoice.ID+"/reviews", nil, &s)
	alice.call("POST", "/api/reviews/"+s.ID+"/corrections", map[string]any{"corrections": []any{map[string]string{"field": "total", "originalValue": "1,250.00", "value": "1,265.00"}}}, nil)
	alice.call("POST", "/api/reviews/"+s.ID+"/complete", nil, nil)
	alice.call("POST", "/api/documents/"+d.receipt.ID+"/reviews", nil, &s)
	d.aliceSession = s.ID

	admin := w.user("admin")
	if _, err := w.stack.Platform.Store.CreateMembershipRequest(t.Context(), admin.Subject, d.permits.ID, "I audit the permit office's records this quarter."); err != nil {
		t.Fatal(err)
	}
	return d
}

// pngBytes is a small scanned-looking receipt image.
func pngBytes() []byte {
	img := image.NewGray(image.Rect(0, 0, 120, 160))
	for y := range 160 {
		for x := range 120 {
			v := uint8(245)
			if y%14 < 2 && x > 10 && x < 110 && y > 20 {
				v = 90
			}
			img.SetGray(x, y, color.Gray{Y: v})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(fmt.Sprint(err))
	}
	return b.Bytes()
}
