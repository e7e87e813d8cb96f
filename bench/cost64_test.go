package bench

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// cost is what one round of pairs cost the client process and the server:
// the quantities that decide throughput when both share the machine's cores
// (client CPU per pair is a pair the server could have run).
type cost struct {
	pairs                    int64
	cpu                      time.Duration // client process user+sys
	syscr, syscw             int64         // client read/write-class syscalls (/proc/self/io)
	switches                 int64         // client threads' voluntary context switches
	serverCPU                float64       // seconds, used_cpu_user + used_cpu_sys
	serverReads, serverCalls int64         // socket reads; commands run (commandstats, a script's own calls included)
	bytesIn, bytesOut        int64         // server's net input and output
	mallocs                  uint64
}

func (c *cost) sub(o cost) {
	c.pairs -= o.pairs
	c.cpu -= o.cpu
	c.syscr -= o.syscr
	c.syscw -= o.syscw
	c.switches -= o.switches
	c.serverCPU -= o.serverCPU
	c.serverReads -= o.serverReads
	c.serverCalls -= o.serverCalls
	c.bytesIn -= o.bytesIn
	c.bytesOut -= o.bytesOut
	c.mallocs -= o.mallocs
}

func (c *cost) add(o cost) {
	c.pairs += o.pairs
	c.cpu += o.cpu
	c.syscr += o.syscr
	c.syscw += o.syscw
	c.switches += o.switches
	c.serverCPU += o.serverCPU
	c.serverReads += o.serverReads
	c.serverCalls += o.serverCalls
	c.bytesIn += o.bytesIn
	c.bytesOut += o.bytesOut
	c.mallocs += o.mallocs
}

// sample reads the counters now.
func sample(b *testing.B, stats rueidis.Client) cost {
	var c cost
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		c.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if io, err := os.ReadFile("/proc/self/io"); err == nil {
		c.syscr = procField(string(io), "syscr:")
		c.syscw = procField(string(io), "syscw:")
	}
	if tasks, err := os.ReadDir("/proc/self/task"); err == nil {
		for _, t := range tasks {
			if st, err := os.ReadFile("/proc/self/task/" + t.Name() + "/status"); err == nil {
				c.switches += procField(string(st), "voluntary_ctxt_switches:")
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	c.mallocs = ms.Mallocs
	info, err := stats.Do(context.Background(), stats.B().Info().Section("everything").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_user" || k == "used_cpu_sys":
			f, _ := strconv.ParseFloat(v, 64)
			c.serverCPU += f
		case k == "total_reads_processed":
			c.serverReads, _ = strconv.ParseInt(v, 10, 64)
		case k == "total_net_input_bytes":
			c.bytesIn, _ = strconv.ParseInt(v, 10, 64)
		case k == "total_net_output_bytes":
			c.bytesOut, _ = strconv.ParseInt(v, 10, 64)
		case strings.HasPrefix(k, "cmdstat_"):
			calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			c.serverCalls += n
		}
	}
	return c
}

// procField is the integer after name in a /proc text file.
func procField(text, name string) int64 {
	i := strings.Index(text, name)
	if i < 0 {
		return 0
	}
	rest := strings.TrimSpace(text[i+len(name):])
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
	return n
}

// BenchmarkPairs64Cost is BenchmarkPairs64 with the cost of a pair beside
// its rate: per pair, the client process's CPU (µs), its read- and
// write-class syscalls and its threads' voluntary context switches (the
// scheduler parking and waking OS threads), the server's CPU (µs), socket
// reads, commands and bytes in and out. Raw rueidis and lease alternate in
// short rounds. -cost.cpuprofile F writes a CPU profile of lease's rounds
// only (F) and of raw's (F.raw).
func BenchmarkPairs64Cost(b *testing.B) {
	const workers, round = 64, 250 * time.Millisecond
	impls := costImplementations(b)
	stats := newClient(b)
	for _, impl := range impls { // warm up: connections, sessions, scripts
		if _, _, err := runRound(impl.name, impl.run, workers, round); err != nil {
			b.Fatal(err)
		}
	}
	profile := os.Getenv("COST_CPUPROFILE")
	totals := make([]cost, len(impls))
	spent := make([]time.Duration, len(impls))
	b.ResetTimer()
	for r := 0; r < max(8, b.N); r++ {
		for i, impl := range impls {
			before := sample(b, stats)
			n, d, err := runRound(impl.name, impl.run, workers, round)
			if err != nil {
				b.Fatal(err)
			}
			spent[i] += d
			after := sample(b, stats)
			after.sub(before)
			after.pairs = n
			totals[i].add(after)
		}
	}
	b.StopTimer()
	for i, impl := range impls {
		t := totals[i]
		p := float64(t.pairs)
		b.ReportMetric(p/spent[i].Seconds(), impl.name+"-pairs/s")
		b.ReportMetric(float64(t.cpu.Microseconds())/p, impl.name+"-cpu-µs/pair")
		b.ReportMetric(t.serverCPU*1e6/p, impl.name+"-server-cpu-µs/pair")
		b.ReportMetric(float64(t.syscr)/p, impl.name+"-syscr/pair")
		b.ReportMetric(float64(t.syscw)/p, impl.name+"-syscw/pair")
		b.ReportMetric(float64(t.switches)/p, impl.name+"-ctxsw/pair")
		b.ReportMetric(float64(t.serverReads)/p, impl.name+"-server-reads/pair")
		b.ReportMetric(float64(t.serverCalls)/p, impl.name+"-server-calls/pair")
		b.ReportMetric(float64(t.bytesIn)/p, impl.name+"-bytes-in/pair")
		b.ReportMetric(float64(t.bytesOut)/p, impl.name+"-bytes-out/pair")
		b.ReportMetric(float64(t.mallocs)/p, impl.name+"-allocs/pair")
	}
	b.ReportMetric(float64(totals[1].pairs)/spent[1].Seconds()/(float64(totals[0].pairs)/spent[0].Seconds()), "lease/raw")
	if profile != "" {
		for i, impl := range impls {
			f, err := os.Create(profile + "." + impl.name)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				b.Fatal(err)
			}
			for range profileRounds() {
				if _, _, err := runRound(impl.name, impls[i].run, workers, round); err != nil {
					b.Fatal(err)
				}
			}
			pprof.StopCPUProfile()
			f.Close()
		}
	}
}

// costImplementations are raw rueidis and lease at the clients' defaults
// (client-side caching on), as peerbench runs them.
func costImplementations(b *testing.B) []implementation {
	addr, password := server(b)
	open := func() rueidis.Client {
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Password: password})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(client.Close)
		return client
	}
	raw, locks := rawPair(open()), leasePair(b, open())
	if os.Getenv("COST_CTX") != "request" {
		return []implementation{{"raw-rueidis", raw}, {"lease", locks}}
	}
	return []implementation{{"raw-rueidis", perCall(raw)}, {"lease", perCall(locks)}}
}

// perCall runs p under a fresh context.WithTimeout, as a service passes
// its request's context.
func perCall(p pair) pair {
	return func(_ context.Context, key string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return p(ctx, key)
	}
}

// profileRounds is COST_PROFILE_ROUNDS (default 8) rounds of 250 ms.
func profileRounds() int {
	if n, err := strconv.Atoi(os.Getenv("COST_PROFILE_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 8
}
