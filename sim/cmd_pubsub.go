package sim

import (
	"slices"
	"strings"
)

// Pub/sub, enough for REDIRECTed invalidations: SUBSCRIBE, UNSUBSCRIBE
// and PUBLISH on exact channel names (no patterns, no shard channels).
// ACL channel permissions are not checked.

func pubsubCommands() map[string]*command {
	return map[string]*command{
		"subscribe":   {arity: -2, run: (*Engine).subscribeCommand, noScript: true},
		"unsubscribe": {arity: -1, run: (*Engine).unsubscribeCommand, noScript: true},
		"publish":     {arity: 3, run: (*Engine).publishCommand},
	}
}

// allowedSubscribed are the commands a subscribed RESP2 connection may run.
var allowedSubscribed = map[string]bool{
	"subscribe": true, "unsubscribe": true, "psubscribe": true, "punsubscribe": true,
	"ssubscribe": true, "sunsubscribe": true, "ping": true, "quit": true, "reset": true,
}

// subscribedContextError is the error of any other command on a subscribed
// RESP2 connection (RESP3 connections may run every command).
func subscribedContextError(c *client, fullName string) (reply, bool) {
	if c.proto == 3 || len(c.channels) == 0 || allowedSubscribed[strings.SplitN(fullName, "|", 2)[0]] {
		return reply{}, false
	}
	return errorf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "+
		"are allowed in this context", fullName), true
}

func (e *Engine) subscribeCommand(c *client, args []string) reply {
	out := make([]reply, 0, len(args)-1)
	for _, ch := range args[1:] {
		if !slices.Contains(c.channels, ch) {
			c.channels = append(c.channels, ch)
		}
		out = append(out, pushReply(bulk("subscribe"), bulk(ch), integer(int64(len(c.channels)))))
	}
	return seq(out...)
}

func (e *Engine) unsubscribeCommand(c *client, args []string) reply {
	chans := args[1:]
	if len(chans) == 0 {
		if len(c.channels) == 0 {
			return pushReply(bulk("unsubscribe"), null(), integer(0))
		}
		chans = slices.Clone(c.channels)
	}
	out := make([]reply, 0, len(chans))
	for _, ch := range chans {
		if i := slices.Index(c.channels, ch); i >= 0 {
			c.channels = slices.Delete(c.channels, i, i+1)
		}
		out = append(out, pushReply(bulk("unsubscribe"), bulk(ch), integer(int64(len(c.channels)))))
	}
	return seq(out...)
}

// publishCommand queues the message for every subscriber (in client id
// order) and replies how many there were.
func (e *Engine) publishCommand(_ *client, args []string) reply {
	var n int64
	for _, id := range sortedIDs(e.clients) {
		sub := e.clients[id]
		if slices.Contains(sub.channels, args[1]) {
			e.push(sub, pushReply(bulk("message"), bulk(args[1]), bulk(args[2])).encode(nil, sub.proto))
			n++
		}
	}
	return integer(n)
}
