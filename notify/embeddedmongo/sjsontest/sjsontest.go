// Package sjsontest holds the documents the tests of FerretDB's stored
// format (embeddedmongo.DecodeStored) write through FerretDB and compare
// with what it sends back: on the embedded store (SQLite) and on
// PostgreSQL (notify/ferretpg), which keep the same format in different
// columns.
package sjsontest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// FixedDocs are the cases written out: every type and its edges,
// including values FerretDB refuses (NaN, infinities: the caller keeps
// the documents it accepted).
func FixedDocs() []bson.D {
	oid := bson.ObjectID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	return []bson.D{
		{{Key: "_id", Value: "empty"}},
		{{Key: "_id", Value: oid}, {Key: "d", Value: bson.D{}}, {Key: "a", Value: bson.A{}}, {Key: "s", Value: ""}},
		{{Key: "_id", Value: "doubles"}, {Key: "a", Value: bson.A{
			0.0, math.Copysign(0, -1), 1.0, -1.5, 0.1, 1e21, 1e-7, 123456789012345678.0, math.MaxFloat64, -math.MaxFloat64,
			math.SmallestNonzeroFloat64, 2.2250738585072014e-308, float64(1 << 53), 1.0 / 3,
		}}, {Key: "negzero", Value: math.Copysign(0, -1)}},
		{{Key: "_id", Value: "nan"}, {Key: "x", Value: math.NaN()}},
		{{Key: "_id", Value: "inf"}, {Key: "x", Value: math.Inf(1)}},
		{{Key: "_id", Value: "ints"}, {Key: "a", Value: bson.A{
			int32(0), int32(math.MaxInt32), int32(math.MinInt32), int64(math.MaxInt64), int64(math.MinInt64), int64(0), int64(-1),
		}}},
		{{Key: "_id", Value: int32(7)}, {Key: "dates", Value: bson.A{
			bson.DateTime(0), bson.DateTime(-1), bson.DateTime(1700000000123), bson.DateTime(-62135596800001),
			bson.DateTime(253402300799999), bson.DateTime(math.MaxInt64), bson.DateTime(math.MinInt64),
		}}},
		{{Key: "_id", Value: int64(1) << 40}, {Key: "ts", Value: bson.A{
			bson.Timestamp{}, bson.Timestamp{T: 1, I: 2}, bson.Timestamp{T: math.MaxUint32, I: math.MaxUint32},
		}}},
		{{Key: "_id", Value: "bin"}, {Key: "b", Value: bson.A{
			bson.Binary{Subtype: 0, Data: []byte{}}, bson.Binary{Subtype: 0, Data: []byte{0, 1, 2, 255}},
			bson.Binary{Subtype: 1, Data: []byte("f")}, bson.Binary{Subtype: 2, Data: []byte("old binary")},
			bson.Binary{Subtype: 3, Data: bytes.Repeat([]byte{7}, 16)}, bson.Binary{Subtype: 4, Data: bytes.Repeat([]byte{9}, 16)},
			bson.Binary{Subtype: 5, Data: []byte("md5md5md5md5md5m")}, bson.Binary{Subtype: 6, Data: []byte("x")},
			bson.Binary{Subtype: 0x80, Data: []byte("user")}, bson.Binary{Subtype: 0xff, Data: []byte("last")},
		}}, {Key: "nilbin", Value: bson.Binary{Subtype: 0}}},
		{{Key: "_id", Value: "regex"}, {Key: "r", Value: bson.A{
			bson.Regex{Pattern: "^a.*b$", Options: ""}, bson.Regex{Pattern: "x", Options: "imsx"},
			bson.Regex{Pattern: `\d+"quoted"\\`, Options: "i"}, bson.Regex{Pattern: "ünï", Options: "u"},
		}}},
		{{Key: "_id", Value: "misc"}, {Key: "t", Value: true}, {Key: "f", Value: false}, {Key: "n", Value: nil},
			{Key: "na", Value: bson.A{nil, nil}}, {Key: "o", Value: oid}},
		{{Key: "_id", Value: "strings"}, {Key: "a", Value: bson.A{
			"plain", "ünïcödé", "日本語", "emoji 🎉", "<script>&amp;</script>", "quote \" backslash \\ slash /",
			"control \x01\x1f\t\n\r", "line\u2028sep\u2029", "\x00nul inside", "invalid \xff utf8", strings.Repeat("long ", 2000),
		}}},
		{{Key: "_id", Value: "keys"}, {Key: "ünï", Value: 1.0}, {Key: "with space", Value: 2.0}, {Key: "<>&", Value: 3.0},
			{Key: "🎉", Value: 4.0}, {Key: "", Value: 5.0}, {Key: "nested", Value: bson.D{
				{Key: `q"uote`, Value: 1.0}, {Key: `back\slash`, Value: 2.0}, {Key: "tab\there", Value: 3.0}, {Key: "<>&\u2028", Value: 4.0},
			}}},
		{{Key: "_id", Value: bson.D{{Key: "x", Value: 1.0}, {Key: "y", Value: "z"}}}, {Key: "v", Value: 1.0}},
		{{Key: "_id", Value: "deep"}, {Key: "a", Value: bson.D{{Key: "b", Value: bson.D{{Key: "c", Value: bson.D{
			{Key: "d", Value: bson.A{bson.D{{Key: "e", Value: bson.A{1.0, "two", bson.D{}}}}, bson.A{}}},
		}}}}}}},
		{{Key: "_id", Value: "nestedarray"}, {Key: "a", Value: bson.A{bson.A{1.0}}}},
		manyFields(300),
	}
}

func manyFields(n int) bson.D {
	d := bson.D{{Key: "_id", Value: "many"}}
	for i := 0; i < n; i++ {
		d = append(d, bson.E{Key: fmt.Sprintf("f%03d", n-i), Value: int32(i)})
	}
	return d
}

var randomKeys = []string{"a", "b", "serviceName", "state", "userChannelId", "ünï", "日本", "with space", "<&>", "🎉", "x_1", "Z", "k\u2028"}

// RandomDoc is a random document of the types FerretDB stores; its _id
// is unique by i.
func RandomDoc(rng *rand.Rand, i int) bson.D {
	var id any
	switch rng.IntN(4) {
	case 0:
		id = fmt.Sprintf("id-%d", i)
	case 1:
		id = int32(i)
	case 2:
		id = int64(i) << 33
	default:
		var oid bson.ObjectID
		for j := range oid {
			oid[j] = byte(rng.IntN(256))
		}
		oid[0], oid[1] = byte(i>>8), byte(i)
		id = oid
	}
	d := bson.D{{Key: "_id", Value: id}}
	return append(d, randomFields(rng, 3, rng.IntN(12))...)
}

func randomFields(rng *rand.Rand, depth, n int) bson.D {
	var d bson.D
	used := map[string]bool{}
	for len(d) < n {
		k := randomKeys[rng.IntN(len(randomKeys))]
		if rng.IntN(4) == 0 {
			k = fmt.Sprintf("%s%d", k, rng.IntN(1000))
		}
		if used[k] {
			continue
		}
		used[k] = true
		d = append(d, bson.E{Key: k, Value: randomValue(rng, depth, true)})
	}
	return d
}

func randomValue(rng *rand.Rand, depth int, arrays bool) any {
	max := 15
	if depth <= 0 {
		max = 13
	}
	switch k := rng.IntN(max); k {
	case 0:
		switch rng.IntN(4) {
		case 0:
			return float64(rng.IntN(1000))
		case 1:
			return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(600)-300))
		case 2:
			return math.Float64frombits(rng.Uint64()) // NaN and infinities are refused, the rest stored
		default:
			return rng.Float64()
		}
	case 1:
		b := make([]rune, rng.IntN(20))
		for j := range b {
			switch rng.IntN(4) {
			case 0:
				b[j] = rune(rng.IntN(0x80))
			case 1:
				b[j] = rune(rng.IntN(0x800))
			case 2:
				b[j] = rune(0x10000 + rng.IntN(0x1000))
			default:
				b[j] = rune('a' + rng.IntN(26))
			}
		}
		return string(b)
	case 2:
		b := make([]byte, rng.IntN(40))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		sub := []byte{0, 1, 2, 3, 4, 5, 6, 0x80}[rng.IntN(8)]
		return bson.Binary{Subtype: sub, Data: b}
	case 3:
		var oid bson.ObjectID
		for j := range oid {
			oid[j] = byte(rng.IntN(256))
		}
		return oid
	case 4:
		return rng.IntN(2) == 0
	case 5:
		return bson.DateTime(rng.Int64() >> rng.IntN(64))
	case 6:
		return nil
	case 7:
		return bson.Regex{Pattern: fmt.Sprintf("^v%d.*", rng.IntN(100)), Options: []string{"", "i", "ms", "imsx"}[rng.IntN(4)]}
	case 8:
		return int32(rng.Uint32())
	case 9:
		return bson.Timestamp{T: rng.Uint32(), I: rng.Uint32()}
	case 10:
		return int64(rng.Uint64())
	case 11, 12:
		return fmt.Sprintf("s%d", rng.IntN(1000))
	case 13:
		return randomFields(rng, depth-1, rng.IntN(5))
	default:
		if !arrays {
			return bson.D{}
		}
		a := bson.A{}
		for n := rng.IntN(6); len(a) < n; {
			a = append(a, randomValue(rng, depth-1, false))
		}
		return a
	}
}
