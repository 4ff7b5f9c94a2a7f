package event

import _ "embed"

//go:embed event.schema.json
var schema []byte

// JSONSchema returns the JSON Schema (draft 2020-12) of an Event, for
// programs in other languages. It agrees with [Validate] on every record
// except one with a duplicated key, which JSON Schema cannot see because
// it validates the parsed value (rule 7).
func JSONSchema() []byte {
	return append([]byte(nil), schema...)
}
