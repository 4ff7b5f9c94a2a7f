package email

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// TestAccount is a public test-mail (Ethereal) account. Its JSON form is
// the value the original stores in configuration{name:'etherealAccount'},
// so an existing deployment's account is read as is.
type TestAccount struct {
	User string   `json:"user"`
	Pass string   `json:"pass"`
	SMTP Endpoint `json:"smtp"`
	IMAP Endpoint `json:"imap,omitzero"`
	POP3 Endpoint `json:"pop3,omitzero"`
	// Web is where the caught mail can be read.
	Web string `json:"web,omitempty"`
}

// Endpoint is one server of a TestAccount.
type Endpoint struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Secure bool   `json:"secure"`
}

// TestAccountSource provides the account NewTestMail sends through.
type TestAccountSource interface {
	TestAccount(ctx context.Context) (TestAccount, error)
}

// AccountStore keeps the test-mail account across restarts, as the
// original keeps it in configuration{name:'etherealAccount'}; the notify
// store implements it.
type AccountStore interface {
	// LoadTestAccount returns ok=false when no account is stored.
	LoadTestAccount(ctx context.Context) (acct TestAccount, ok bool, err error)
	SaveTestAccount(ctx context.Context, acct TestAccount) error
}

// DefaultEtherealAPI is the account service nodemailer's createTestAccount uses.
const DefaultEtherealAPI = "https://api.nodemailer.com"

// Ethereal obtains an account from the Ethereal API: the stored one if
// Store has it, else a new one (then stored). The account is kept in
// memory after the first success.
type Ethereal struct {
	// APIURL defaults to DefaultEtherealAPI.
	APIURL string
	// Client defaults to one with a 10 s timeout.
	Client *http.Client
	// Store is optional; without it a new account is made per process.
	Store AccountStore

	mu   sync.Mutex
	acct *TestAccount
}

// TestAccount implements TestAccountSource.
func (e *Ethereal) TestAccount(ctx context.Context) (TestAccount, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.acct != nil {
		return *e.acct, nil
	}
	if e.Store != nil {
		acct, ok, err := e.Store.LoadTestAccount(ctx)
		if err != nil {
			return TestAccount{}, fmt.Errorf("load stored test-mail account: %w", err)
		}
		if ok && acct.SMTP.Host != "" {
			e.acct = &acct
			return acct, nil
		}
	}
	acct, err := e.create(ctx)
	if err != nil {
		return TestAccount{}, err
	}
	if e.Store != nil {
		if err := e.Store.SaveTestAccount(ctx, acct); err != nil {
			return TestAccount{}, fmt.Errorf("store test-mail account: %w", err)
		}
	}
	e.acct = &acct
	return acct, nil
}

func (e *Ethereal) create(ctx context.Context) (TestAccount, error) {
	api := strings.TrimRight(e.APIURL, "/")
	if api == "" {
		api = DefaultEtherealAPI
	}
	hc := e.Client
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	body, _ := json.Marshal(map[string]string{"requestor": "govkit", "version": "1"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, api+"/user", bytes.NewReader(body))
	if err != nil {
		return TestAccount{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return TestAccount{}, fmt.Errorf("create test-mail account: %w", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return TestAccount{}, fmt.Errorf("create test-mail account: %w", err)
	}
	var out struct {
		TestAccount
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return TestAccount{}, fmt.Errorf("create test-mail account: HTTP %d, unreadable answer: %w", res.StatusCode, err)
	}
	if out.Status != "success" || out.Error != "" {
		msg := out.Error
		if msg == "" {
			msg = "request failed"
		}
		return TestAccount{}, fmt.Errorf("create test-mail account: HTTP %d: %s", res.StatusCode, msg)
	}
	if out.SMTP.Host == "" || out.User == "" {
		return TestAccount{}, errors.New("create test-mail account: answer has no SMTP host or user")
	}
	return out.TestAccount, nil
}
