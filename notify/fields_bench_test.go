package notify_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/govkit/govkit/notify"
)

// BenchmarkDecodeJSONValue decodes request bodies of about 1 MiB (the
// API's body limit) in the shapes a client can choose: objects of the most
// keys allowed, one long array, and deep nesting. The cost per byte is
// what shows that decoding is linear: the shapes cost about the same.
func BenchmarkDecodeJSONValue(b *testing.B) {
	var keys, items strings.Builder
	keys.WriteString(`{"data":{`)
	for o := 0; o < 80; o++ {
		if o > 0 {
			keys.WriteByte(',')
		}
		fmt.Fprintf(&keys, `"o%d":{`, o)
		for i := 0; i < notify.MaxKeys; i++ {
			if i > 0 {
				keys.WriteByte(',')
			}
			fmt.Fprintf(&keys, `"k%04d":0`, i)
		}
		keys.WriteByte('}')
	}
	keys.WriteString(`}}`)
	items.WriteString(`{"data":[`)
	for i := 0; i < 80*notify.MaxKeys; i++ {
		if i > 0 {
			items.WriteByte(',')
		}
		fmt.Fprintf(&items, `"k%06d"`, i)
	}
	items.WriteString(`]}`)
	deep := `{"data":[` + strings.Repeat(strings.Repeat(`{"a":`, 60)+`1`+strings.Repeat(`}`, 60)+`,`, 2400) + `1]}`
	for _, tc := range []struct{ name, body string }{{"keys", keys.String()}, {"array", items.String()}, {"nested", deep}} {
		b.Run(tc.name, func(b *testing.B) {
			in := []byte(tc.body)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := notify.DecodeJSONValue(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
