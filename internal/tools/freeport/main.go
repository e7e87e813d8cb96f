// Command freeport prints N free TCP ports on 127.0.0.1, one per line.
//
// It is used by scripts/with-servers.sh to start private redis-server
// instances on ports nobody else uses. The ports are drawn at random from
// below the kernel's ephemeral range (net.ipv4.ip_local_port_range), where
// neither outgoing connections nor other programs' listeners on port 0 are
// given ports: a port chosen here is taken between this program's check and
// the server's bind only by another program that picks ports the same way
// (the script then starts over with new ports). A port is free when this
// program could listen on it and on its Redis Cluster bus port (the port +
// 10000, also below the ephemeral range); all listeners are held until
// every port is chosen, so the N ports and their bus ports are distinct.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the lowest port drawn: above the well-known and most registered
// service ports.
const lowest = 20000

// busOffset is the distance of a Redis Cluster node's bus port from its port.
const busOffset = 10000

func main() {
	n := flag.Int("n", 1, "how many free ports to print")
	flag.Parse()
	highest := ephemeralStart() - 1 - busOffset
	var ports []int
	var held []net.Listener
	for tries := 0; len(ports) < *n; tries++ {
		if tries > 100**n {
			fmt.Fprintln(os.Stderr, "freeport: no free port found below", highest+1)
			os.Exit(1)
		}
		port := lowest + rand.IntN(highest-lowest+1)
		l, err := listen(port)
		if err != nil {
			continue // taken: draw again
		}
		bus, err := listen(port + busOffset)
		if err != nil {
			l.Close()
			continue
		}
		ports, held = append(ports, port), append(held, l, bus)
	}
	for _, l := range held {
		l.Close()
	}
	for _, port := range ports {
		fmt.Println(port)
	}
}

func listen(port int) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// ephemeralStart is the first port of the kernel's ephemeral range (Linux's
// default, 32768, where it cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 32768
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start <= lowest+busOffset+1000 {
		return 32768
	}
	return start
}
