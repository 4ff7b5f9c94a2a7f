package notify

// Configuration is a dynamic configuration record (collection
// "configuration"), unique on name and serviceName. Well-known names: rsa,
// etherealAccount, dbSchemaVersion, subscription (per-service override) and
// notification (per-service RSS).
type Configuration struct {
	Meta
	Name        string
	Value       any // any Fields value; required
	ServiceName string
	Extra       Fields
}

// ApplyDefaults does nothing: configuration has no defaults beyond Meta.
func (c *Configuration) ApplyDefaults() {}

// Fields returns the stored form.
func (c *Configuration) Fields() Fields {
	e := &encoder{}
	c.encodeHead(e)
	e.str("name", c.Name)
	e.any("value", c.Value)
	e.str("serviceName", c.ServiceName)
	c.encodeTail(e)
	e.extra(c.Extra)
	return e.f
}

// SetFields reads client input.
func (c *Configuration) SetFields(f Fields) error { return c.decode(f, true) }

// LoadFields reads stored data.
func (c *Configuration) LoadFields(f Fields) { _ = c.decode(f, false) }

func (c *Configuration) decode(f Fields, strict bool) error {
	*c = Configuration{}
	d := newDecoder(strict, true, &c.Extra)
	for _, e := range f {
		if c.Meta.decode(d, e) {
			continue
		}
		switch e.Key {
		case "name":
			d.str(e, &c.Name)
		case "value":
			c.Value = e.Value
		case "serviceName":
			d.str(e, &c.ServiceName)
		default:
			d.unknown(e)
		}
	}
	return d.err()
}

// MarshalJSON writes the API form.
func (c Configuration) MarshalJSON() ([]byte, error) { return c.Fields().MarshalJSON() }

// UnmarshalJSON reads client input strictly.
func (c *Configuration) UnmarshalJSON(b []byte) error { return decodeJSON(b, c) }
