package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
)

// leftovers counts what the platform holds: committed and temporary files
// in the storage directory, and document rows of every group.
func (rw *rworld) leftovers() (committed, temporary, rows int) {
	rw.t.Helper()
	committed, temporary, err := rw.files.Files()
	must(rw.t, err)
	docs, err := rw.st.ListDocuments(context.Background(), docplatform.DocumentFilter{AllGroups: true, Limit: 100000})
	must(rw.t, err)
	return committed, temporary, len(docs)
}

// rawUpload is an upload request of the given multipart body and boundary.
func rawUpload(group, contentType, body string) request {
	return request{method: "POST", path: "/api/documents?groupId=" + group, body: body, header: map[string]string{"Content-Type": contentType}}
}

func part(boundary, disposition, content string) string {
	return "--" + boundary + "\r\nContent-Disposition: " + disposition + "\r\nContent-Type: application/octet-stream\r\n\r\n" + content + "\r\n"
}

// Hostile uploads are refused with a 4xx and leave neither a row nor a
// file; names are stored sanitised and come back as a safe
// Content-Disposition.
func TestUploadsRefuseHostileInput(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			rw := newRWorld(t, be.open) // MaxUpload 64 KiB
			const limit = 64 << 10
			const bd = "XyZ"
			mp := "multipart/form-data; boundary=" + bd
			refused := []struct {
				name   string
				req    request
				status int
			}{
				{"a JSON body is 400", request{method: "POST", path: "/api/documents?groupId=" + rw.alpha, body: `{"file":"x"}`}, 400},
				{"a urlencoded form is 400", rawUpload(rw.alpha, "application/x-www-form-urlencoded", "file=abc"), 400},
				{"multipart without a boundary is 400", rawUpload(rw.alpha, "multipart/form-data", part(bd, `form-data; name="file"; filename="a.txt"`, "hi")+"--"+bd+"--\r\n"), 400},
				{"a boundary the body does not use is 400", rawUpload(rw.alpha, "multipart/form-data; boundary=other", part(bd, `form-data; name="file"; filename="a.txt"`, "hi")+"--"+bd+"--\r\n"), 400},
				{"a body cut before the closing boundary is 400", rawUpload(rw.alpha, mp, "--"+bd+"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello"), 400},
				{"a NUL in the part's header is 400", rawUpload(rw.alpha, mp, part(bd, "form-data; name=\"file\"; filename=\"a\x00b.txt\"", "hi")+"--"+bd+"--\r\n"), 400},
				{"a CR in the part's header is 400", rawUpload(rw.alpha, mp, part(bd, "form-data; name=\"file\"; filename=\"a\rb.txt\"", "hi")+"--"+bd+"--\r\n"), 400},
				{"no part named file is 400", rawUpload(rw.alpha, mp, part(bd, `form-data; name="other"; filename="a.txt"`, "hi")+"--"+bd+"--\r\n"), 400},
				{"an empty body is 400", rawUpload(rw.alpha, mp, "--"+bd+"--\r\n"), 400},
				{"two file parts are 400", rawUpload(rw.alpha, mp, part(bd, `form-data; name="file"; filename="a.txt"`, "one")+part(bd, `form-data; name="file"; filename="b.txt"`, "two")+"--"+bd+"--\r\n"), 400},
				{"an empty file is 400", rawUpload(rw.alpha, mp, part(bd, `form-data; name="file"; filename="a.txt"`, "")+"--"+bd+"--\r\n"), 400},
				{"one byte over the limit is 413", upload(rw.alpha, "big.bin", bytes.Repeat([]byte{'x'}, limit+1)), 413},
				{"far over the limit is 413", upload(rw.alpha, "big.bin", bytes.Repeat([]byte{'x'}, 4*limit)), 413},
				{"a group id not the key's is 403", upload("x", "a.txt", []byte("hi")), 403},
				{"no group id is 400", request{method: "POST", path: "/api/documents", body: "x", header: map[string]string{"Content-Type": mp}}, 400},
			}
			for _, tc := range refused {
				t.Run(tc.name, func(t *testing.T) {
					resp := rw.call(groupKey, tc.req)
					if resp.StatusCode != tc.status {
						t.Fatalf("%s, want %d", resp.Status, tc.status)
					}
					var e errBody
					readJSON(t, resp, &e)
					if e.StatusCode != tc.status || e.Message == "" {
						t.Fatalf("%+v", e)
					}
					if c, tmp, rows := rw.leftovers(); c != 0 || tmp != 0 || rows != 0 {
						t.Fatalf("left behind: %d files, %d temporary files, %d rows", c, tmp, rows)
					}
				})
			}

			names := []struct{ name, sent, stored string }{
				{"a Unix traversal keeps the last element", "../../x", "x"},
				{"a Windows traversal keeps the last element", `..\..\x`, "x"},
				{"an absolute path keeps the last element", "/etc/passwd", "passwd"},
				{"a Windows drive path keeps the last element", `C:\Windows\win.ini`, "win.ini"},
				{"tabs are dropped", "a\tb\tc.txt", "abc.txt"},
				{"an RTL override is dropped", "photo\u202egnp.exe", "photognp.exe"},
				{"a very long name is cut to 255 bytes", strings.Repeat("n", 4000) + ".txt", strings.Repeat("n", 255)},
				{"an empty name is document", "", "document"},
				{"a header-breaking name stays one quoted parameter", "x\"; filename=evil.html; a=\"", "x\"; filename=evil.html; a=\""},
			}
			for _, tc := range names {
				t.Run("file name: "+tc.name, func(t *testing.T) {
					var b strings.Builder
					fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n\r\nhello\r\n--%s--\r\n", bd, strings.NewReplacer(`"`, `\"`, `\`, `\\`).Replace(tc.sent), bd)
					resp := rw.call(groupKey, rawUpload(rw.alpha, mp, b.String()))
					var d docJSON
					readJSON(t, resp, &d)
					if resp.StatusCode != 201 {
						t.Fatalf("%s", resp.Status)
					}
					if d.FileName != tc.stored {
						t.Fatalf("stored %q, want %q", d.FileName, tc.stored)
					}
					dl := rw.call(groupKey, request{method: "GET", path: "/api/documents/" + d.ID + "/content"})
					dl.Body.Close()
					cd := dl.Header.Get("Content-Disposition")
					if strings.ContainsAny(cd, "\r\n\x00") {
						t.Fatalf("control characters in %q", cd)
					}
					disp, params, err := mime.ParseMediaType(cd)
					if err != nil || disp != "attachment" {
						t.Fatalf("%q: %v", cd, err)
					}
					// ParseMediaType prefers filename* and decodes it: the
					// stored name comes back exactly, as one parameter.
					if params["filename"] != d.FileName {
						t.Fatalf("filename %q, want %q (header %s)", params["filename"], d.FileName, cd)
					}
					must(t, deleteDoc(rw, d.ID))
				})
			}

			t.Run("a file part without a filename is stored as document", func(t *testing.T) {
				resp := rw.call(groupKey, rawUpload(rw.alpha, mp, part(bd, `form-data; name="file"`, "plain")+"--"+bd+"--\r\n"))
				var d docJSON
				readJSON(t, resp, &d)
				if resp.StatusCode != 201 || d.FileName != "document" {
					t.Fatalf("%s %+v", resp.Status, d)
				}
				must(t, deleteDoc(rw, d.ID))
			})

			t.Run("exactly at the limit is stored", func(t *testing.T) {
				resp := rw.call(groupKey, upload(rw.alpha, "full.bin", bytes.Repeat([]byte{'y'}, limit)))
				var d docJSON
				readJSON(t, resp, &d)
				if resp.StatusCode != 201 || d.Size != limit {
					t.Fatalf("%s %+v", resp.Status, d)
				}
				must(t, deleteDoc(rw, d.ID))
			})

			t.Run("two uploads at once to one group both land, each with its own file", func(t *testing.T) {
				var wg sync.WaitGroup
				ids := make([]string, 8)
				status := make([]int, len(ids))
				for i := range ids {
					wg.Add(1)
					go func() {
						defer wg.Done()
						resp := rw.call(groupKey, upload(rw.alpha, fmt.Sprintf("c%d.txt", i), []byte(strings.Repeat(fmt.Sprint(i), 1000))))
						var d docJSON
						readJSON(t, resp, &d)
						ids[i], status[i] = d.ID, resp.StatusCode
					}()
				}
				wg.Wait()
				for i := range ids {
					if status[i] != 201 {
						t.Fatalf("upload %d: %d", i, status[i])
					}
				}
				if c, tmp, rows := rw.leftovers(); c != len(ids) || tmp != 0 || rows != len(ids) {
					t.Fatalf("%d files, %d temporary, %d rows", c, tmp, rows)
				}
				for _, id := range ids {
					must(t, deleteDoc(rw, id))
				}
			})

			t.Run("a deleted document is 404 to read, download and delete again", func(t *testing.T) {
				resp := rw.call(groupKey, upload(rw.alpha, "gone.txt", []byte("bye")))
				var d docJSON
				readJSON(t, resp, &d)
				must(t, deleteDoc(rw, d.ID))
				for _, r := range []request{
					{method: "GET", path: "/api/documents/" + d.ID},
					{method: "GET", path: "/api/documents/" + d.ID + "/content"},
					{method: "DELETE", path: "/api/documents/" + d.ID},
				} {
					if resp := rw.call(member, r); resp.StatusCode != 404 {
						t.Fatalf("%s %s: %s", r.method, r.path, resp.Status)
					}
				}
				if c, tmp, rows := rw.leftovers(); c != 0 || tmp != 0 || rows != 0 {
					t.Fatalf("%d files, %d temporary, %d rows", c, tmp, rows)
				}
			})

			t.Run("a client that disconnects mid-upload leaves nothing", func(t *testing.T) {
				u, _ := url.Parse(rw.srv.URL)
				conn, err := net.Dial("tcp", u.Host)
				must(t, err)
				defer conn.Close()
				head := part(bd, `form-data; name="file"; filename="cut.bin"`, "")
				head = strings.TrimSuffix(head, "\r\n")
				fmt.Fprintf(conn, "POST /api/documents?groupId=%s HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", rw.alpha, u.Host, rw.key, mp, limit, head)
				conn.Write(bytes.Repeat([]byte{'z'}, 8<<10))
				// Wait until the server is staging the file, then hang up.
				waitFor(t, "staging to start", func() bool { _, tmp, _ := rw.leftovers(); return tmp == 1 })
				conn.Close()
				waitFor(t, "the staged file to go", func() bool { _, tmp, _ := rw.leftovers(); return tmp == 0 })
				if c, _, rows := rw.leftovers(); c != 0 || rows != 0 {
					t.Fatalf("%d files, %d rows", c, rows)
				}
			})

			t.Run("a body shorter than its Content-Length is refused and leaves nothing", func(t *testing.T) {
				u, _ := url.Parse(rw.srv.URL)
				conn, err := net.Dial("tcp", u.Host)
				must(t, err)
				defer conn.Close()
				body := part(bd, `form-data; name="file"; filename="short.bin"`, "abc")
				fmt.Fprintf(conn, "POST /api/documents?groupId=%s HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", rw.alpha, u.Host, rw.key, mp, len(body)+100, body)
				conn.(*net.TCPConn).CloseWrite()
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != 400 {
						t.Fatalf("%s", resp.Status)
					}
				}
				waitFor(t, "the staged file to go", func() bool { _, tmp, _ := rw.leftovers(); return tmp == 0 })
				if c, _, rows := rw.leftovers(); c != 0 || rows != 0 {
					t.Fatalf("%d files, %d rows", c, rows)
				}
			})
		})
	}
}

func deleteDoc(rw *rworld, id string) error {
	resp := rw.call(groupKey, request{method: "DELETE", path: "/api/documents/" + id})
	resp.Body.Close()
	if resp.StatusCode != 204 {
		return fmt.Errorf("delete %s: %s", id, resp.Status)
	}
	return nil
}

// waitFor polls cond until it holds; the deadline only bounds a broken
// run, it asserts nothing about speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
