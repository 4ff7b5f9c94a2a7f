package sqlstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/govkit/govkit/docplatform"
	"github.com/govkit/govkit/internal/testsvc"
)

// The two reads every authenticated request makes: UserAccess for a token,
// APIKeyByHash for an API key. The user is in 5 groups, one soft-deleted;
// 200 groups have keys.
func BenchmarkStore(b *testing.B) {
	for _, be := range []struct {
		name string
		url  func(*testing.B) string
	}{
		{"sqlite", func(b *testing.B) string { return b.TempDir() + "/bench.db" }},
		{"postgres", func(b *testing.B) string { return testsvc.RequirePostgres(b) }},
	} {
		b.Run(be.name, func(b *testing.B) {
			s, err := Open(ctx, be.url(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			u, err := s.UpsertUser(ctx, docplatform.User{ID: "bench-user", Email: "b@example.test"})
			if err != nil {
				b.Fatal(err)
			}
			var hashes [][]byte
			for i := range 200 {
				g, err := s.CreateGroup(ctx, fmt.Sprintf("group %d", i), "", "")
				if err != nil {
					b.Fatal(err)
				}
				if i < 5 {
					if err := s.SetMembership(ctx, docplatform.Membership{UserID: u.ID, GroupID: g.ID, Role: docplatform.RoleMember}); err != nil {
						b.Fatal(err)
					}
				}
				if i == 4 {
					if err := s.SoftDeleteGroup(ctx, g.ID); err != nil {
						b.Fatal(err)
					}
				}
				k, err := s.CreateAPIKey(ctx, docplatform.APIKey{GroupID: g.ID, Prefix: "gk_x", Hash: randHash()})
				if err != nil && i != 4 {
					b.Fatal(err)
				}
				hashes = append(hashes, k.Hash)
			}
			b.Run("UserAccess", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, roles, err := s.UserAccess(ctx, u.ID); err != nil || len(roles) != 4 {
							b.Fatal(roles, err)
						}
					}
				})
			})
			// Access and APIKeyGrant are what the request chain calls (on
			// SQLite through the access cache: a data_version check and a
			// hit).
			b.Run("Access", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if a, err := s.Access(ctx, u.ID); err != nil || len(a.Groups) != 4 {
							b.Fatal(a, err)
						}
					}
				})
			})
			b.Run("APIKeyGrant", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						i = (i + 1) % 4
						if _, err := s.APIKeyGrant(ctx, hashes[i]); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("APIKeyByHash", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := 0
					for pb.Next() {
						i = (i + 1) % 4 // live groups' keys
						if _, err := s.APIKeyByHash(ctx, hashes[i]); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
			b.Run("RecordAPIKeyUse-100keys", func(b *testing.B) {
				ids := map[string]time.Time{}
				for _, h := range hashes[5:105] {
					k, err := s.APIKeyByHash(ctx, h)
					if err != nil {
						b.Fatal(err)
					}
					ids[k.ID] = time.Now()
				}
				b.ReportAllocs()
				for b.Loop() {
					now := time.Now()
					for id := range ids {
						ids[id] = now
					}
					if err := s.RecordAPIKeyUse(ctx, ids); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
