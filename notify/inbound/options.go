package inbound

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// serverOptions are the smtp-server options of
// email.inboundSmtpServer.options that mean something here.
type serverOptions struct {
	secure        bool   // implicit TLS on the port
	startTLS      bool   // offer STARTTLS (default true)
	name          string // host name in the greeting
	keyPEM        []byte
	certPEM       []byte
	maxClients    int
	socketTimeout time.Duration
	// Ours, not smtp-server's: see DefaultMaxClientsPerAddress,
	// DefaultIdleTimeout and DefaultMaxSessionTime.
	maxClientsPerAddress int
	idleTimeout          time.Duration
	maxSessionTime       time.Duration
}

const optionsKey = "email.inboundSmtpServer.options"

// parseOptions reads email.inboundSmtpServer.options. Problems (a known
// option of the wrong type) stop the service; warnings name the options it
// ignores.
func parseOptions(raw map[string]any) (o serverOptions, warnings []string, err error) {
	o = serverOptions{startTLS: true, maxClients: DefaultMaxClients, socketTimeout: DefaultSocketTimeout,
		idleTimeout: DefaultIdleTimeout, maxSessionTime: DefaultMaxSessionTime}
	perAddressSet := false
	var problems []error
	bad := func(key, rule string) {
		problems = append(problems, fmt.Errorf("%s.%s: %s", optionsKey, key, rule))
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		switch k {
		case "secure", "hideSTARTTLS":
			b, ok := v.(bool)
			if !ok {
				bad(k, "must be true or false")
				continue
			}
			if k == "secure" {
				o.secure = b
			} else if b {
				o.startTLS = false
			}
		case "name", "key", "cert":
			s, ok := v.(string)
			if !ok {
				bad(k, "must be a string")
				continue
			}
			switch k {
			case "name":
				o.name = s
			case "key":
				o.keyPEM = []byte(s)
			case "cert":
				o.certPEM = []byte(s)
			}
		case "maxClients", "maxClientsPerAddress":
			n, ok := v.(float64)
			if !ok || n < 1 || n != math.Trunc(n) || n > 100000 {
				bad(k, "must be a whole number from 1 to 100000")
				continue
			}
			if k == "maxClients" {
				o.maxClients = int(n)
			} else {
				o.maxClientsPerAddress, perAddressSet = int(n), true
			}
		case "socketTimeout", "idleTimeout", "maxSessionTime":
			n, ok := v.(float64)
			if !ok || n < 1000 || n > 3600000 {
				bad(k, "must be a number of milliseconds from 1000 to 3600000")
				continue
			}
			d := time.Duration(n) * time.Millisecond
			switch k {
			case "socketTimeout":
				o.socketTimeout = d
			case "idleTimeout":
				o.idleTimeout = d
			default:
				o.maxSessionTime = d
			}
		case "disabledCommands":
			list, ok := v.([]any)
			if !ok {
				bad(k, "must be an array of command names")
				continue
			}
			for _, c := range list {
				name, _ := c.(string)
				switch strings.ToUpper(name) {
				case "STARTTLS":
					o.startTLS = false
				case "AUTH":
					// never offered anyway
				default:
					warnings = append(warnings, fmt.Sprintf("%s.%s: only STARTTLS and AUTH can be disabled; %v ignored", optionsKey, k, c))
				}
			}
		case "size":
			warnings = append(warnings, fmt.Sprintf("%s.size: ignored; the limit is %d bytes, as in the original", optionsKey, MaxMessageBytes))
		default:
			warnings = append(warnings, fmt.Sprintf("%s.%s: not supported by govkit's inbound SMTP server; ignored", optionsKey, k))
		}
	}
	if !perAddressSet {
		o.maxClientsPerAddress = min(DefaultMaxClientsPerAddress, o.maxClients)
	}
	if (len(o.keyPEM) == 0) != (len(o.certPEM) == 0) {
		problems = append(problems, fmt.Errorf("%s: key and cert must be given together", optionsKey))
	}
	return o, warnings, errors.Join(problems...)
}
