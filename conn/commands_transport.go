package conn

import "strconv"

// PingCommand is PING: a Transport's liveness check of an idle session
// (see checkIdle), built here like every other wire command.
func PingCommand() Command { return Command{Args: []string{"PING"}, Key: -1} }

// WaitCommand is WAIT replicas timeoutMillis, sent right after the fenced
// acquisition script on its connection (AcquireFencedReplicated).
func WaitCommand(replicas, timeoutMillis int64) Command {
	return Command{Args: []string{"WAIT", strconv.FormatInt(replicas, 10), strconv.FormatInt(timeoutMillis, 10)}, Key: -1}
}
