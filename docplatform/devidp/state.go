package devidp

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The grants a provider keeps across restarts, when Config.StateFile is
// set: every live refresh token and the access tokens issued beside them
// (for userinfo, introspection and revocation). Logins in progress (the
// form, a code not yet exchanged) are not kept: they last minutes.
//
// The file holds live refresh tokens, so it is written like the key file:
// readable by its owner only, replaced atomically.

type savedState struct {
	Version       int                 `json:"version"`
	RefreshTokens []savedRefreshToken `json:"refreshTokens"`
	AccessTokens  []savedAccessToken  `json:"accessTokens"`
}

type savedRefreshToken struct {
	Token    string    `json:"token"`
	ClientID string    `json:"clientId"`
	Subject  string    `json:"subject"`
	Scopes   []string  `json:"scopes"`
	AuthTime time.Time `json:"authTime"`
	AMR      []string  `json:"amr"`
	Family   string    `json:"family"`
	Expires  time.Time `json:"expires"`
}

type savedAccessToken struct {
	ID       string    `json:"id"`
	ClientID string    `json:"clientId"`
	Subject  string    `json:"subject"`
	Scopes   []string  `json:"scopes"`
	Family   string    `json:"family"`
	Expires  time.Time `json:"expires"`
}

const stateVersion = 1

// loadState fills the token maps from the state file. A missing file is a
// first start; tokens that expired, or whose client or user this provider
// no longer has, are dropped. A file that cannot be parsed is an error
// rather than a silent loss of every session.
func (s *storage) loadState() error {
	file := s.cfg.StateFile
	if file == "" {
		return nil
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("devidp: state file: %w", err)
	}
	var st savedState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("devidp: state file %s: %w (delete it to start without saved logins)", file, err)
	}
	if st.Version != stateVersion {
		return nil // another layout: start afresh rather than misread it
	}
	now := time.Now()
	known := func(clientID, subject string) bool {
		_, c := s.clients[clientID]
		_, u := s.users[subject]
		return c && u
	}
	for _, r := range st.RefreshTokens {
		if now.After(r.Expires) || !known(r.ClientID, r.Subject) || r.Token == "" {
			continue
		}
		s.refreshTokens[r.Token] = &refreshToken{token: r.Token, clientID: r.ClientID, subject: r.Subject, scopes: r.Scopes,
			authTime: r.AuthTime, amr: r.AMR, family: r.Family, expires: r.Expires}
	}
	for _, a := range st.AccessTokens {
		if now.After(a.Expires) || !known(a.ClientID, a.Subject) || a.ID == "" {
			continue
		}
		s.accessTokens[a.ID] = &accessToken{id: a.ID, clientID: a.ClientID, subject: a.Subject, scopes: a.Scopes, family: a.Family, expires: a.Expires}
	}
	return nil
}

// saveState writes the token maps to the state file; callers hold s.mu,
// so that writes happen in the order of the changes. A failure is logged:
// the provider keeps working, only a restart would lose the logins.
func (s *storage) saveState() {
	file := s.cfg.StateFile
	if file == "" {
		return
	}
	st := savedState{Version: stateVersion, RefreshTokens: []savedRefreshToken{}, AccessTokens: []savedAccessToken{}}
	for _, r := range s.refreshTokens {
		st.RefreshTokens = append(st.RefreshTokens, savedRefreshToken{r.token, r.clientID, r.subject, r.scopes, r.authTime, r.amr, r.family, r.expires})
	}
	for _, a := range s.accessTokens {
		st.AccessTokens = append(st.AccessTokens, savedAccessToken{a.id, a.clientID, a.subject, a.scopes, a.family, a.expires})
	}
	if err := writeFileAtomic(file, st); err != nil {
		s.cfg.Logger.Error("devidp: logins not saved; they will not survive a restart", "error", err)
	}
}

func writeFileAtomic(file string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".devidp-state-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
