package httpapi

import (
	"net/http"
	"strings"

	"github.com/govkit/govkit/notify/console"
)

// mountConsole serves the web console (package notify/console) as the
// original does: GET and HEAD of every path outside restApiRoot that is
// not a file of the console's build get the console's page. Paths under
// restApiRoot, and other methods anywhere, keep the API's JSON 404.
func (s *Server) mountConsole() {
	api, authority, client := s.ConsoleSettings()
	page := console.Handler(console.Settings{APIURLPrefix: api, OIDCAuthority: authority, OIDCClientID: client})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		underRoot := s.root == "" || r.URL.Path == s.root || strings.HasPrefix(r.URL.Path, s.root+"/")
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && (!underRoot || (s.root == "" && r.URL.Path == "/")) {
			page.ServeHTTP(w, r)
			return
		}
		writeError(w, r, errNotFound)
	})
}
