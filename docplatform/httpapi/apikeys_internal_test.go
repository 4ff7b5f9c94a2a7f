package httpapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"strconv"
	"sync"
	"testing"
)

// The pooled HMACs give every key its own hash however many requests
// share them at once: a reused one starts from the keyed state, never from
// the last key's bytes.
func TestHashAPIKeyReusesHMACsSafely(t *testing.T) {
	s := &Server{secretKeys: &secretKeys{apiKeyMAC: []byte("0123456789abcdef0123456789abcdef")}}
	want := func(key string) []byte {
		m := hmac.New(sha256.New, s.apiKeyMAC)
		m.Write([]byte(key))
		return m.Sum(nil)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				key := "gk_" + strconv.Itoa(g) + "_" + strconv.Itoa(i)
				if got := s.appendAPIKeyHash(nil, key); !bytes.Equal(got, want(key)) {
					errs <- key
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for key := range errs {
		t.Errorf("appendAPIKeyHash(%q) differs from a fresh HMAC", key)
	}
	if got, w := s.appendAPIKeyHash(nil, ""), want(""); !bytes.Equal(got, w) {
		t.Error("appendAPIKeyHash of the empty key differs from a fresh HMAC")
	}
}
