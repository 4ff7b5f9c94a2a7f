package notify

import (
	"regexp"
	"strings"
	"time"
)

// Administrator is an admin user (collection "administrator", strict).
// Email is unique case-insensitively: stores keep [EmailKey] of it in a
// field of their own with a unique index, because the embedded store has no
// collation indexes.
type Administrator struct {
	Meta
	Username string
	Email    string
}

// EmailKey is the form of an email address that must be unique among
// administrators. Only case is folded; the original's collation (en_US,
// strength 1) also ignored accents, which in email addresses are rare
// enough not to matter.
func EmailKey(email string) string { return strings.ToLower(email) }

// PasswordComplexity is the rule an administrator password must match: ten
// or more characters with an upper-case letter, a lower-case letter, a
// digit and one of !_@#&$*. Go's regexp has no lookahead, so
// [CheckPasswordComplexity] implements it.
const PasswordComplexity = `^(?=.*[A-Z])(?=.*[!_@#&$*])(?=.*[0-9])(?=.*[a-z]).{10,}$`

var (
	pwUpper   = regexp.MustCompile(`[A-Z]`)
	pwSpecial = regexp.MustCompile(`[!_@#&$*]`)
	pwDigit   = regexp.MustCompile(`[0-9]`)
	pwLower   = regexp.MustCompile(`[a-z]`)
)

// CheckPasswordComplexity reports whether password matches
// [PasswordComplexity]. As in JavaScript, "." matches anything but line
// terminators, so a password with a line break does not match.
func CheckPasswordComplexity(password string) bool {
	if strings.ContainsAny(password, "\n\r\u2028\u2029") {
		return false
	}
	if len([]rune(password)) < 10 {
		return false
	}
	return pwUpper.MatchString(password) && pwSpecial.MatchString(password) &&
		pwDigit.MatchString(password) && pwLower.MatchString(password)
}

// ApplyDefaults does nothing: administrator has no defaults beyond Meta.
func (a *Administrator) ApplyDefaults() {}

// Fields returns the stored form.
func (a *Administrator) Fields() Fields {
	e := &encoder{}
	a.encodeHead(e)
	e.str("username", a.Username)
	e.str("email", a.Email)
	a.encodeTail(e)
	return e.f
}

// SetFields reads client input; unknown fields are dropped.
func (a *Administrator) SetFields(f Fields) error { return a.decode(f, true) }

// LoadFields reads stored data.
func (a *Administrator) LoadFields(f Fields) { _ = a.decode(f, false) }

func (a *Administrator) decode(f Fields, strict bool) error {
	*a = Administrator{}
	d := newDecoder(strict, false, nil)
	for _, e := range f {
		if a.Meta.decode(d, e) {
			continue
		}
		switch e.Key {
		case "username":
			d.str(e, &a.Username)
		case "email":
			d.str(e, &a.Email)
		default:
			d.unknown(e)
		}
	}
	return d.err()
}

// MarshalJSON writes the API form.
func (a Administrator) MarshalJSON() ([]byte, error) { return a.Fields().MarshalJSON() }

// UnmarshalJSON reads client input strictly.
func (a *Administrator) UnmarshalJSON(b []byte) error { return decodeJSON(b, a) }

// UserCredential holds an administrator's password hash (collection
// "UserCredential", strict), one per administrator.
type UserCredential struct {
	Meta
	Password string // bcrypt hash
	UserID   ID     // the administrator's id
}

// ApplyDefaults does nothing: UserCredential has no defaults beyond Meta.
func (c *UserCredential) ApplyDefaults() {}

// Fields returns the stored form.
func (c *UserCredential) Fields() Fields {
	e := &encoder{}
	c.encodeHead(e)
	e.str("password", c.Password)
	if !c.UserID.IsZero() {
		e.put("userId", c.UserID)
	}
	c.encodeTail(e)
	return e.f
}

// SetFields reads client input; unknown fields are dropped.
func (c *UserCredential) SetFields(f Fields) error { return c.decode(f, true) }

// LoadFields reads stored data.
func (c *UserCredential) LoadFields(f Fields) { _ = c.decode(f, false) }

func (c *UserCredential) decode(f Fields, strict bool) error {
	*c = UserCredential{}
	d := newDecoder(strict, false, nil)
	for _, e := range f {
		if c.Meta.decode(d, e) {
			continue
		}
		switch e.Key {
		case "password":
			d.str(e, &c.Password)
		case "userId":
			d.id(e, &c.UserID)
		default:
			d.unknown(e)
		}
	}
	return d.err()
}

// MarshalJSON writes the API form.
func (c UserCredential) MarshalJSON() ([]byte, error) { return c.Fields().MarshalJSON() }

// UnmarshalJSON reads client input strictly.
func (c *UserCredential) UnmarshalJSON(b []byte) error { return decodeJSON(b, c) }

// AccessToken is an administrator's API token (collection "AccessToken",
// strict). Its id is the token itself: 64 alphanumeric characters, not an
// ObjectId.
type AccessToken struct {
	ID        string
	TTL       *int64 // seconds; nil never expires
	Name      string
	UserID    ID // the administrator's id
	Created   time.Time
	Updated   time.Time
	CreatedBy *UserProfile
	UpdatedBy *UserProfile
}

// Expired reports whether the token has expired at now: created + ttl
// seconds is in the past. A token without ttl never expires.
func (t *AccessToken) Expired(now time.Time) bool {
	if t.TTL == nil {
		return false
	}
	return t.Created.Add(time.Duration(*t.TTL) * time.Second).Before(now)
}

// ApplyDefaults does nothing: AccessToken has no defaults beyond its dates.
func (t *AccessToken) ApplyDefaults() {}

// Fields returns the stored form.
func (t *AccessToken) Fields() Fields {
	e := &encoder{}
	e.str("id", t.ID)
	if t.TTL != nil {
		e.put("ttl", *t.TTL)
	}
	e.str("name", t.Name)
	if !t.UserID.IsZero() {
		e.put("userId", t.UserID)
	}
	m := Meta{Created: t.Created, Updated: t.Updated, CreatedBy: t.CreatedBy, UpdatedBy: t.UpdatedBy}
	m.encodeTail(e)
	return e.f
}

// SetFields reads client input; unknown fields are dropped.
func (t *AccessToken) SetFields(f Fields) error { return t.decode(f, true) }

// LoadFields reads stored data.
func (t *AccessToken) LoadFields(f Fields) { _ = t.decode(f, false) }

func (t *AccessToken) decode(f Fields, strict bool) error {
	*t = AccessToken{}
	var m Meta
	d := newDecoder(strict, false, nil)
	for _, e := range f {
		switch e.Key {
		case "id":
			d.str(e, &t.ID)
		case "ttl":
			d.optInteger(e, &t.TTL)
		case "name":
			d.str(e, &t.Name)
		case "userId":
			d.id(e, &t.UserID)
		default:
			if !m.decode(d, e) {
				d.unknown(e)
			}
		}
	}
	t.Created, t.Updated, t.CreatedBy, t.UpdatedBy = m.Created, m.Updated, m.CreatedBy, m.UpdatedBy
	return d.err()
}

// MarshalJSON writes the API form.
func (t AccessToken) MarshalJSON() ([]byte, error) { return t.Fields().MarshalJSON() }

// UnmarshalJSON reads client input strictly.
func (t *AccessToken) UnmarshalJSON(b []byte) error { return decodeJSON(b, t) }
