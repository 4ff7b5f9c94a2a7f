package query

import (
	"slices"
	"strings"
)

// FieldType says how where values for a field are cast.
type FieldType int

// Field types. Mixed (the zero value) takes values as given: JSON numbers
// stay numbers and bracket-form text stays text, as with the original's
// schemaless fields.
const (
	Mixed FieldType = iota
	String
	Number
	Bool
	DateTime
	ObjectID
)

func (t FieldType) String() string {
	switch t {
	case String:
		return "a string"
	case Number:
		return "a number"
	case Bool:
		return "true or false"
	case DateTime:
		return "a date-time like 2026-01-02T03:04:05.000Z"
	case ObjectID:
		return "an id of 24 hexadecimal digits"
	}
	return "a value"
}

// Schema describes the typed fields of one collection, keyed by dotted path
// ("created", "bounceMessages.date"). Fields not listed are Mixed. The _id
// field is ObjectID unless the Schema lists it otherwise.
type Schema struct {
	Collection string
	Fields     map[string]FieldType
	// hidden are the paths the caller may not see (see Hiding).
	hidden [][]string
}

// Hiding returns a copy of s for a caller from whom the API hides paths
// (top-level fields such as "confirmationRequest", or dotted paths): where,
// order and fields that reach any of them are refused with a 400 naming
// the field, so that filters cannot be an oracle for what responses leave
// out. A path reaches a hidden one when it is that path, lies below it
// ("confirmationRequest.confirmationCode", "readBy.0": array positions are
// path parts too) or above it (a match on a whole parent document compares
// the hidden part as well). Operators that read every field at once are
// refused too: $text searches a text index that may cover hidden fields,
// and sorting by its score ranks by them.
func (s *Schema) Hiding(paths ...string) *Schema {
	c := &Schema{}
	if s != nil {
		*c = *s
	}
	c.hidden = append([][]string(nil), c.hidden...)
	for _, p := range paths {
		c.hidden = append(c.hidden, strings.Split(p, "."))
	}
	return c
}

// visible refuses a field path that reaches a hidden path. path names the
// parameter for the message.
func (s *Schema) visible(path, field string) error {
	if s == nil || len(s.hidden) == 0 {
		return nil
	}
	parts := strings.Split(field, ".")
	for _, h := range s.hidden {
		n := min(len(h), len(parts))
		if slices.Equal(h[:n], parts[:n]) {
			return errorf(path, "the field %q is not available to this caller: %s is hidden from it, so filters, order and fields may not use it", field, strings.Join(h, "."))
		}
	}
	return nil
}

// hides reports whether s hides any path (for operators that read every
// field).
func (s *Schema) hides() bool { return s != nil && len(s.hidden) > 0 }

func (s *Schema) typeOf(path string) FieldType {
	if s != nil {
		if t, ok := s.Fields[path]; ok {
			return t
		}
	}
	if path == "_id" {
		return ObjectID
	}
	return Mixed
}

func withBase(fields map[string]FieldType) map[string]FieldType {
	fields["created"] = DateTime
	fields["updated"] = DateTime
	return fields
}

// Schemas of the service's collections, with the field types of the
// original's models.
var (
	Subscriptions = &Schema{Collection: "subscription", Fields: withBase(map[string]FieldType{})}

	Notifications = &Schema{Collection: "notification", Fields: withBase(map[string]FieldType{
		"validTill":                         DateTime,
		"invalidBefore":                     DateTime,
		"isBroadcast":                       Bool,
		"skipSubscriptionConfirmationCheck": Bool,
	})}

	Configurations = &Schema{Collection: "configuration", Fields: withBase(map[string]FieldType{})}

	Bounces = &Schema{Collection: "bounce", Fields: withBase(map[string]FieldType{
		"hardBounceCount":           Number,
		"latestNotificationStarted": DateTime,
		"latestNotificationEnded":   DateTime,
		"bounceMessages.date":       DateTime,
	})}

	Administrators = &Schema{Collection: "administrator", Fields: withBase(map[string]FieldType{})}

	// AccessTokens have 64-character string ids, not ObjectIds.
	AccessTokens = &Schema{Collection: "AccessToken", Fields: withBase(map[string]FieldType{
		"_id":    String,
		"ttl":    Number,
		"userId": ObjectID,
	})}

	UserCredentials = &Schema{Collection: "UserCredential", Fields: withBase(map[string]FieldType{
		"userId": ObjectID,
	})}
)
