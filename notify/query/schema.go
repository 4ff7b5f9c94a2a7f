package query

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
}

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
