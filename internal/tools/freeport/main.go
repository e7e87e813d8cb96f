// Command freeport prints N free TCP ports on 127.0.0.1, one per line.
//
// It is used by scripts/with-servers.sh to start private redis-server
// instances on ports nobody else uses. A port is free when this program
// could listen on it; all listeners are held until every port is chosen,
// so the N ports are distinct.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
)

func main() {
	n := flag.Int("n", 1, "how many free ports to print")
	flag.Parse()
	listeners := make([]net.Listener, 0, *n)
	for range *n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "freeport:", err)
			os.Exit(1)
		}
		listeners = append(listeners, l)
	}
	for _, l := range listeners {
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
}
