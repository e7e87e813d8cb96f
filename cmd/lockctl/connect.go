package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"net"
	neturl "net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/respire-go/respire/conn"
	"github.com/respire-go/respire/internal/wire"

	"github.com/respire-go/respire/sim"
)

// defaultAddr is where lockctl connects when nothing else is said, like
// redis-cli.
const defaultAddr = "127.0.0.1:6379"

// dialTimeout bounds connecting to the server.
const dialTimeout = 5 * time.Second

// connFlags are the connection options every command takes, before or after
// its name.
type connFlags struct {
	url, addr, user, password, cacert, sim string
	host                                   string // -h, as redis-cli
	port                                   int    // -p, as redis-cli; -1: not given
	db                                     int    // -n, as redis-cli; -1: not given
	tls, cluster                           bool
	noRetry                                bool // set by watch: a failed read fails, it is not retried
}

// newConnFlags returns the connection options before any is parsed.
func newConnFlags() *connFlags { return &connFlags{port: -1, db: -1} }

// register adds the connection options to fs, with redis-cli's short forms
// (-h host, -p port, -a password, -n db, -u url, -c). The current values
// are the defaults, so that options given before COMMAND survive COMMAND's
// flags. -h is the host, never help: help is --help.
func (f *connFlags) register(fs *flag.FlagSet) {
	for _, name := range []string{"url", "u"} {
		fs.StringVar(&f.url, name, f.url, "server URL")
	}
	fs.StringVar(&f.addr, "addr", f.addr, "server address(es)")
	fs.StringVar(&f.host, "h", f.host, "server host")
	fs.IntVar(&f.port, "p", f.port, "server port")
	fs.IntVar(&f.db, "n", f.db, "database number")
	fs.StringVar(&f.user, "user", f.user, "ACL user name")
	for _, name := range []string{"password", "a"} {
		fs.StringVar(&f.password, name, f.password, "password")
	}
	fs.BoolVar(&f.tls, "tls", f.tls, "use TLS")
	fs.StringVar(&f.cacert, "cacert", f.cacert, "CA certificate file (PEM)")
	for _, name := range []string{"cluster", "c"} {
		fs.BoolVar(&f.cluster, name, f.cluster, "Redis Cluster")
	}
	fs.StringVar(&f.sim, "sim", f.sim, "embedded simulator profile")
}

// backend is an open connection: the rueidis client and, with --sim, the
// simulated server behind it.
type backend struct {
	client rueidis.Client
	opt    rueidis.ClientOption // what client was made with
	server *sim.Server          // nil unless --sim
	where  string               // the address(es), for messages
}

// lockClient returns the client lease runs on: respire-go's own (the
// library links no Redis client; the tool's other commands keep rueidis),
// on the same servers with the same credentials, database and TLS.
func (b *backend) lockClient() conn.Client {
	o := b.opt
	return wire.New(wire.Options{Addrs: o.InitAddress, Cluster: !o.ForceSingleClient, User: o.Username,
		Password: o.Password, DB: o.SelectDB, TLS: o.TLSConfig, DialTimeout: o.Dialer.Timeout, Name: "lockctl"})
}

// close closes the client, then the simulator.
func (b *backend) close() {
	b.client.Close()
	if b.server != nil {
		_ = b.server.Close()
	}
}

// open connects as the flags say. A server that cannot be reached is exit
// 69, one that refuses the credentials exit 77, a database it does not
// have (-n) a usage error (see connectError).
func (f *connFlags) open(getenv func(string) string) (*backend, error) {
	b := &backend{}
	opt, err := f.clientOption(getenv)
	if err != nil {
		return nil, err
	}
	if f.sim != "" {
		srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Profile(f.sim), Password: opt.Password})
		if err != nil {
			return nil, failf(exitUnavailable, "--sim: %v", err)
		}
		b.server = srv
		opt.InitAddress = []string{srv.Addr()}
	}
	b.where = strings.Join(opt.InitAddress, ",")
	client, err := rueidis.NewClient(opt)
	if err != nil {
		if b.server != nil {
			_ = b.server.Close()
		}
		return nil, connectError(b.where, err)
	}
	b.client, b.opt = client, opt
	if f.cluster && client.Mode() != rueidis.ClientModeCluster {
		b.close()
		return nil, usagef("--cluster: %s is not a cluster node (cluster support disabled)", b.where)
	}
	return b, nil
}

// clientOption builds the rueidis options: --sim, or --url/REDIS_URL, or
// --addr, or -h/-p (default 127.0.0.1:6379); --user, --password and -n
// override the URL's, REDIS_PASSWORD applies when neither gives one.
// Client-side caching is off (no CLIENT TRACKING, so least-privilege users
// work); without --cluster the client is standalone, as redis-cli without
// -c.
func (f *connFlags) clientOption(getenv func(string) string) (rueidis.ClientOption, error) {
	var opt rueidis.ClientOption
	if err := f.check(); err != nil {
		return opt, err
	}
	url := f.url
	if url == "" && f.addr == "" && f.host == "" && f.port < 0 && f.sim == "" {
		url = getenv("REDIS_URL")
	}
	var err error
	switch {
	case f.sim != "":
	case f.host != "" || f.port >= 0:
		opt.InitAddress = []string{hostPort(f.host, f.port)}
	case url != "":
		if opt, err = rueidis.ParseURL(url); err != nil {
			// the URL may hold a password: say what is wrong, not the URL
			var parseErr *neturl.Error
			if errors.As(err, &parseErr) {
				err = parseErr.Err
			}
			return opt, usagef("invalid --url/REDIS_URL: %s", strings.TrimPrefix(err.Error(), "redis: "))
		}
	default:
		if opt.InitAddress, err = parseAddrs(f.addr); err != nil {
			return opt, err
		}
	}
	if f.user != "" {
		opt.Username = f.user
	}
	if f.db >= 0 {
		opt.SelectDB = f.db
	}
	if f.password != "" {
		opt.Password = f.password
	} else if opt.Password == "" {
		opt.Password = getenv("REDIS_PASSWORD")
	}
	if err := f.applyTLS(&opt); err != nil {
		return opt, err
	}
	opt.ForceSingleClient = !f.cluster
	opt.DisableRetry = f.noRetry
	opt.DisableCache = true
	if opt.Dialer.Timeout == 0 {
		opt.Dialer.Timeout = dialTimeout
	}
	return opt, nil
}

// check refuses contradictory or out-of-range connection options.
func (f *connFlags) check() error {
	hostPortGiven := f.host != "" || f.port >= 0
	switch {
	case f.sim != "" && (f.url != "" || f.addr != "" || hostPortGiven || f.tls || f.cacert != "" || f.cluster):
		return usagef("--sim cannot be combined with --url, --addr, -h, -p, --tls, --cacert or --cluster")
	case f.sim != "" && !slices.Contains(sim.Profiles, sim.Profile(f.sim)):
		return usagef("--sim: unknown profile %q (want %s)", f.sim, profileList())
	case f.url != "" && f.addr != "":
		return usagef("--url and --addr are mutually exclusive")
	case hostPortGiven && (f.url != "" || f.addr != ""):
		return usagef("-h/-p and --url/--addr are mutually exclusive (give the server one way)")
	case f.port == 0 || f.port < -1 || f.port > 65535:
		return usagef("-p: port %d out of range (1-65535)", f.port)
	case f.db < -1:
		return usagef("-n: database %d is negative", f.db)
	case f.db > 0 && f.cluster:
		return usagef("-n: a Redis Cluster has only database 0")
	}
	return nil
}

// hostPort is the address of -h and -p, with redis-cli's defaults
// (127.0.0.1, 6379).
func hostPort(host string, port int) string {
	if host == "" {
		host = "127.0.0.1"
	}
	if port < 0 {
		port = 6379
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
}

// parseAddrs splits a comma-separated --addr list, adding the default port
// where one is missing.
func parseAddrs(list string) ([]string, error) {
	if list == "" {
		return []string{defaultAddr}, nil
	}
	var addrs []string
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, usagef("--addr: empty address in %q", list)
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			a = net.JoinHostPort(strings.Trim(a, "[]"), "6379")
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, usagef("--addr: invalid address %q", a)
			}
		}
		addrs = append(addrs, a)
	}
	return addrs, nil
}

// applyTLS turns TLS on for --tls, --cacert or a rediss:// URL.
func (f *connFlags) applyTLS(opt *rueidis.ClientOption) error {
	if !f.tls && f.cacert == "" && opt.TLSConfig == nil {
		return nil
	}
	if opt.TLSConfig == nil {
		host, _, _ := net.SplitHostPort(opt.InitAddress[0])
		opt.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	}
	if f.cacert != "" {
		pem, err := os.ReadFile(f.cacert)
		if err != nil {
			return usagef("--cacert: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return usagef("--cacert: no PEM certificate in %s", f.cacert)
		}
		opt.TLSConfig.RootCAs = pool
	}
	return nil
}

// profileList names the simulator's profiles.
func profileList() string {
	names := make([]string, len(sim.Profiles))
	for i, p := range sim.Profiles {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}
