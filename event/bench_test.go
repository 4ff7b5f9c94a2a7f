package event_test

import (
	"testing"

	"github.com/govkit/govkit/event"
)

// The benchmarks run over the corpus: "valid" cycles through its valid
// records, "invalid" through its invalid ones, so one op is one record and
// both validators see exactly the same bytes. Reproduce with the command
// in BENCHMARKS.md (section "Event").

func corpusInputs(b *testing.B, valid bool) [][]byte {
	var in [][]byte
	for _, c := range loadCorpus(b) {
		if c.Valid == valid {
			in = append(in, c.bytes(b))
		}
	}
	return in
}

func benchValidate(b *testing.B, valid bool) {
	in := corpusInputs(b, valid)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if (event.Validate(in[i%len(in)]) == nil) != valid {
			b.Fatal("verdict changed")
		}
	}
}

func benchSchema(b *testing.B, valid bool) {
	sch := compileSchema(b)
	in := corpusInputs(b, valid)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		schemaValid(sch, in[i%len(in)])
	}
}

// BenchmarkEvent measures Validate and the compiled JSON Schema on the
// same records in one run; valid/Parse adds decoding into the value type,
// which allocates the strings it keeps.
func BenchmarkEvent(b *testing.B) {
	b.Run("valid/Validate", func(b *testing.B) { benchValidate(b, true) })
	b.Run("valid/JSONSchema", func(b *testing.B) { benchSchema(b, true) })
	b.Run("invalid/Validate", func(b *testing.B) { benchValidate(b, false) })
	b.Run("invalid/JSONSchema", func(b *testing.B) { benchSchema(b, false) })
	b.Run("valid/Parse", benchParse)
}

func benchParse(b *testing.B) {
	in := corpusInputs(b, true)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := event.Parse(in[i%len(in)]); err != nil {
			b.Fatal(err)
		}
	}
}
