package httpapi

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/govkit/govkit/docplatform/sso"
)

// refreshGrace is how long the answer to one refresh token is kept for
// requests that present the same token just after the call ended (a tab
// whose request left before the new cookie arrived). It is short because
// within it a used refresh token still works on this replica.
const refreshGrace = 2 * time.Second

// refreshOnce makes concurrent refreshes with the same refresh token share
// one call to the provider. With rotating refresh tokens (Keycloak's
// "Revoke Refresh Token", the dev provider), two browser tabs refreshing
// at the same moment would otherwise send the same token twice; the
// provider refuses the second, and its 401 would log the user out
// everywhere. The answer is kept for refreshGrace in process memory, so
// the sharing holds within one replica.
type refreshOnce struct {
	mu    sync.Mutex
	calls map[[32]byte]*refreshCall
}

type refreshCall struct {
	done    chan struct{}
	tokens  sso.Tokens
	err     error
	expires time.Time
}

func (o *refreshOnce) do(ctx context.Context, now time.Time, token string, refresh func(context.Context, string) (sso.Tokens, error)) (sso.Tokens, error) {
	key := sha256.Sum256([]byte(token))
	o.mu.Lock()
	if o.calls == nil {
		o.calls = map[[32]byte]*refreshCall{}
	}
	for k, c := range o.calls {
		if !c.expires.IsZero() && now.After(c.expires) {
			delete(o.calls, k)
		}
	}
	c, ok := o.calls[key]
	if !ok {
		c = &refreshCall{done: make(chan struct{})}
		o.calls[key] = c
	}
	o.mu.Unlock()
	if ok {
		select {
		case <-c.done:
			return c.tokens, c.err
		case <-ctx.Done():
			return sso.Tokens{}, ctx.Err()
		}
	}
	// The call outlives the request that started it: others may be waiting.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	c.tokens, c.err = refresh(cctx, token)
	cancel()
	o.mu.Lock()
	c.expires = now.Add(refreshGrace)
	o.mu.Unlock()
	close(c.done)
	return c.tokens, c.err
}
