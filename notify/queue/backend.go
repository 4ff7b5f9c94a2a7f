package queue

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/govkit/govkit/notify/config"
)

// DefaultPrefix is where the notification service keeps its keys when the
// connection names no keyPrefix.
const DefaultPrefix = "govkit:notify:"

// Backend is a connection to the queue's Redis: the configured server, or
// the embedded one. It is safe for concurrent use.
type Backend struct {
	// Client is the Redis client; others may use it for state shared by
	// the nodes, under keys starting with Prefix.
	Client redis.UniversalClient
	// Prefix starts every key of the notification service.
	Prefix string
	// Addr describes the server for messages (host:port, or the
	// sentinel set).
	Addr string

	embedded *miniredis.Miniredis
}

// Embedded reports whether the backend is the in-process Redis.
func (b *Backend) Embedded() bool { return b.embedded != nil }

// Ping checks that Redis answers.
func (b *Backend) Ping(ctx context.Context) error { return b.Client.Ping(ctx).Err() }

// Close closes the client and stops the embedded server.
func (b *Backend) Close() error {
	err := b.Client.Close()
	if b.embedded != nil {
		b.embedded.Close()
	}
	return err
}

// Open connects to the Redis that conn (queue.connection) names; nil
// starts the embedded one on 127.0.0.1. It does not wait for the server to
// answer: the caller pings and reports (a node whose Redis is down still
// starts and says so in /api/health).
func Open(conn *config.QueueConnection) (*Backend, error) {
	if conn == nil {
		return openEmbedded()
	}
	o, err := clientOptions(conn)
	if err != nil {
		return nil, err
	}
	b := &Backend{Prefix: o.prefix, Addr: o.addr}
	if o.failover != nil {
		b.Client = redis.NewFailoverClient(o.failover)
	} else {
		b.Client = redis.NewClient(o.single)
	}
	return b, nil
}

// Addr describes the Redis that conn names as Backend.Addr would, for the
// start-up log, without connecting; "" for the embedded one (conn nil).
func Addr(conn *config.QueueConnection) (string, error) {
	if conn == nil {
		return "", nil
	}
	o, err := clientOptions(conn)
	return o.addr, err
}

// openEmbedded starts miniredis on a loopback port. Keys expire by the
// wall clock, as on a real server.
func openEmbedded() (*Backend, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("queue: embedded Redis: %w", err)
	}
	m.ClockTTL(true)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), PoolSize: 64})
	return &Backend{Client: c, Prefix: DefaultPrefix, Addr: m.Addr(), embedded: m}, nil
}

// DefaultCommandTimeout is queue.connection.commandTimeout's default. A
// blocking command waits its own time on top of it.
const DefaultCommandTimeout = time.Second

type connOptions struct {
	single   *redis.Options
	failover *redis.FailoverOptions
	prefix   string
	addr     string
}

// clientOptions reads queue.connection. It takes ioredis's option names,
// which NotifyBC deployments have in their configs: host, port, path (a
// Unix socket), username, password, db, tls (true, or {ca, servername,
// rejectUnauthorized}), connectTimeout (ms), commandTimeout (ms: how long
// a command waits for Redis's answer, default 1 s, so that a Redis that
// does not answer fails an API call's queue work within about 4 s with
// go-redis's three retries), sentinels, name (the sentinel master),
// sentinelUsername, sentinelPassword, and keyPrefix (the prefix of our
// keys; BullMQ refused it, so NotifyBC configs do not have it). Others
// (family, maxRetriesPerRequest, …) are ioredis's own tuning and are
// ignored.
func clientOptions(c *config.QueueConnection) (connOptions, error) {
	raw := c.Raw
	str := func(k string) string { s, _ := raw[k].(string); return s }
	o := connOptions{prefix: DefaultPrefix}
	if p := str("keyPrefix"); p != "" {
		o.prefix = p
	}
	var tlsCfg *tls.Config
	if c.TLS {
		var err error
		if tlsCfg, err = tlsOptions(raw["tls"]); err != nil {
			return o, err
		}
	}
	dial := 5 * time.Second
	if ms, ok := raw["connectTimeout"].(float64); ok && ms > 0 {
		dial = time.Duration(ms) * time.Millisecond
	}
	command := DefaultCommandTimeout
	if ms, ok := raw["commandTimeout"].(float64); ok && ms > 0 {
		command = time.Duration(ms) * time.Millisecond
	}
	if len(c.Sentinels) > 0 {
		if c.Name == "" {
			return o, errors.New("queue.connection.name: the sentinel master name is required with sentinels")
		}
		f := &redis.FailoverOptions{
			MasterName:       c.Name,
			SentinelUsername: str("sentinelUsername"),
			SentinelPassword: c.SentinelPassword,
			Username:         c.Username,
			Password:         c.Password,
			DB:               c.DB,
			DialTimeout:      dial,
			ReadTimeout:      command,
			WriteTimeout:     command,
			PoolSize:         64,
		}
		for _, s := range c.Sentinels {
			f.SentinelAddrs = append(f.SentinelAddrs, net.JoinHostPort(s.Host, strconv.Itoa(s.Port)))
		}
		if b, _ := raw["enableTLSForSentinelMode"].(bool); b || tlsCfg != nil {
			f.TLSConfig = tlsCfg
		}
		o.failover = f
		o.addr = fmt.Sprintf("sentinels %v (master %s)", f.SentinelAddrs, c.Name)
		return o, nil
	}
	s := &redis.Options{
		Network:      "tcp",
		Addr:         net.JoinHostPort(c.Host, strconv.Itoa(c.Port)),
		Username:     c.Username,
		Password:     c.Password,
		DB:           c.DB,
		TLSConfig:    tlsCfg,
		DialTimeout:  dial,
		ReadTimeout:  command,
		WriteTimeout: command,
		PoolSize:     64,
	}
	if p := str("path"); p != "" {
		s.Network, s.Addr = "unix", p
	}
	o.single = s
	o.addr = s.Addr
	return o, nil
}

// tlsOptions reads ioredis's tls option: true or {} for the system's
// roots, or Node's TLS options ca (PEM, or a list of PEMs), servername and
// rejectUnauthorized.
func tlsOptions(v any) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	m, ok := v.(map[string]any)
	if !ok {
		return cfg, nil
	}
	if s, ok := m["servername"].(string); ok {
		cfg.ServerName = s
	}
	if b, ok := m["rejectUnauthorized"].(bool); ok && !b {
		cfg.InsecureSkipVerify = true
	}
	var pems []string
	switch ca := m["ca"].(type) {
	case string:
		pems = []string{ca}
	case []any:
		for _, x := range ca {
			if s, ok := x.(string); ok {
				pems = append(pems, s)
			}
		}
	}
	if len(pems) > 0 {
		pool := x509.NewCertPool()
		for _, p := range pems {
			if !pool.AppendCertsFromPEM([]byte(p)) {
				return nil, errors.New("queue.connection.tls.ca: not a PEM certificate")
			}
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}
