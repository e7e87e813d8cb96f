package dst

import "testing"

// TestSimulatorRunsTheShippedEngine_SwarmDrainsThePerCallerWritersSessions:
// Swarm draws the three kinds of client that ship — per-caller writers
// (rueidis, valkey-go: pipelined connections that say
// conn.PerCallerWriter, whose sessions the engine drains), the root
// module's own pipelined client (callers hand their commands to it
// themselves) and go-redis' one pipeline at a time — and in the
// per-caller writers' schedules of seeds 1-200 the engine's session
// drainer does all of its work under faults: lock commands queue behind a
// round trip on the wire, its pipelines carry them (some the commands of
// several operations at once), round trips end without their replies with
// commands queued behind them, and fences are answered while a drained
// batch is on the wire or commands wait behind a round trip; no invariant
// breaks — invariant 0 included, which holds the engine to one Do at a
// time on such a session (an engine that ignored conn.PerCallerWriter, its
// callers each writing their own, broke it at seed 1) — and such a
// schedule replays byte for byte. Schedules of the
// other kinds count none of it (drainstats.go counts the per-caller
// writers' sessions only).
func TestSimulatorRunsTheShippedEngine_SwarmDrainsThePerCallerWritersSessions(t *testing.T) {
	kinds := map[string]int{}
	var drained, others Stats
	var replayed int
	for seed := uint64(1); seed <= 200; seed++ {
		opt := Swarm(seed)
		kind := "root client's"
		switch {
		case opt.Unpipelined:
			kind = "go-redis'"
		case opt.PerCallerWriter:
			kind = "per-caller writer's"
		}
		kinds[kind]++
		if kind != "per-caller writer's" && seed > 40 {
			continue // the others' zero counts are checked on the first 40 seeds
		}
		r := Run(opt)
		if r.Failed() {
			opt.Transcript = true
			t.Fatalf("%s", Run(opt).Report())
		}
		if kind != "per-caller writer's" {
			others.Add(r.Stats)
			continue
		}
		drained.Add(r.Stats)
		if replayed < 3 && r.Stats.PerCallerQueued > 0 {
			replayed++
			opt.Transcript = true
			if a, b := Run(opt), Run(opt); a.Transcript == "" || a.Transcript != b.Transcript || a.Stats != r.Stats {
				t.Fatalf("Swarm(%d), a per-caller writer's schedule, did not replay byte for byte", seed)
			}
		}
	}
	if len(kinds) != 3 || kinds["per-caller writer's"] < 50 {
		t.Fatalf("Swarm's seeds 1-200 drew the clients %v; want the three kinds, per-caller writers in about 3 in 8", kinds)
	}
	d := drained
	if d.PerCallerSchedules != kinds["per-caller writer's"] || d.PerCallerQueued == 0 || d.PerCallerBatches == 0 ||
		d.PerCallerShared == 0 || d.PerCallerUncertain == 0 || d.PerCallerFenced == 0 || d.Fences == 0 {
		t.Fatalf("%d per-caller writers' schedules: schedules %d, commands queued %d, drained pipelines %d (%d shared), "+
			"round trips without replies with commands queued %d, fences with a drained batch or queue %d",
			kinds["per-caller writer's"], d.PerCallerSchedules, d.PerCallerQueued, d.PerCallerBatches, d.PerCallerShared,
			d.PerCallerUncertain, d.PerCallerFenced)
	}
	t.Logf("%v; per-caller writers: commands queued %d, drained pipelines %d (%d shared), round trips without "+
		"replies with commands queued %d, fences with a drained batch or queue %d", kinds, d.PerCallerQueued,
		d.PerCallerBatches, d.PerCallerShared, d.PerCallerUncertain, d.PerCallerFenced)
	o := others
	if o.PerCallerSchedules+o.PerCallerQueued+o.PerCallerBatches+o.PerCallerShared+o.PerCallerUncertain+o.PerCallerFenced != 0 {
		t.Fatalf("schedules of the other kinds counted per-caller writers' drains: %+v", o)
	}
}
