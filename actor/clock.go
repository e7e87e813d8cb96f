package actor

import "github.com/respire-go/respire/conn"

// Clock is the time source for alarms: real time in production, virtual time
// in tests and the simulator (conn.Clock, shared with the wire engine).
type Clock = conn.Clock

// Timer is a pending call created by [Clock.AfterFunc] (conn.Timer).
type Timer = conn.Timer

// realTime is the production clock.
var realTime = conn.RealClock()

// RealClock returns the production [Clock] (conn.RealClock): Now is
// monotonic time since package initialisation and AfterFunc is
// time.AfterFunc. It is safe for concurrent use and shared by every caller.
func RealClock() Clock { return realTime }
