// Command respire-sim runs the simulated Redis/Valkey server of package sim
// as a standalone process, for users' own tests and the demo.
//
//	go run ./cmd/respire-sim --profile valkey-9.0 --listen 127.0.0.1:7000 [--password pw] [--cluster N]
//
// Profiles: redis-7.0, redis-8.4, valkey-8.1, valkey-9.0. With --cluster N
// it starts N masters on free loopback ports (--listen is ignored) and
// prints their addresses; --profile may then be a comma-separated list,
// used in turn for the nodes (a mixed cluster). It runs until interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/respire-go/respire/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "respire-sim:", err)
		os.Exit(1)
	}
}

// run starts the server(s) described by argv, prints where they listen to
// out, and serves until ctx ends.
func run(ctx context.Context, argv []string, out io.Writer) error {
	fs := flag.NewFlagSet("respire-sim", flag.ContinueOnError)
	fs.SetOutput(out)
	profile := fs.String("profile", string(sim.Redis70), "server profile: "+profileNames()+" (comma-separated list with --cluster)")
	listen := fs.String("listen", "127.0.0.1:7000", "listen address (standalone)")
	password := fs.String("password", "", "password of the default user")
	cluster := fs.Int("cluster", 0, "start a cluster of N masters instead of one node")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if *cluster > 0 {
		names := strings.Split(*profile, ",")
		profiles := make([]sim.Profile, *cluster)
		for i := range profiles {
			profiles[i] = sim.Profile(strings.TrimSpace(names[i%len(names)]))
		}
		c, err := sim.StartCluster(ctx, sim.ClusterConfig{Profiles: profiles, Password: *password})
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Fprintf(out, "respire-sim cluster %v on %s\n", profiles, strings.Join(c.Addrs(), " "))
	} else {
		s, err := sim.Start(ctx, sim.Config{Profile: sim.Profile(*profile), Addr: *listen, Password: *password})
		if err != nil {
			return err
		}
		defer s.Close()
		fmt.Fprintf(out, "respire-sim %s listening on %s\n", s.Profile(), s.Addr())
	}
	<-ctx.Done()
	return nil
}

func profileNames() string {
	names := make([]string, len(sim.Profiles))
	for i, p := range sim.Profiles {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}
