package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/respire-go/respire/internal/leakcheck"
)

func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}

func TestDirectionString(t *testing.T) {
	require.Equal(t, "ToServer", ToServer.String())
	require.Equal(t, "ToClient", ToClient.String())
	require.Equal(t, "Both", Both.String())
	require.Equal(t, "None", Direction(0).String())
}

func TestForwardsBothWays(t *testing.T) {
	_, client, _, sc := setup(t)
	write(t, client, "hello\n")
	require.Equal(t, "hello\n", recv(t, sc.lines))
	readExactly(t, client, "hello\n")

	// A large stream in both directions at once keeps every byte in order.
	var want strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&want, "line %d %s\n", i, strings.Repeat("x", i%200))
	}
	errc := make(chan error, 1)
	go func() {
		_, err := io.WriteString(client, want.String())
		errc <- err
	}()
	readExactly(t, client, want.String())
	require.NoError(t, recv(t, errc))
}

func TestStallToClientHoldsRepliesInOrder(t *testing.T) {
	_, client, c, sc := setup(t)
	c.Stall(ToClient)
	lines := []string{"a\n", "bb\n", "ccc\n"}
	for _, l := range lines {
		write(t, client, l)
		require.Equal(t, l, recv(t, sc.lines))
	}
	waitBuffered(t, c, ToClient, len("a\nbb\nccc\n"))
	require.Equal(t, 0, c.Buffered(ToServer))
	requireNoRead(t, client)

	c.Unstall(ToClient)
	readExactly(t, client, "a\nbb\nccc\n")
	require.Equal(t, 0, c.Buffered(Both))

	write(t, client, "after\n")
	readExactly(t, client, "after\n")
}

func TestStallToServerHoldsRequests(t *testing.T) {
	_, client, c, sc := setup(t)
	c.Stall(ToServer)
	c.Stall(ToServer) // stalling twice is the same as once
	write(t, client, "one\ntwo\n")
	waitBuffered(t, c, ToServer, len("one\ntwo\n"))
	requireQuiet(t, sc.lines)

	c.Unstall(ToServer)
	require.Equal(t, "one\n", recv(t, sc.lines))
	require.Equal(t, "two\n", recv(t, sc.lines))
	readExactly(t, client, "one\ntwo\n")
}

func TestStallKeepsEOFAfterBufferedBytes(t *testing.T) {
	_, client, c, sc := setup(t)
	c.Stall(ToServer)
	write(t, client, "last\n")
	require.NoError(t, client.CloseWrite())
	waitBuffered(t, c, ToServer, len("last\n"))
	requireQuiet(t, sc.end)

	c.Unstall(ToServer)
	require.Equal(t, "last\n", recv(t, sc.lines))
	require.ErrorIs(t, recv(t, sc.end), io.EOF)
	readExactly(t, client, "last\n")

	// The server closes its side in turn: the client reads EOF and the
	// connection finishes.
	require.NoError(t, sc.conn.Close())
	require.ErrorIs(t, readErr(t, client), io.EOF)
	requireDone(t, c)
}

func TestServerCloseReachesClientAfterData(t *testing.T) {
	p, client, c, sc := setup(t)
	write(t, client, "hi\n")
	readExactly(t, client, "hi\n")
	write(t, sc.conn, "bye\n")
	require.NoError(t, sc.conn.(*net.TCPConn).CloseWrite())
	readExactly(t, client, "bye\n")
	require.ErrorIs(t, readErr(t, client), io.EOF)
	require.False(t, c.Closed(), "half-closed connection still open")

	require.NoError(t, client.Close())
	requireDone(t, c)
	require.Empty(t, p.Conns())
}

func TestDelay(t *testing.T) {
	const d = 150 * time.Millisecond
	_, client, c, sc := setup(t)

	c.Delay(ToServer, d)
	start := time.Now()
	write(t, client, "slow\n")
	require.Equal(t, "slow\n", recv(t, sc.lines))
	require.GreaterOrEqual(t, time.Since(start), d)
	readExactly(t, client, "slow\n")
	c.Delay(ToServer, 0)

	c.Delay(ToClient, d)
	start = time.Now()
	write(t, client, "1\n")
	write(t, client, "2\n")
	write(t, client, "3\n")
	readExactly(t, client, "1\n2\n3\n")
	require.GreaterOrEqual(t, time.Since(start), d)

	c.Delay(Both, -time.Second) // off
	write(t, client, "fast\n")
	readExactly(t, client, "fast\n")
}

func TestResetGivesConnectionReset(t *testing.T) {
	p, client, c, sc := setup(t)
	c.Stall(ToClient)
	write(t, client, "dropped\n")
	waitBuffered(t, c, ToClient, len("dropped\n"))
	c.Reset()
	require.True(t, c.Closed())
	require.ErrorIs(t, readErr(t, client), syscall.ECONNRESET)
	require.ErrorIs(t, recv(t, sc.end), syscall.ECONNRESET)
	requireDone(t, c)
	require.Empty(t, p.Conns())
}

func TestCloseGivesEOF(t *testing.T) {
	p, client, c, sc := setup(t)
	write(t, client, "x\n")
	readExactly(t, client, "x\n")
	c.Close()
	c.Close() // idempotent
	require.ErrorIs(t, readErr(t, client), io.EOF)
	require.ErrorIs(t, recv(t, sc.end), io.EOF)
	requireDone(t, c)
	require.Empty(t, p.Conns())
}

func TestBlackHoleToServer(t *testing.T) {
	_, client, c, sc := setup(t)
	c.Stall(ToServer)
	write(t, client, "queued\n")
	waitBuffered(t, c, ToServer, len("queued\n"))
	c.BlackHole(ToServer)
	require.Equal(t, 0, c.Buffered(ToServer))
	c.Unstall(ToServer)
	write(t, client, "lost\n")
	require.NoError(t, client.CloseWrite()) // the FIN is lost too
	requireQuiet(t, sc.lines)
	requireQuiet(t, sc.end)
	requireNoRead(t, client)
	require.False(t, c.Closed())

	// The other direction still works.
	write(t, sc.conn, "from server\n")
	readExactly(t, client, "from server\n")
}

func TestBlackHoleToClient(t *testing.T) {
	_, client, c, sc := setup(t)
	c.BlackHole(ToClient)
	write(t, client, "ping\n")
	require.Equal(t, "ping\n", recv(t, sc.lines))
	requireNoRead(t, client)
	require.Equal(t, 0, c.Buffered(ToClient))
	require.False(t, c.Closed())
}

func TestRefuse(t *testing.T) {
	srv := startServer(t, true)
	p := startProxy(t, srv.addr())
	p.Refuse(true)
	require.ErrorIs(t, dialReset(t, p), syscall.ECONNRESET)
	require.Equal(t, 1, p.Accepted())
	require.Empty(t, p.Conns())

	p.Refuse(false)
	client := dial(t, p)
	c := waitConn(t, p, 2)
	write(t, client, "ok\n")
	readExactly(t, client, "ok\n")
	require.Equal(t, 2, c.ID())
	require.Equal(t, 2, p.Accepted())
}

func TestUnreachableTargetResets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	target := ln.Addr().String()
	require.NoError(t, ln.Close())

	p := startProxy(t, target)
	require.Equal(t, target, p.Target())
	require.ErrorIs(t, dialReset(t, p), syscall.ECONNRESET)
	require.Equal(t, 1, p.Accepted())
	require.Empty(t, p.Conns())
}

func TestConnsIDsAndAddresses(t *testing.T) {
	srv := startServer(t, true)
	p := startProxy(t, srv.addr())
	var clients []*net.TCPConn
	var servers []*serverConn
	for range 3 {
		cl := dial(t, p)
		clients = append(clients, cl)
		servers = append(servers, srv.nextConn(t))
		write(t, cl, "hi\n")
		readExactly(t, cl, "hi\n")
	}
	conns := p.Conns()
	require.Len(t, conns, 3)
	require.Equal(t, 3, p.Accepted())
	for i, c := range conns {
		require.Equal(t, i+1, c.ID())
		require.Equal(t, clients[i].LocalAddr().String(), c.ClientAddr())
		require.Equal(t, servers[i].conn.RemoteAddr().String(), c.UpstreamLocalAddr())
		require.False(t, c.Closed())
	}

	conns[1].Reset()
	requireDone(t, conns[1])
	got := p.Conns()
	require.Len(t, got, 2)
	require.Equal(t, []int{1, 3}, []int{got[0].ID(), got[1].ID()})
}

func TestStallAllAppliesToNewConns(t *testing.T) {
	srv := startServer(t, true)
	p := startProxy(t, srv.addr())
	first := dial(t, p)
	c1 := waitConn(t, p, 1)
	sc1 := srv.nextConn(t)

	p.StallAll(ToClient)
	second := dial(t, p)
	c2 := waitConn(t, p, 2)
	sc2 := srv.nextConn(t)
	for _, x := range []struct {
		client *net.TCPConn
		conn   *Conn
		server *serverConn
	}{{first, c1, sc1}, {second, c2, sc2}} {
		write(t, x.client, "held\n")
		require.Equal(t, "held\n", recv(t, x.server.lines))
		waitBuffered(t, x.conn, ToClient, len("held\n"))
	}
	requireNoRead(t, first)
	requireNoRead(t, second)

	p.UnstallAll(ToClient)
	readExactly(t, first, "held\n")
	readExactly(t, second, "held\n")

	third := dial(t, p)
	write(t, third, "free\n")
	readExactly(t, third, "free\n")
}

func TestWaitCancelled(t *testing.T) {
	_, _, c, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, c.WaitBuffered(ctx, Both, 1), context.Canceled)
	require.ErrorIs(t, c.proxy.WaitAccepted(ctx, 2), context.Canceled)

	c.Reset()
	require.ErrorIs(t, c.WaitBuffered(context.Background(), ToServer, 1), net.ErrClosed)
	require.NoError(t, c.proxy.Close())
	require.ErrorIs(t, c.proxy.WaitAccepted(context.Background(), 2), net.ErrClosed)
}

func TestCloseWaitsAndLeavesNothing(t *testing.T) {
	srv := startServer(t, true)
	before := goleak.IgnoreCurrent()
	p, err := Start(srv.addr())
	require.NoError(t, err)

	var clients []*net.TCPConn
	for range 4 {
		clients = append(clients, dial(t, p))
	}
	conns := make([]*Conn, 0, 4)
	for i := range clients {
		conns = append(conns, waitConn(t, p, i+1))
	}
	conns[0].Stall(ToClient)
	conns[1].Delay(Both, time.Hour)
	conns[2].BlackHole(Both)
	for i := range 2 {
		write(t, clients[i], "pending\n")
		waitBuffered(t, conns[i], Both, len("pending\n"))
	}
	write(t, clients[3], "done\n")
	readExactly(t, clients[3], "done\n")

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { require.NoError(t, p.Close()) })
	}
	wg.Wait()
	for _, c := range conns {
		select {
		case <-c.Done():
		default:
			t.Fatalf("connection %d not done after Close", c.ID())
		}
		require.True(t, c.Closed())
	}
	require.Empty(t, p.Conns())
	for _, cl := range clients {
		require.ErrorIs(t, readErr(t, cl), io.EOF)
	}
	goleak.VerifyNone(t, before)
}

func TestCloseBeforeAnyConn(t *testing.T) {
	p, err := Start("127.0.0.1:1")
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())
	_, err = net.DialTimeout("tcp", p.Addr(), time.Second)
	require.Error(t, err)
}

// TestConcurrentFaults streams through several connections while faults are
// toggled on all of them, and checks that every byte arrives in order.
func TestConcurrentFaults(t *testing.T) {
	srv := startServer(t, true)
	p := startProxy(t, srv.addr())
	const clients, lines = 6, 300

	stop := make(chan struct{})
	toggled := make(chan struct{})
	go func() {
		defer close(toggled)
		toggle(p, stop)
	}()

	var wg sync.WaitGroup
	for i := range clients {
		client := dial(t, p)
		wg.Go(func() { stream(t, client, i, lines) })
	}
	wg.Wait()
	close(stop)
	<-toggled
}

// toggle stalls, unstalls and delays every connection of p at random until
// stop is closed, then undoes it all.
func toggle(p *Proxy, stop <-chan struct{}) {
	r := rand.New(rand.NewPCG(1, 2))
	dirs := []Direction{ToServer, ToClient, Both}
	for {
		select {
		case <-stop:
			p.UnstallAll(Both)
			for _, c := range p.Conns() {
				c.Delay(Both, 0)
			}
			return
		default:
		}
		dir := dirs[r.IntN(len(dirs))]
		p.StallAll(dir)
		for _, c := range p.Conns() {
			c.Delay(dirs[r.IntN(len(dirs))], time.Duration(r.IntN(500))*time.Microsecond)
			_ = c.Buffered(Both)
		}
		time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
		p.UnstallAll(dir)
	}
}

// stream writes lines numbered lines through client and checks the echo.
func stream(t *testing.T, client *net.TCPConn, id, lines int) {
	var want bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&want, "client %d line %d %s\n", id, i, strings.Repeat("y", i%50))
	}
	errc := make(chan error, 1)
	go func() {
		_, err := client.Write(want.Bytes())
		errc <- err
	}()
	_ = client.SetReadDeadline(time.Now().Add(waitLimit))
	got := make([]byte, want.Len())
	_, err := io.ReadFull(client, got)
	if werr := <-errc; werr != nil {
		t.Errorf("client %d write: %v", id, werr)
	}
	if err != nil {
		t.Errorf("client %d read: %v", id, err)
		return
	}
	if !bytes.Equal(want.Bytes(), got) {
		t.Errorf("client %d: stream corrupted", id)
	}
}

func TestReleaseLetsExactlyNBytesThrough(t *testing.T) {
	_, client, c, sc := setup(t)
	c.Stall(ToClient)
	write(t, client, "a\nbb\n")
	require.Equal(t, "a\n", recv(t, sc.lines))
	require.Equal(t, "bb\n", recv(t, sc.lines))
	waitBuffered(t, c, ToClient, len("a\nbb\n"))

	c.Release(ToClient, len("a\nb")) // splits the held bytes: the rest stays held
	readExactly(t, client, "a\nb")
	requireNoRead(t, client)
	require.Equal(t, len("b\n"), c.Buffered(ToClient))

	c.Release(ToClient, len("b\nccc")) // what is held, then bytes read later
	write(t, client, "ccc\n")
	require.Equal(t, "ccc\n", recv(t, sc.lines))
	readExactly(t, client, "b\nccc")
	requireNoRead(t, client)

	c.Unstall(ToClient)
	readExactly(t, client, "\n")
	c.Release(ToServer, 1) // not stalled: no effect
	write(t, client, "after\n")
	readExactly(t, client, "after\n")
}
