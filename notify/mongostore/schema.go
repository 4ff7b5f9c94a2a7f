package mongostore

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/govkit/govkit/notify"
	"github.com/govkit/govkit/notify/embeddedmongo"
)

// emailKeyField holds notify.EmailKey(email) on administrator documents; its
// unique index makes email unique case-insensitively on every server,
// including the embedded one, which has no collation indexes.
const emailKeyField = "emailLowercase"

// schema is what the store must know about a collection beyond the record
// type: which fields hold ObjectIds and dates (filters from the API carry
// them as strings, and mongoose casts them by schema, so we do too) and
// which indexes the original defines.
type schema struct {
	name      string
	stringID  bool // _id is a string (AccessToken), not an ObjectId
	objectIDs map[string]bool
	dates     map[string]bool
	indexes   []indexSpec
	onWrite   func(doc bson.D) bson.D // adjusts an inserted or replacing document
	onSet     func(set bson.D) bson.D // adjusts the $set of an update
	// nullWhenMissing are fields of a unique index that may be missing.
	// MongoDB indexes a missing field as null, so two records without it
	// collide; FerretDB v1 on SQLite lets any number of them through
	// unless the null is stored. On the embedded store these fields are
	// therefore written as null and read back as missing.
	nullWhenMissing []string
	// lookups are the fields a FieldIndex answers equality on (see
	// Store.SetFieldIndex).
	lookups []lookupField
	// textFields are the string fields a $text search reads on a server
	// without text indexes (textsearch.go): those of the wildcard text
	// index that hold words a person looks for.
	textFields []string
	// indexed are the fields the field index answers lists, counts and
	// sorts on (see indexquery.go), and composites its indexes on several
	// of them, for counts and groups on those fields that read an index
	// alone. On MongoDB and FerretDB on PostgreSQL the composites are
	// made as server indexes too (serverIndexes).
	indexed    []embeddedmongo.Field
	single     []string
	composites [][]string
}

func str(names ...string) []embeddedmongo.Field {
	out := make([]embeddedmongo.Field, len(names))
	for i, n := range names {
		out[i] = embeddedmongo.Field{Name: n, Kind: embeddedmongo.KindString}
	}
	return out
}

func date(names ...string) []embeddedmongo.Field {
	out := make([]embeddedmongo.Field, len(names))
	for i, n := range names {
		out[i] = embeddedmongo.Field{Name: n, Kind: embeddedmongo.KindDate}
	}
	return out
}

var baseDates = map[string]bool{"created": true, "updated": true}

func dates(extra ...string) map[string]bool {
	m := map[string]bool{"created": true, "updated": true}
	for _, k := range extra {
		m[k] = true
	}
	return m
}

// textIndex is the original's wildcard text index. The embedded store
// cannot build text indexes; it is skipped there (and logged).
var textIndex = indexSpec{Name: "$**_text", Keys: bson.D{{Key: "$**", Value: "text"}}, Text: true}

var (
	subscriptionSchema = &schema{
		name:  notify.CollSubscription,
		dates: baseDates,
		// a user's list (userId); duplicate detection, verify with
		// replace and unsubscribe from additional services (the address,
		// matched ignoring case)
		lookups:    []lookupField{{name: "userId"}, {name: "userChannelId", fold: true}},
		textFields: []string{"serviceName", "channel", "userChannelId", "state", "userId"},
		indexes: []indexSpec{
			textIndex,
			{Name: "serviceName_state_channel", Keys: bson.D{{Key: "serviceName", Value: 1}, {Key: "state", Value: 1}, {Key: "channel", Value: 1}}},
			{Name: "created", Keys: bson.D{{Key: "created", Value: 1}}},
			// Ours: the lookups by address and user; the console's sorts
			// and filters are the composites (serverIndexes).
			{Name: "userChannelId", Keys: bson.D{{Key: "userChannelId", Value: 1}}},
			{Name: "userId", Keys: bson.D{{Key: "userId", Value: 1}}},
		},
		indexed: append(str("serviceName", "channel", "state", "userChannelId", "userId"), date("created", "updated")...),
		single:  []string{"userChannelId", "userId"},
		// Every combination of serviceName, state and channel is a prefix
		// of one of the middle three, so the console's counts read a
		// range of one index; each composite serves the console's sort by
		// its first field (date, service, state, address) with filters on
		// the others, checked on index entries.
		composites: [][]string{{"created", "serviceName", "channel", "state"}, {"updated", "serviceName", "channel", "state"},
			{"serviceName", "state", "channel"}, {"state", "channel", "serviceName"}, {"channel", "serviceName", "state"},
			{"userChannelId", "serviceName", "channel", "state"}},
	}
	notificationSchema = &schema{
		name:  notify.CollNotification,
		dates: dates("validTill", "invalidBefore"),
		indexes: []indexSpec{
			textIndex,
			// Ours: a user's own list (addressed to them by address or
			// user id); the console's sorts and filters are the
			// composites (serverIndexes).
			{Name: "userChannelId", Keys: bson.D{{Key: "userChannelId", Value: 1}}},
			{Name: "userId", Keys: bson.D{{Key: "userId", Value: 1}}},
		},
		indexed: append(append(str("serviceName", "channel", "state", "userChannelId", "userId"), date("created", "updated")...),
			embeddedmongo.Field{Name: "isBroadcast", Kind: embeddedmongo.KindBool},
			// A user's own list (the API's audience and visibility
			// rule): addressed to them (userChannelId, userId) or an
			// in-app broadcast (isBroadcast_channel), each found by an
			// index; validity and deletedBy are checked on those few.
			embeddedmongo.Field{Name: "validTill", Kind: embeddedmongo.KindDate, Unindexed: true},
			embeddedmongo.Field{Name: "invalidBefore", Kind: embeddedmongo.KindDate, Unindexed: true},
			embeddedmongo.Field{Name: "deletedBy", Kind: embeddedmongo.KindStrings, Unindexed: true}),
		single: []string{"userChannelId", "userId"},
		composites: [][]string{{"created", "serviceName", "channel", "state", "isBroadcast"}, {"updated", "serviceName", "channel", "state", "isBroadcast"},
			{"serviceName", "state", "channel", "isBroadcast"}, {"state", "channel", "serviceName"}, {"channel", "serviceName", "state"},
			{"isBroadcast", "channel"}},
		textFields: []string{"serviceName", "channel", "state", "userChannelId", "userId",
			"message.from", "message.subject", "message.textBody", "message.htmlBody", "message.title", "message.body"},
	}
	configurationSchema = &schema{
		name:            notify.CollConfiguration,
		dates:           baseDates,
		nullWhenMissing: []string{"serviceName"},
		indexed:         append(str("name", "serviceName"), date("created", "updated")...),
		textFields:      []string{"name", "serviceName"},
		indexes: []indexSpec{
			{Name: "unique_name_serviceName", Keys: bson.D{{Key: "name", Value: 1}, {Key: "serviceName", Value: 1}}, Unique: true},
			textIndex,
		},
	}
	administratorSchema = &schema{
		name:       notify.CollAdministrator,
		dates:      baseDates,
		indexed:    append(str("email"), date("created", "updated")...),
		textFields: []string{"email", "username"},
		indexes: []indexSpec{
			textIndex,
			// Ours, in place of the original's collation index unique_email_ci
			// (which an existing deployment keeps, and which is left alone).
			{Name: "unique_" + emailKeyField, Keys: bson.D{{Key: emailKeyField, Value: 1}}, Unique: true},
		},
		onWrite: func(doc bson.D) bson.D {
			return setKey(doc, emailKeyField, emailKeyOf(doc))
		},
		onSet: func(set bson.D) bson.D {
			for _, e := range set {
				if e.Key == "email" {
					return setKey(set, emailKeyField, emailKeyOf(set))
				}
			}
			return set
		},
	}
	userCredentialSchema = &schema{
		name:      notify.CollUserCredential,
		objectIDs: map[string]bool{"userId": true},
		dates:     baseDates,
		indexes: []indexSpec{
			{Name: "unique_userId", Keys: bson.D{{Key: "userId", Value: 1}}, Unique: true},
		},
	}
	accessTokenSchema = &schema{
		name:      notify.CollAccessToken,
		stringID:  true,
		objectIDs: map[string]bool{"userId": true},
		dates:     baseDates,
		indexes: []indexSpec{
			// Ours: tokens are listed and deleted per administrator.
			{Name: "userId", Keys: bson.D{{Key: "userId", Value: 1}}},
		},
	}
	bounceSchema = &schema{
		name:       notify.CollBounce,
		dates:      dates("latestNotificationStarted", "latestNotificationEnded", "bounceMessages.date"),
		textFields: []string{"channel", "userChannelId", "state", "bounceMessages.message"},
		indexes: []indexSpec{
			{Name: "state_channel_userChannelId", Keys: bson.D{{Key: "state", Value: 1}, {Key: "channel", Value: 1}, {Key: "userChannelId", Value: 1}}},
			textIndex,
			// Ours: the filter by address; the console's sorts are the
			// composites (serverIndexes).
			{Name: "userChannelId", Keys: bson.D{{Key: "userChannelId", Value: 1}}},
		},
		indexed:    append(str("state", "channel", "userChannelId"), date("created", "updated")...),
		single:     []string{"userChannelId"},
		composites: [][]string{{"updated", "state", "channel"}, {"created", "state", "channel"}, {"state", "channel"}, {"channel", "state"}},
	}
	rssSchema = &schema{
		name:  notify.CollRss,
		dates: dates("lastPoll", "items._notifyBCLastPoll", "items.pubDate"),
	}
	allSchemas = []*schema{subscriptionSchema, notificationSchema, configurationSchema, administratorSchema,
		userCredentialSchema, accessTokenSchema, bounceSchema, rssSchema}
)

func emailKeyOf(doc bson.D) any {
	for _, e := range doc {
		if e.Key == "email" {
			if s, ok := e.Value.(string); ok {
				return notify.EmailKey(s)
			}
			return nil
		}
	}
	return nil
}

func setKey(doc bson.D, key string, v any) bson.D {
	for i := range doc {
		if doc[i].Key == key {
			doc[i].Value = v
			return doc
		}
	}
	return append(doc, bson.E{Key: key, Value: v})
}

// castFilter prepares a filter from the API: "id" means "_id" (the
// original's alias), and string values on ObjectId and date fields are cast
// as mongoose casts them by schema. Unknown shapes pass through untouched:
// the server judges them.
func (s *schema) castFilter(filter any) (bson.D, error) {
	doc, err := asDoc(toBSON(filter))
	if err != nil {
		return nil, err
	}
	out := make(bson.D, 0, len(doc))
	for _, e := range doc {
		switch e.Key {
		case "$and", "$or", "$nor":
			arr, ok := e.Value.(bson.A)
			if !ok {
				out = append(out, e)
				continue
			}
			cast := make(bson.A, len(arr))
			for i, sub := range arr {
				if cast[i], err = s.castFilter(sub); err != nil {
					cast[i] = sub
				}
			}
			out = append(out, bson.E{Key: e.Key, Value: cast})
		default:
			if strings.HasPrefix(e.Key, "$") {
				out = append(out, e)
				continue
			}
			path := s.path(e.Key)
			out = append(out, bson.E{Key: path, Value: s.castCondition(path, e.Value)})
		}
	}
	return out, nil
}

// path maps the API's field names to stored ones.
func (s *schema) path(key string) string {
	if key == "id" {
		return "_id"
	}
	return key
}

func (s *schema) castCondition(path string, v any) any {
	doc, isDoc := opDoc(v)
	if !isDoc {
		return s.castScalar(path, v)
	}
	out := make(bson.D, 0, len(doc))
	for _, e := range doc {
		switch e.Key {
		case "$in", "$nin", "$all":
			if arr, ok := e.Value.(bson.A); ok {
				cast := make(bson.A, len(arr))
				for i, x := range arr {
					cast[i] = s.castScalar(path, x)
				}
				out = append(out, bson.E{Key: e.Key, Value: cast})
				continue
			}
		case "$eq", "$ne", "$gt", "$gte", "$lt", "$lte":
			out = append(out, bson.E{Key: e.Key, Value: s.castScalar(path, e.Value)})
			continue
		case "$not":
			out = append(out, bson.E{Key: e.Key, Value: s.castCondition(path, e.Value)})
			continue
		}
		out = append(out, e)
	}
	return out
}

// opDoc returns v as a document when it is an operator document
// ({$gt: …}); a plain embedded document is an equality match.
func opDoc(v any) (bson.D, bool) {
	var d bson.D
	switch x := v.(type) {
	case bson.D:
		d = x
	case bson.M:
		d = mapDoc(x)
	default:
		return nil, false
	}
	if len(d) == 0 || !strings.HasPrefix(d[0].Key, "$") {
		return nil, false
	}
	return d, true
}

func (s *schema) castScalar(path string, v any) any {
	str, ok := v.(string)
	if !ok {
		return v
	}
	if (path == "_id" && !s.stringID) || s.objectIDs[path] {
		if oid, err := bson.ObjectIDFromHex(str); err == nil {
			return oid
		}
		return v
	}
	if s.dates[path] {
		if t, err := notify.ParseTime(str); err == nil {
			return bson.NewDateTimeFromTime(t)
		}
		// Filters may use any RFC 3339 form; only record fields are strict.
		if t, err := time.Parse(time.RFC3339Nano, str); err == nil {
			return bson.NewDateTimeFromTime(t)
		}
	}
	return v
}

// castSort maps field names and the "asc"/"desc" words mongoose accepts.
func (s *schema) castSort(sort any) (bson.D, error) {
	if sort == nil {
		return nil, nil
	}
	doc, err := asDoc(toBSON(sort))
	if err != nil {
		return nil, err
	}
	out := make(bson.D, 0, len(doc))
	for _, e := range doc {
		dir := e.Value
		switch v := e.Value.(type) {
		case string:
			switch strings.ToLower(v) {
			case "asc", "ascending":
				dir = int32(1)
			case "desc", "descending":
				dir = int32(-1)
			}
		case bool:
			dir = int32(-1)
			if v {
				dir = int32(1)
			}
		}
		out = append(out, bson.E{Key: s.path(e.Key), Value: dir})
	}
	return out, nil
}

// castProjection maps field names; true/false become 1/0.
func (s *schema) castProjection(p any) (bson.D, error) {
	if p == nil {
		return nil, nil
	}
	doc, err := asDoc(toBSON(p))
	if err != nil {
		return nil, err
	}
	out := make(bson.D, 0, len(doc))
	for _, e := range doc {
		v := e.Value
		if b, ok := v.(bool); ok {
			v = int32(0)
			if b {
				v = int32(1)
			}
		}
		out = append(out, bson.E{Key: s.path(e.Key), Value: v})
	}
	return out, nil
}

// castUpdate prepares an update: top-level fields without an operator are
// set (as mongoose does), the id and created fields cannot change, date
// strings are cast, and updated is stamped unless the caller sets it.
func (s *schema) castUpdate(update any, now time.Time) (bson.D, error) {
	doc, err := asDoc(toBSON(update))
	if err != nil {
		return nil, err
	}
	var set bson.D
	out := make(bson.D, 0, len(doc)+1)
	for _, e := range doc {
		if !strings.HasPrefix(e.Key, "$") {
			set = append(set, e)
			continue
		}
		if e.Key == "$set" {
			d, err := asDoc(e.Value)
			if err != nil {
				return nil, err
			}
			set = append(set, d...)
			continue
		}
		out = append(out, e)
	}
	cleaned := make(bson.D, 0, len(set)+1)
	stamped := false
	for _, e := range set {
		switch e.Key {
		case "id", "_id", "created", "__v":
			continue
		case "updated":
			stamped = true
		}
		cleaned = append(cleaned, bson.E{Key: e.Key, Value: s.castScalar(e.Key, e.Value)})
	}
	for _, e := range out {
		// An operator on updated itself ($unset, $max, …) must not meet a
		// $set of it: the server refuses conflicting paths.
		if d, err := asDoc(e.Value); err == nil {
			for _, x := range d {
				if x.Key == "updated" {
					stamped = true
				}
			}
		}
	}
	if !stamped {
		cleaned = append(cleaned, bson.E{Key: "updated", Value: bson.NewDateTimeFromTime(now)})
	}
	if s.onSet != nil {
		cleaned = s.onSet(cleaned)
	}
	return append(bson.D{{Key: "$set", Value: cleaned}}, out...), nil
}
