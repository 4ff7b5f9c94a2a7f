package jmesfilter_test

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkMatchCached is one subscriber of a broadcast: the notification's
// filter, compiled once, against a subscription's data.
func BenchmarkMatchCached(b *testing.B) {
	e := engine(b)
	data := map[string]any{"name": "Jane Foo", "age": 42.0, "region": map[string]any{"code": "north"}, "tags": []any{"roads", "weather"}}
	ctx := context.Background()
	const expr = "contains_ci(name, 'foo') && age >= `18` && region.code == 'north' && contains(tags, 'roads')"
	if ok, err := e.Match(ctx, expr, data); !ok || err != nil {
		b.Fatalf("Match = %v, %v", ok, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = e.Match(ctx, expr, data)
	}
}

// BenchmarkValidateUncached is the write-time check of a filter never seen
// before: parse, check function calls, store in the cache.
func BenchmarkValidateUncached(b *testing.B) {
	e := engine(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = e.Validate("broadcastPushNotificationFilter", "contains_ci(name, 'foo') && age >= `18` || id == '"+strconv.Itoa(i)+"'")
		i++
	}
}

// BenchmarkMatchOverBudget is the worst a filter can cost a broadcast: one
// that doubles an array until the step or byte budget stops it.
func BenchmarkMatchOverBudget(b *testing.B) {
	e := engine(b)
	ctx := context.Background()
	expr := "w > `1` && length(" + doubling(40) + ") > `0`"
	data := map[string]any{"w": 2.0}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := e.Match(ctx, expr, data); ok {
			b.Fatal("matched")
		}
	}
}
