package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/docplatform/httpapi"
)

func TestSanitizeFileName(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"a plain name is kept", "invoice 2024.pdf", "invoice 2024.pdf"},
		{"a Unix path keeps only its last element", "../../etc/passwd", "passwd"},
		{"a Windows path keeps only its last element", `C:\Users\ada\scan.png`, "scan.png"},
		{"control characters are removed", "a\x00b\r\nc.txt", "abc.txt"},
		{"bidi overrides are removed", "invoice\u202egpj.exe", "invoicegpj.exe"},
		{"leading dots cannot make a hidden file", "...profile", "profile"},
		{"an empty name becomes document", "", "document"},
		{"a name of only dots becomes document", "..", "document"},
		{"non-ASCII letters are kept", "Résumé.pdf", "Résumé.pdf"},
		{"long names are cut at a character boundary", strings.Repeat("é", 200), strings.Repeat("é", 127)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := httpapi.SanitizeFileName(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestContentDisposition(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"ASCII names appear in both forms", "scan.pdf", `attachment; filename="scan.pdf"; filename*=UTF-8''scan.pdf`},
		{"non-ASCII is percent-encoded in filename* and replaced in the fallback", "Résumé 1.pdf", `attachment; filename="R_sum_ 1.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%201.pdf`},
		{"quotes and backslashes cannot break the header", `a"b\c.txt`, `attachment; filename="a_b_c.txt"; filename*=UTF-8''a%22b%5Cc.txt`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := httpapi.ContentDisposition(tc.in); got != tc.want {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestDocuments(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { testDocuments(t, newRWorld(t, b.open)) })
	}
}

type docJSON struct {
	ID, GroupID, FileName, ContentType, SHA256, UploadedBy string
	Size                                                   int64
	HasOCR                                                 bool
}

func testDocuments(t *testing.T, rw *rworld) {
	ctx := context.Background()
	pdf := []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\n")
	var uploaded docJSON

	t.Run("an upload by API key is stored with a sniffed type and a sanitised name", func(t *testing.T) {
		resp := rw.call(groupKey, upload(rw.alpha, "..\\..\\secret\\\u202ereport.txt", pdf))
		if resp.StatusCode != 201 {
			t.Fatalf("%s\n%s", resp.Status, rw.logs.String())
		}
		readJSON(t, resp, &uploaded)
		if uploaded.ContentType != "application/pdf" || uploaded.FileName != "report.txt" || uploaded.Size != int64(len(pdf)) || uploaded.GroupID != rw.alpha || !strings.HasPrefix(uploaded.UploadedBy, "apikey:") {
			t.Fatalf("%+v", uploaded)
		}
	})
	t.Run("download is an attachment with RFC 6266 filename* and nosniff", func(t *testing.T) {
		resp := rw.call(member, request{method: "GET", path: "/api/documents/" + uploaded.ID + "/content"})
		body, _ := io.ReadAll(resp.Body)
		if !bytes.Equal(body, pdf) {
			t.Fatal("downloaded bytes differ")
		}
		h := resp.Header
		if h.Get("Content-Disposition") != `attachment; filename="report.txt"; filename*=UTF-8''report.txt` || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Type") != "application/pdf" {
			t.Fatalf("%v", h)
		}
	})
	t.Run("HTML is downloaded as opaque bytes in a sandbox", func(t *testing.T) {
		var d docJSON
		readJSON(t, rw.call(member, upload(rw.alpha, "page.html", []byte("<html><script>alert(1)</script></html>"))), &d)
		resp := rw.call(member, request{method: "GET", path: "/api/documents/" + d.ID + "/content"})
		if resp.Header.Get("Content-Type") != "application/octet-stream" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("%v", resp.Header)
		}
	})
	committed, _, _ := rw.files.Files()
	countRows := func() int {
		docs, err := rw.st.ListDocuments(ctx, docplatform.DocumentFilter{AllGroups: true, Limit: 1000})
		must(t, err)
		return len(docs)
	}
	rows := countRows()
	nothingLeft := func(t *testing.T) {
		t.Helper()
		c, tmp, err := rw.files.Files()
		must(t, err)
		if c != committed || tmp != 0 || countRows() != rows {
			t.Fatalf("a failed upload left files (%d committed, %d temporary) or rows (%d, had %d)", c-committed, tmp, countRows(), rows)
		}
	}
	failing := []struct {
		name   string
		who    caller
		req    request
		status int
	}{
		{"a file over the size limit is 413", member, upload(rw.alpha, "big.bin", bytes.Repeat([]byte("x"), 64<<10+1)), 413},
		{"a body over the route's body limit is 413", member, upload(rw.alpha, "huge.bin", bytes.Repeat([]byte("x"), 200<<10)), 413},
		{"an empty file is 400", member, upload(rw.alpha, "empty.txt", nil), 400},
		{"a body that is not multipart is 400", member, request{method: "POST", path: "/api/documents?groupId=" + rw.alpha, body: `{"file":"x"}`}, 400},
		{"a multipart body without a file part is 400", member, func() request {
			var b bytes.Buffer
			mw := multipart.NewWriter(&b)
			mw.WriteField("note", "no file")
			mw.Close()
			return request{method: "POST", path: "/api/documents?groupId=" + rw.alpha, body: b.String(), header: map[string]string{"Content-Type": mw.FormDataContentType()}}
		}(), 400},
		{"a multipart body cut short is 400", member, func() request {
			r := upload(rw.alpha, "cut.pdf", pdf)
			r.body = r.body[:len(r.body)-20]
			return r
		}(), 400},
		{"a soft-deleted group takes no uploads", sysAdmin, upload(rw.gone, "x.pdf", pdf), 404},
		{"a missing groupId is 400", member, upload("", "x.pdf", pdf), 400},
	}
	for _, tc := range failing {
		t.Run(tc.name+" and leaves neither row nor file", func(t *testing.T) {
			resp := rw.call(tc.who, tc.req)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s", resp.Status)
			}
			nothingLeft(t)
		})
	}

	t.Run("listing shows only the caller's groups, newest first, with a cursor", func(t *testing.T) {
		beta := rw.doc(rw.beta, "beta-only.txt", "beta")
		for i := range 5 {
			rw.doc(rw.alpha, "page-"+string(rune('a'+i))+".txt", "p")
		}
		var page struct {
			Documents  []docJSON
			NextCursor *string
		}
		readJSON(t, rw.call(member, request{method: "GET", path: "/api/documents?limit=3"}), &page)
		if len(page.Documents) != 3 || page.NextCursor == nil || page.Documents[0].FileName != "page-e.txt" {
			t.Fatalf("%+v", page)
		}
		seen := map[string]bool{}
		for cursor := ""; ; {
			var p struct {
				Documents  []docJSON
				NextCursor *string
			}
			readJSON(t, rw.call(member, request{method: "GET", path: "/api/documents?limit=2&cursor=" + cursor}), &p)
			for _, d := range p.Documents {
				if d.GroupID != rw.alpha || seen[d.ID] {
					t.Fatalf("document %s of group %s (seen before: %v)", d.ID, d.GroupID, seen[d.ID])
				}
				seen[d.ID] = true
			}
			if p.NextCursor == nil {
				break
			}
			cursor = *p.NextCursor
		}
		if seen[beta.ID] {
			t.Fatal("a member of alpha saw beta's document")
		}
		var carols struct{ Documents []docJSON }
		readJSON(t, rw.call(otherKey, request{method: "GET", path: "/api/documents"}), &carols)
		if len(carols.Documents) != 1 || carols.Documents[0].ID != beta.ID {
			t.Fatalf("beta's key sees %+v", carols.Documents)
		}
	})
	t.Run("filters: name, content type, OCR", func(t *testing.T) {
		var p struct{ Documents []docJSON }
		readJSON(t, rw.call(member, request{method: "GET", path: "/api/documents?q=PAGE-C"}), &p)
		if len(p.Documents) != 1 || p.Documents[0].FileName != "page-c.txt" {
			t.Fatalf("q: %+v", p.Documents)
		}
		readJSON(t, rw.call(member, request{method: "GET", path: "/api/documents?contentType=application/pdf"}), &p)
		if len(p.Documents) != 1 || p.Documents[0].ID != uploaded.ID {
			t.Fatalf("contentType: %+v", p.Documents)
		}
		rw.call(groupKey, request{method: "PUT", path: "/api/documents/" + uploaded.ID + "/ocr", body: `{"result":{"text":"x"}}`})
		readJSON(t, rw.call(member, request{method: "GET", path: "/api/documents?hasOcr=true"}), &p)
		if len(p.Documents) != 1 || p.Documents[0].ID != uploaded.ID || !p.Documents[0].HasOCR {
			t.Fatalf("hasOcr: %+v", p.Documents)
		}
	})
	t.Run("bad listing parameters are 400", func(t *testing.T) {
		for _, q := range []string{"limit=0", "limit=201", "cursor=nonsense", "createdAfter=yesterday", "hasOcr=maybe"} {
			if resp := rw.call(member, request{method: "GET", path: "/api/documents?" + q}); resp.StatusCode != 400 {
				t.Errorf("%s: %s", q, resp.Status)
			}
		}
	})
	t.Run("OCR: one result per document, replaced by a second PUT, refused when not an object", func(t *testing.T) {
		path := "/api/documents/" + uploaded.ID + "/ocr"
		if resp := rw.call(groupKey, request{method: "PUT", path: path, body: `{"engine":"v2","result":{"text":"y"}}`}); resp.StatusCode != 200 {
			t.Fatalf("replace: %s", resp.Status)
		}
		var o struct {
			Engine string
			Result map[string]string
		}
		readJSON(t, rw.call(member, request{method: "GET", path: path}), &o)
		if o.Engine != "v2" || o.Result["text"] != "y" {
			t.Fatalf("%+v", o)
		}
		for _, body := range []string{`{"result":[1]}`, `{"result":"text"}`, `{}`, `{"result":{},"extra":1}`} {
			if resp := rw.call(groupKey, request{method: "PUT", path: path, body: body}); resp.StatusCode != 400 {
				t.Errorf("%s: %s", body, resp.Status)
			}
		}
		d := rw.doc(rw.alpha, "no-ocr.txt", "x")
		if resp := rw.call(member, request{method: "GET", path: "/api/documents/" + d.ID + "/ocr"}); resp.StatusCode != 404 {
			t.Errorf("no OCR yet: %s", resp.Status)
		}
	})
	t.Run("delete removes the row and the file", func(t *testing.T) {
		before, _, _ := rw.files.Files()
		if resp := rw.call(member, request{method: "DELETE", path: "/api/documents/" + uploaded.ID}); resp.StatusCode != 204 {
			t.Fatalf("%s", resp.Status)
		}
		after, _, _ := rw.files.Files()
		if after != before-1 {
			t.Fatalf("files %d → %d", before, after)
		}
		if resp := rw.call(member, request{method: "GET", path: "/api/documents/" + uploaded.ID}); resp.StatusCode != 404 {
			t.Fatalf("after delete: %s", resp.Status)
		}
	})
}

// An upload is streamed to disk: a 64 MiB document passes through the
// server while the process allocates a small fraction of that in total
// (the client streams it from a pipe, so nothing in the test holds it
// either). Reading it whole into memory would allocate at least its size.
func TestUploadIsStreamedNotBuffered(t *testing.T) {
	const size = 64 << 20
	rw := newRWorld(t, sqliteStore, func(r *httpapi.Resources) { r.MaxUpload = 128 << 20 })
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	sum := sha256.New()
	go func() {
		fw, err := mw.CreateFormFile("file", "big.bin")
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
		out := io.MultiWriter(fw, sum)
		for written := 0; written < size; written += len(chunk) {
			if _, err := out.Write(chunk); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	req, err := http.NewRequest("POST", rw.url("/api/documents?groupId="+rw.alpha), pr)
	must(t, err)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-API-Key", rw.key)

	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	var d docJSON
	readJSON(t, resp, &d)
	goruntime.ReadMemStats(&after)
	if resp.StatusCode != 201 || d.Size != size || d.SHA256 != hex.EncodeToString(sum.Sum(nil)) {
		t.Fatalf("%s %+v", resp.Status, d)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB while uploading %d MiB", alloc>>10, size>>20)
	if alloc > size/4 {
		t.Fatalf("the upload allocated %d MiB for a %d MiB document", alloc>>20, size>>20)
	}
}
