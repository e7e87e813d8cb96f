package conn

import "strconv"

// PingCommand is PING: a Transport's liveness check of an idle session
// (see checkIdle), built here like every other wire command.
func PingCommand() Command { return Command{Args: []string{"PING"}, Key: -1} }

// RoleCommand is ROLE: a Sentinel engine reads the replicas a primary
// lists (rule SentinelRenewalsNeedReplicaAcks).
func RoleCommand() Command { return Command{Args: []string{"ROLE"}, Key: -1} }

// InfoReplicationCommand is INFO replication: a Sentinel engine reads, when
// it opens a session, how many replicas the primary has, syncing ones
// included (ROLE lists only those online).
func InfoReplicationCommand() Command { return Command{Args: []string{"INFO", "replication"}, Key: -1} }

// WaitCommand is WAIT replicas timeoutMillis, sent right after the fenced
// acquisition script on its connection (AcquireFencedReplicated).
func WaitCommand(replicas, timeoutMillis int64) Command {
	return Command{Args: []string{"WAIT", strconv.FormatInt(replicas, 10), strconv.FormatInt(timeoutMillis, 10)}, Key: -1}
}

// TrackingRedirectCommand turns tracking on with the invalidations sent
// to the connection whose CLIENT ID is listener: OPTIN and NOLOOP, as
// TrackingOnCommand. A transport whose client cannot read a connection
// between its commands (go-redis) reads and tracks on one connection and
// listens on another.
func TrackingRedirectCommand(listener int64) Command {
	return Command{Args: []string{"CLIENT", "TRACKING", "ON", "REDIRECT", strconv.FormatInt(listener, 10), "OPTIN", "NOLOOP"}, Key: -1}
}
