// Command respire-sim runs the simulated Redis/Valkey server of package sim
// as a standalone process, for users' own tests and the demo.
//
//	go run ./cmd/respire-sim --profile valkey-9.0 --listen 127.0.0.1:7000 [--password pw] [--cluster N]
//
// With --cluster N it starts N masters on consecutive free ports (the
// --listen address is ignored except for its host) and prints their
// addresses. It runs until interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/respire-go/respire/sim"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "respire-sim:", err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	fs := flag.NewFlagSet("respire-sim", flag.ContinueOnError)
	profile := fs.String("profile", string(sim.Redis70), "server profile: "+profileNames())
	listen := fs.String("listen", "127.0.0.1:7000", "listen address (standalone)")
	password := fs.String("password", "", "password of the default user")
	cluster := fs.Int("cluster", 0, "start a cluster of N masters instead of one node")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := sim.Profile(*profile)
	if *cluster > 0 {
		profiles := make([]sim.Profile, *cluster)
		for i := range profiles {
			profiles[i] = p
		}
		c, err := sim.StartCluster(ctx, sim.ClusterConfig{Profiles: profiles, Password: *password})
		if err != nil {
			return err
		}
		defer c.Close()
		fmt.Printf("respire-sim %s cluster on %s\n", p, strings.Join(c.Addrs(), " "))
	} else {
		s, err := sim.Start(ctx, sim.Config{Profile: p, Addr: *listen, Password: *password})
		if err != nil {
			return err
		}
		defer s.Close()
		fmt.Printf("respire-sim %s listening on %s\n", p, s.Addr())
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
