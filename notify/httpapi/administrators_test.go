package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/govkit/govkit/notify/httpapi/apitest"
)

const validPassword = "Abcdefg1!x"

// adminEnv has two administrators; tok is an access token of the first.
type adminEnv struct {
	*apitest.Env
	id1, id2, tok string
}

func newAdminEnv(t *testing.T) adminEnv {
	e := apitest.Start(t, apitest.Options{})
	a := adminEnv{Env: e}
	a.id1 = seed(t, e, "/api/administrators", map[string]any{"email": "foo@invalid.local", "password": validPassword})["id"].(string)
	a.tok = e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "foo@invalid.local", "password": validPassword}, apitest.Anonymous...).Expect(t, 200).Map(t)["token"].(string)
	a.id2 = seed(t, e, "/api/administrators", map[string]any{"email": "bar@invalid.local", "password": validPassword})["id"].(string)
	return a
}

func TestAdministratorSignUp(t *testing.T) {
	e := newAdminEnv(t)
	t.Run("anonymous callers are forbidden", func(t *testing.T) {
		e.Do(t, "POST", "/api/administrators", map[string]any{"email": "x@invalid.local", "password": validPassword}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
	})
	t.Run("token admins are forbidden: sign-up is for super admins", func(t *testing.T) {
		e.Do(t, "POST", "/api/administrators", map[string]any{"email": "x@invalid.local", "password": validPassword}, apitest.Token(e.tok)...).Expect(t, http.StatusForbidden)
	})
	t.Run("super admins sign up administrators; the password is not in the record", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/administrators", map[string]any{"email": "new@invalid.local", "password": validPassword, "username": "new"}).Expect(t, http.StatusOK)
		m := r.Map(t)
		if m["email"] != "new@invalid.local" || m["password"] != nil || m["id"] == nil {
			t.Fatalf("body %s", r.Body)
		}
	})
	for _, pw := range []string{"short1!A", "alllowercase1!", "ALLUPPERCASE1!", "NoDigitsHere!", "NoSpecial123a"} {
		t.Run("a password that breaks the complexity rule is 400: "+pw, func(t *testing.T) {
			r := e.Do(t, "POST", "/api/administrators", map[string]any{"email": "weak@invalid.local", "password": pw}).Expect(t, http.StatusBadRequest)
			if r.Map(t)["message"] != "must match pattern" {
				t.Fatalf("body %s", r.Body)
			}
		})
	}
	t.Run("weak passwords leave no administrator behind", func(t *testing.T) {
		if n := len(list(t, e.Env, "/api/administrators?filter="+q(`{"where":{"email":"weak@invalid.local"}}`))); n != 0 {
			t.Fatalf("%d stored", n)
		}
	})
	t.Run("an email differing only in case is a duplicate: 400", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/administrators", map[string]any{"email": "FOO@invalid.local", "password": validPassword}).Expect(t, http.StatusBadRequest)
		if !strings.Contains(r.Text(), "duplicate key") {
			t.Fatalf("body %s", r.Body)
		}
	})
	t.Run("unknown fields are dropped: administrator records are strict", func(t *testing.T) {
		m := seed(t, e.Env, "/api/administrators", map[string]any{"email": "strict@invalid.local", "password": validPassword, "isRoot": true})
		if _, ok := m["isRoot"]; ok {
			t.Fatal("unknown field kept")
		}
	})
}

func TestAdministratorLogin(t *testing.T) {
	e := newAdminEnv(t)
	t.Run("anonymous callers log in and get a 64-character token", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "foo@invalid.local", "password": validPassword, "tokenName": "ci", "ttl": 3600}, apitest.Anonymous...).Expect(t, http.StatusOK)
		tok := r.Map(t)["token"].(string)
		if len(tok) != 64 {
			t.Fatalf("token %q", tok)
		}
		toks := list(t, e.Env, "/api/administrators/"+e.id1+"/access-tokens?filter="+q(`{"where":{"name":"ci"}}`))
		if len(toks) != 1 || toks[0]["id"] != tok || toks[0]["ttl"] != float64(3600) {
			t.Fatalf("tokens %v", toks)
		}
	})
	t.Run("the email matches ignoring case", func(t *testing.T) {
		e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "Foo@Invalid.Local", "password": validPassword}, apitest.Anonymous...).Expect(t, http.StatusOK)
	})
	t.Run("a wrong password is 401", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "foo@invalid.local", "password": "Wrong1!pass"}, apitest.Anonymous...).Expect(t, http.StatusUnauthorized)
		if r.Map(t)["message"] != "Invalid email or password." {
			t.Fatalf("body %s", r.Body)
		}
	})
	t.Run("an unknown email is 401 with the same message", func(t *testing.T) {
		r := e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "who@invalid.local", "password": validPassword}, apitest.Anonymous...).Expect(t, http.StatusUnauthorized)
		if r.Map(t)["message"] != "Invalid email or password." {
			t.Fatalf("body %s", r.Body)
		}
	})
	t.Run("a request that is already super admin may not log in", func(t *testing.T) {
		e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "foo@invalid.local", "password": validPassword}).Expect(t, http.StatusForbidden)
	})
	t.Run("a SiteMinder user may log in", func(t *testing.T) {
		e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "foo@invalid.local", "password": validPassword}, apitest.SMUser("bob")...).Expect(t, http.StatusOK)
	})
}

func TestAdministratorRecords(t *testing.T) {
	e := newAdminEnv(t)
	tok := apitest.Token(e.tok)
	t.Run("GET list: anonymous 403, super admin all, token admin only itself", func(t *testing.T) {
		e.Do(t, "GET", "/api/administrators", nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		if n := len(list(t, e.Env, "/api/administrators?filter[where][email]=foo@invalid.local")); n != 1 {
			t.Fatalf("qs filter: %d", n)
		}
		if n := len(list(t, e.Env, "/api/administrators")); n != 2 {
			t.Fatalf("super admin: %d", n)
		}
		mine := list(t, e.Env, "/api/administrators", tok...)
		if len(mine) != 1 || mine[0]["id"] != e.id1 {
			t.Fatalf("token admin: %v", mine)
		}
	})
	t.Run("count follows the same rule", func(t *testing.T) {
		var c map[string]float64
		e.Do(t, "GET", "/api/administrators/count", nil, tok...).Expect(t, 200).JSON(t, &c)
		if c["count"] != 1 {
			t.Fatalf("count %v", c)
		}
	})
	t.Run("GET by id: anonymous 403, own record 200, other record 403 for a token admin", func(t *testing.T) {
		e.Do(t, "GET", "/api/administrators/"+e.id1, nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		if m := e.Do(t, "GET", "/api/administrators/"+e.id1, nil, tok...).Expect(t, 200).Map(t); m["email"] != "foo@invalid.local" {
			t.Fatalf("got %v", m)
		}
		e.Do(t, "GET", "/api/administrators/"+e.id2, nil, tok...).Expect(t, http.StatusForbidden)
		e.Do(t, "GET", "/api/administrators/"+e.id2, nil).Expect(t, http.StatusOK)
	})
	t.Run("an unknown administrator id is 404", func(t *testing.T) {
		e.Do(t, "GET", "/api/administrators/000000000000000000000000", nil).Expect(t, http.StatusNotFound)
	})
	t.Run("PATCH is 204; a token admin only patches itself", func(t *testing.T) {
		e.Do(t, "PATCH", "/api/administrators/"+e.id1, map[string]any{"username": "x"}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "PATCH", "/api/administrators/"+e.id2, map[string]any{"username": "x"}, tok...).Expect(t, http.StatusForbidden)
		r := e.Do(t, "PATCH", "/api/administrators/"+e.id1, map[string]any{"username": "foo"}, tok...).Expect(t, http.StatusNoContent)
		if len(r.Body) != 0 {
			t.Fatalf("204 with a body: %s", r.Body)
		}
		if m := e.Do(t, "GET", "/api/administrators/"+e.id1, nil).Map(t); m["username"] != "foo" || m["email"] != "foo@invalid.local" {
			t.Fatalf("got %v", m)
		}
	})
	t.Run("PATCH with a password changes the login password", func(t *testing.T) {
		e.Do(t, "PATCH", "/api/administrators/"+e.id2, map[string]any{"password": "Newpass12!x"}).Expect(t, http.StatusNoContent)
		e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "bar@invalid.local", "password": "Newpass12!x"}, apitest.Anonymous...).Expect(t, http.StatusOK)
	})
	t.Run("PUT is 204 and keeps emails unique ignoring case", func(t *testing.T) {
		e.Do(t, "PUT", "/api/administrators/"+e.id2, map[string]any{"email": "bar@invalid.local", "username": "bar"}).Expect(t, http.StatusNoContent)
		e.Do(t, "PUT", "/api/administrators/"+e.id2, map[string]any{"email": "FOO@invalid.local"}).Expect(t, http.StatusBadRequest)
		e.Do(t, "PUT", "/api/administrators/"+e.id2, map[string]any{"email": "bar@invalid.local"}, tok...).Expect(t, http.StatusForbidden)
	})
	t.Run("user-credential: complexity rule, own record only, bcrypt hash stored", func(t *testing.T) {
		e.Do(t, "POST", "/api/administrators/"+e.id1+"/user-credential", map[string]any{"password": validPassword}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "POST", "/api/administrators/"+e.id2+"/user-credential", map[string]any{"password": validPassword}, tok...).Expect(t, http.StatusForbidden)
		r := e.Do(t, "POST", "/api/administrators/"+e.id1+"/user-credential", map[string]any{"password": "weak"}, tok...).Expect(t, http.StatusBadRequest)
		if r.Map(t)["message"] != "must match pattern" {
			t.Fatalf("body %s", r.Body)
		}
		m := e.Do(t, "POST", "/api/administrators/"+e.id1+"/user-credential", map[string]any{"password": "Another1!pw"}, tok...).Expect(t, http.StatusOK).Map(t)
		if m["userId"] != e.id1 || m["password"] != nil {
			t.Fatalf("got %v", m)
		}
		creds, err := e.Store.UserCredentials().Find(t.Context(), storeQuery(e.id1))
		if err != nil || len(creds) != 1 || bcrypt.CompareHashAndPassword([]byte(creds[0].Password), []byte("Another1!pw")) != nil {
			t.Fatalf("stored credential does not hold the bcrypt hash (%d records, %v)", len(creds), err)
		}
	})
	t.Run("DELETE is 204 and removes the credential and tokens too", func(t *testing.T) {
		e.Do(t, "DELETE", "/api/administrators/"+e.id2, nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "DELETE", "/api/administrators/"+e.id2, nil, tok...).Expect(t, http.StatusForbidden)
		id3 := seed(t, e.Env, "/api/administrators", map[string]any{"email": "gone@invalid.local", "password": validPassword})["id"].(string)
		tok3 := e.Do(t, "POST", "/api/administrators/"+id3+"/access-tokens", map[string]any{}).Expect(t, 200).Map(t)["id"].(string)
		e.Do(t, "DELETE", "/api/administrators/"+id3, nil).Expect(t, http.StatusNoContent)
		if m := whoami(t, e.Env, apitest.Token(tok3)...); m["role"] != "Anonymous" {
			t.Fatal("the deleted administrator's token still works")
		}
		e.Do(t, "POST", "/api/administrators/login", map[string]any{"email": "gone@invalid.local", "password": validPassword}, apitest.Anonymous...).Expect(t, http.StatusUnauthorized)
		e.Do(t, "DELETE", "/api/administrators/"+e.id1, nil, tok...).Expect(t, http.StatusNoContent)
	})
}

func TestAdministratorAccessTokens(t *testing.T) {
	e := newAdminEnv(t)
	tok := apitest.Token(e.tok)
	base1, base2 := "/api/administrators/"+e.id1+"/access-tokens", "/api/administrators/"+e.id2+"/access-tokens"
	t.Run("POST: anonymous 403, other record 403, own 200 with a 64-character id and ttl", func(t *testing.T) {
		e.Do(t, "POST", base1, map[string]any{"ttl": 100}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "POST", base2, map[string]any{"ttl": 100}, tok...).Expect(t, http.StatusForbidden)
		m := e.Do(t, "POST", base1, map[string]any{"ttl": 100, "name": "n"}, tok...).Expect(t, http.StatusOK).Map(t)
		if len(m["id"].(string)) != 64 || m["ttl"] != float64(100) || m["userId"] != e.id1 {
			t.Fatalf("got %v", m)
		}
		e.Do(t, "POST", base2, map[string]any{}).Expect(t, http.StatusOK)
	})
	t.Run("GET: own tokens only", func(t *testing.T) {
		e.Do(t, "GET", base1, nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "GET", base2, nil, tok...).Expect(t, http.StatusForbidden)
		toks := list(t, e.Env, base1, tok...)
		for _, x := range toks {
			if x["userId"] != e.id1 {
				t.Fatalf("foreign token listed: %v", x)
			}
		}
		if len(toks) != 2 {
			t.Fatalf("got %d", len(toks))
		}
	})
	t.Run("PATCH by where answers the count; userId cannot be changed", func(t *testing.T) {
		e.Do(t, "PATCH", base1+"?where="+q(`{"name":"n"}`), map[string]any{"name": "m"}, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "PATCH", base2, map[string]any{"name": "m"}, tok...).Expect(t, http.StatusForbidden)
		r := e.Do(t, "PATCH", base1, map[string]any{"userId": e.id2}).Expect(t, http.StatusForbidden)
		if !strings.Contains(r.Text(), "Updating userId is not allowed.") {
			t.Fatalf("body %s", r.Body)
		}
		var c map[string]float64
		e.Do(t, "PATCH", base1+"?where="+q(`{"name":"n"}`), map[string]any{"name": "m"}, tok...).Expect(t, http.StatusOK).JSON(t, &c)
		if c["count"] != 1 {
			t.Fatalf("count %v", c)
		}
	})
	t.Run("DELETE by where answers the count", func(t *testing.T) {
		e.Do(t, "DELETE", base1+"?where="+q(`{"name":"m"}`), nil, apitest.Anonymous...).Expect(t, http.StatusForbidden)
		e.Do(t, "DELETE", base2, nil, tok...).Expect(t, http.StatusForbidden)
		var c map[string]float64
		e.Do(t, "DELETE", base1+"?where="+q(`{"name":"m"}`), nil, tok...).Expect(t, http.StatusOK).JSON(t, &c)
		if c["count"] != 1 {
			t.Fatalf("count %v", c)
		}
	})
}

func TestWhoami(t *testing.T) {
	e := apitest.Start(t, apitest.Options{})
	for _, c := range []struct {
		name    string
		headers []string
		role    string
	}{
		{"anonymous", apitest.Anonymous, "Anonymous"},
		{"super admin", apitest.SuperAdmin, "SuperAdmin"},
		{"SiteMinder user", apitest.SMUser("bob"), "AuthenticatedUser"},
	} {
		t.Run("whoami answers every caller: "+c.name, func(t *testing.T) {
			if m := whoami(t, e, c.headers...); m["role"] != c.role {
				t.Fatalf("got %v", m)
			}
		})
	}
}
