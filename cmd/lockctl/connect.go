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
	"strings"
	"time"

	"github.com/redis/rueidis"

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
	tls, cluster                           bool
}

// register adds the connection options to fs. The current values are the
// defaults, so that options given before COMMAND survive COMMAND's flags.
func (f *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", f.url, "server URL")
	fs.StringVar(&f.addr, "addr", f.addr, "server address(es)")
	fs.StringVar(&f.user, "user", f.user, "ACL user name")
	fs.StringVar(&f.password, "password", f.password, "password")
	fs.BoolVar(&f.tls, "tls", f.tls, "use TLS")
	fs.StringVar(&f.cacert, "cacert", f.cacert, "CA certificate file (PEM)")
	fs.BoolVar(&f.cluster, "cluster", f.cluster, "Redis Cluster")
	fs.StringVar(&f.sim, "sim", f.sim, "embedded simulator profile")
}

// backend is an open connection: the rueidis client and, with --sim, the
// simulated server behind it.
type backend struct {
	client rueidis.Client
	server *sim.Server // nil unless --sim
	where  string      // the address(es), for messages
}

// close closes the client, then the simulator.
func (b *backend) close() {
	b.client.Close()
	if b.server != nil {
		_ = b.server.Close()
	}
}

// open connects as the flags say. Every failure to reach or authenticate
// to the server is a usage error: the invocation names a server that does
// not work.
func (f *connFlags) open(getenv func(string) string) (*backend, error) {
	b := &backend{}
	opt, err := f.clientOption(getenv)
	if err != nil {
		return nil, err
	}
	if f.sim != "" {
		srv, err := sim.Start(context.Background(), sim.Config{Profile: sim.Profile(f.sim), Password: opt.Password})
		if err != nil {
			return nil, usagef("--sim: %v", err)
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
		return nil, usagef("cannot connect to %s: %v", b.where, err)
	}
	b.client = client
	if f.cluster && client.Mode() != rueidis.ClientModeCluster {
		b.close()
		return nil, usagef("--cluster: %s is not a cluster node (cluster support disabled)", b.where)
	}
	return b, nil
}

// clientOption builds the rueidis options: --sim, or --url/REDIS_URL, or
// --addr (default 127.0.0.1:6379); --user and --password override the
// URL's, REDIS_PASSWORD applies when neither gives one. Client-side caching
// is off (no CLIENT TRACKING, so least-privilege users work); without
// --cluster the client is standalone, as redis-cli without -c.
func (f *connFlags) clientOption(getenv func(string) string) (rueidis.ClientOption, error) {
	var opt rueidis.ClientOption
	url := f.url
	switch {
	case f.sim != "" && (f.url != "" || f.addr != "" || f.tls || f.cacert != "" || f.cluster):
		return opt, usagef("--sim cannot be combined with --url, --addr, --tls, --cacert or --cluster")
	case f.sim != "":
		if !slices.Contains(sim.Profiles, sim.Profile(f.sim)) {
			return opt, usagef("--sim: unknown profile %q (want %s)", f.sim, profileList())
		}
	case f.url != "" && f.addr != "":
		return opt, usagef("--url and --addr are mutually exclusive")
	case url == "" && f.addr == "":
		url = getenv("REDIS_URL")
	}
	var err error
	switch {
	case f.sim != "":
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
	if f.password != "" {
		opt.Password = f.password
	} else if opt.Password == "" {
		opt.Password = getenv("REDIS_PASSWORD")
	}
	if err := f.applyTLS(&opt); err != nil {
		return opt, err
	}
	opt.ForceSingleClient = !f.cluster
	opt.DisableCache = true
	if opt.Dialer.Timeout == 0 {
		opt.Dialer.Timeout = dialTimeout
	}
	return opt, nil
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
