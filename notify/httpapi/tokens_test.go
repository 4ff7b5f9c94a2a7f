package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

// TestConsoleTokensEnd reproduces finding 8 of the second hostile review
// over real HTTP: a password sign-in's token never expired, signing out
// revoked nothing, and a password change left every token valid.
// Afterwards a log-in token lives loginTokenTtlHours at most, POST
// /administrators/logout deletes the token it presents, and a password
// change or an administrator's deletion revokes the administrator's
// tokens. Tokens an administrator makes on purpose keep NotifyBC's rules
// (no ttl: never expires).
func TestConsoleTokensEnd(t *testing.T) {
	e := apitest.Start(t, apitest.Options{Config: []map[string]any{{"loginTokenTtlHours": 2.0}}})
	const pw = "0ps-Admin!1234"
	id := seed(t, e, "/api/administrators", map[string]any{"email": "ops@example.org", "password": pw})["id"].(string)
	tokens := "/api/administrators/" + id + "/access-tokens"
	login := func(t *testing.T, body map[string]any) (string, float64) {
		t.Helper()
		m := e.Do(t, "POST", "/api/administrators/login", body, apitest.Anonymous...).Expect(t, http.StatusOK).Map(t)
		return m["token"].(string), m["ttl"].(float64)
	}
	role := func(t *testing.T, tok string) string {
		t.Helper()
		return e.Do(t, "GET", "/api/administrators/whoami", nil, apitest.Token(tok)...).Expect(t, http.StatusOK).Map(t)["role"].(string)
	}
	ttlOf := func(t *testing.T, tok string) any {
		t.Helper()
		for _, x := range list(t, e, tokens) {
			if x["id"] == tok {
				return x["ttl"]
			}
		}
		t.Fatalf("token %s… is not listed", tok[:8])
		return nil
	}

	t.Run("a log-in token lives loginTokenTtlHours", func(t *testing.T) {
		tok, ttl := login(t, map[string]any{"email": "ops@example.org", "password": pw})
		if ttl != 7200 || ttlOf(t, tok) != float64(7200) {
			t.Fatalf("ttl %v, stored %v; want 7200", ttl, ttlOf(t, tok))
		}
		t.Run("a longer ttl asked for is cut to it, a shorter one kept", func(t *testing.T) {
			if _, ttl := login(t, map[string]any{"email": "ops@example.org", "password": pw, "ttl": 1e9}); ttl != 7200 {
				t.Fatalf("ttl %v", ttl)
			}
			if _, ttl := login(t, map[string]any{"email": "ops@example.org", "password": pw, "ttl": 60}); ttl != 60 {
				t.Fatalf("ttl %v", ttl)
			}
		})
		t.Run("and is refused once that time has passed", func(t *testing.T) {
			if got := role(t, tok); got != "Admin" {
				t.Fatalf("a fresh token is %s", got)
			}
			// the token as it is two hours and a second later (the store
			// keeps created as written on insert, never on update)
			ctx := context.Background()
			rec, err := e.Store.AccessTokens().FindByID(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			rec.Created = time.Now().Add(-2*time.Hour - time.Second)
			if err := e.Store.AccessTokens().DeleteByID(ctx, tok); err != nil {
				t.Fatal(err)
			}
			if err := e.Store.AccessTokens().Insert(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if got := role(t, tok); got != "Anonymous" {
				t.Fatalf("an expired token is %s", got)
			}
		})
	})

	t.Run("log-out deletes the token it presents", func(t *testing.T) {
		tok, _ := login(t, map[string]any{"email": "ops@example.org", "password": pw})
		if got := role(t, tok); got != "Admin" {
			t.Fatalf("role %s", got)
		}
		e.Do(t, "POST", "/api/administrators/logout", nil, apitest.Token(tok)...).Expect(t, http.StatusNoContent)
		if got := role(t, tok); got != "Anonymous" {
			t.Fatalf("a logged-out token is %s", got)
		}
		// again, or with no token: nothing to learn, nothing done
		e.Do(t, "POST", "/api/administrators/logout", nil, apitest.Token(tok)...).Expect(t, http.StatusNoContent)
		e.Do(t, "POST", "/api/administrators/logout", nil, apitest.Anonymous...).Expect(t, http.StatusNoContent)
	})

	t.Run("a password change revokes the administrator's tokens", func(t *testing.T) {
		mine, _ := login(t, map[string]any{"email": "ops@example.org", "password": pw})
		other, _ := login(t, map[string]any{"email": "ops@example.org", "password": pw})
		made := e.Do(t, "POST", tokens, map[string]any{"name": "script"}).Expect(t, http.StatusOK).Map(t)["id"].(string)
		// the administrator changes its own password with its token: that
		// token stays, every other goes
		e.Do(t, "POST", "/api/administrators/"+id+"/user-credential", map[string]any{"password": "N3w-Admin!1234"}, apitest.Token(mine)...).Expect(t, http.StatusOK)
		for tok, want := range map[string]string{mine: "Admin", other: "Anonymous", made: "Anonymous"} {
			if got := role(t, tok); got != want {
				t.Errorf("after the change, token %s… is %s, want %s", tok[:8], got, want)
			}
		}
		// a super admin resets it (PATCH with a password): all go
		e.Do(t, "PATCH", "/api/administrators/"+id, map[string]any{"password": "N3wer-Admin!1234"}).Expect(t, http.StatusNoContent)
		if got := role(t, mine); got != "Anonymous" {
			t.Errorf("after a reset, the administrator's token is %s", got)
		}
		e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "ops@example.org", "password": "N3wer-Admin!1234"}, apitest.Anonymous...).Expect(t, http.StatusOK)
	})

	t.Run("deleting an administrator revokes its tokens", func(t *testing.T) {
		id2 := seed(t, e, "/api/administrators", map[string]any{"email": "temp@example.org", "password": pw})["id"].(string)
		tok, _ := login(t, map[string]any{"email": "temp@example.org", "password": pw})
		e.Do(t, "DELETE", "/api/administrators/"+id2, nil).Expect(t, http.StatusNoContent)
		if got := role(t, tok); got != "Anonymous" {
			t.Fatalf("a deleted administrator's token is %s", got)
		}
		if n, err := e.Store.AccessTokens().Count(context.Background(), bson.D{{Key: "_id", Value: tok}}); err != nil || n != 0 {
			t.Fatalf("%d tokens left (%v)", n, err)
		}
	})

	t.Run("a token made on purpose keeps NotifyBC's rules: no ttl, never expires (control)", func(t *testing.T) {
		m := e.Do(t, "POST", tokens, map[string]any{"name": "forever"}).Expect(t, http.StatusOK).Map(t)
		if _, has := m["ttl"]; has {
			t.Fatalf("a token made without ttl has one: %v", m)
		}
		if got := role(t, m["id"].(string)); got != "Admin" {
			t.Fatalf("role %s", got)
		}
	})
}
