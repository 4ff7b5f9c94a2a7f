package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Whatever body, content type, query and id a caller sends to a resource
// route, the answer is below 500 and never a panic; errors keep the
// {"statusCode","message","error"} shape.
func FuzzResourceRequests(f *testing.F) {
	// PostgreSQL: it refuses more than SQLite (NUL, invalid UTF-8, years
	// out of range), so it finds more ways to a 500.
	rw := newRWorldSetup(f, postgresStore, []func(*setup){func(s *setup) { s.global, s.failures = 1<<30, 1<<30 }})
	d := rw.doc(rw.alpha, "f.pdf", "%PDF-1.4")
	wf := rw.workflow(rw.alpha, "fuzz")
	routes := []struct{ method, path string }{
		{"POST", "/api/groups"},
		{"PUT", "/api/groups/{group}"},
		{"PUT", "/api/groups/{group}/members/{id}"},
		{"POST", "/api/groups/{group}/requests"},
		{"POST", "/api/groups/{group}/requests/{id}/approve"},
		{"GET", "/api/documents"},
		{"POST", "/api/documents"},
		{"GET", "/api/documents/{doc}"},
		{"PUT", "/api/documents/{doc}/ocr"},
		{"POST", "/api/documents/{doc}/reviews"},
		{"GET", "/api/workflows"},
		{"POST", "/api/workflows"},
		{"POST", "/api/workflows/{wf}/versions"},
		{"GET", "/api/workflows/{wf}/versions/{id}"},
		{"POST", "/api/reviews/{id}/corrections"},
		{"GET", "/api/audit"},
		{"GET", "/api/audit/report"},
	}
	f.Add(uint8(0), "", `{"name":"x"}`, "application/json", false)
	f.Add(uint8(6), "?groupId=ALPHA", "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"../x\"\r\n\r\nhi\r\n--b--\r\n", "multipart/form-data; boundary=b", true)
	f.Add(uint8(5), "?limit=-1&cursor=eA&createdAfter=0000-01-01T00:00:00Z", "", "", true)
	f.Add(uint8(8), "", `{"result":{"a":[[[[1]]]]},"engine":7}`, "application/json", true)
	f.Add(uint8(11), "", `{"groupId":"ALPHA","name":"n","config":{}} x`, "application/json", false)
	f.Add(uint8(16), "?from=2030-03-10&to=2030-03-09&timeZone=America/Vancouver", "", "", false)
	f.Add(uint8(14), "", `{"corrections":[{"field":"","value":1}]}`, "application/json", false)
	f.Fuzz(func(t *testing.T, route uint8, query, body, contentType string, byKey bool) {
		rt := routes[int(route)%len(routes)]
		path := strings.NewReplacer("{group}", rw.alpha, "{doc}", d.ID, "{wf}", wf.ID, "{id}", "1").Replace(rt.path)
		query = strings.ReplaceAll(query, "ALPHA", rw.alpha)
		if strings.ContainsAny(query, " \r\n\x00#") {
			return
		}
		req, err := http.NewRequest(rt.method, "http://platform"+path+query, strings.NewReader(body))
		if err != nil {
			return
		}
		req.RemoteAddr = "198.51.100.1:1234"
		if contentType != "" {
			req.Header["Content-Type"] = []string{contentType}
		}
		if byKey {
			req.Header.Set("X-API-Key", rw.key)
		} else {
			req.Header.Set("Authorization", "Bearer "+rw.adminToken)
		}
		rec := httptest.NewRecorder()
		rw.api.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s%s: %d %s", rt.method, path, query, rec.Code, rec.Body)
		}
		if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"statusCode":`) {
			t.Fatalf("%s %s%s: %d without the error shape: %s", rt.method, path, query, rec.Code, rec.Body)
		}
	})
}
