package sim

import (
	"sort"
	"strings"
)

// clientSubArity is the arity of each CLIENT subcommand (counting CLIENT).
var clientSubArity = map[string]int{
	"id": 2, "info": 2, "list": -2, "kill": -3, "setname": 3, "getname": 2,
	"setinfo": 4, "tracking": -3, "no-evict": 3, "no-touch": 3, "capa": -3, "reply": 3,
	"caching": 3, "getredir": 2, "trackinginfo": 2,
}

func (e *Engine) clientCommand(c *client, args []string) reply {
	sub := strings.ToLower(args[1])
	arity, ok := clientSubArity[sub]
	if !ok || (sub == "setinfo" && !e.spec.clientSetInfo) {
		return errorf("ERR unknown subcommand '%.128s'. Try CLIENT HELP.", args[1])
	}
	if !arityOK(arity, len(args)) {
		return wrongArity("client|" + sub)
	}
	switch sub {
	case "id":
		return integer(c.id)
	case "info":
		return verbatim(e.clientInfoLine(c, "client|info"))
	case "list":
		return verbatim(e.clientList(c))
	case "kill":
		return e.clientKill(c, args)
	case "setname":
		if r := validClientName(args[2]); isError(r) {
			return r
		}
		c.name = args[2]
		return okReply
	case "getname":
		if c.name == "" {
			return null()
		}
		return bulk(c.name)
	case "setinfo":
		return clientSetInfo(c, args)
	case "tracking":
		return e.clientTracking(c, args)
	case "caching":
		return clientCaching(c, args)
	case "trackinginfo":
		return clientTrackingInfo(c)
	case "getredir":
		return clientGetRedir(c)
	}
	return okReply // no-evict, no-touch, capa, reply
}

func clientSetInfo(c *client, args []string) reply {
	switch strings.ToLower(args[2]) {
	case "lib-name":
		c.libName = args[3]
	case "lib-ver":
		c.libVer = args[3]
	default:
		return errorf("ERR Unrecognized option '%s'", args[2])
	}
	return okReply
}

func (e *Engine) clientList(current *client) string {
	ids := make([]int64, 0, len(e.clients))
	for id := range e.clients {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(e.clientInfoLine(e.clients[id], "client|list"))
	}
	return b.String()
}

// killFilter is a parsed new-style CLIENT KILL.
type killFilter struct {
	id     int64
	addr   string
	laddr  string
	user   string
	skipMe bool
}

func (e *Engine) clientKill(c *client, args []string) reply {
	if len(args) == 3 {
		for id, other := range e.clients {
			if other.addr == args[2] {
				e.kill(id)
				return okReply
			}
		}
		return errReply("ERR No such client")
	}
	f, r := e.parseKillFilter(args)
	if isError(r) {
		return r
	}
	var n int64
	for id, other := range e.clients {
		if f.matches(other) && !(f.skipMe && id == c.id) {
			e.kill(id)
			n++
		}
	}
	return integer(n)
}

func (e *Engine) parseKillFilter(args []string) (killFilter, reply) {
	f := killFilter{skipMe: true}
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return f, syntaxError
		}
		v := args[i+1]
		switch strings.ToLower(args[i]) {
		case "id":
			id, ok := parseInt(v)
			if !ok {
				return f, errReply(e.spec.killIDBadValue)
			}
			if id <= 0 {
				return f, errReply("ERR client-id should be greater than 0")
			}
			f.id = id
		case "addr":
			f.addr = v
		case "laddr":
			f.laddr = v
		case "user":
			f.user = v
		case "skipme":
			switch strings.ToLower(v) {
			case "yes":
				f.skipMe = true
			case "no":
				f.skipMe = false
			default:
				return f, syntaxError
			}
		default:
			return f, syntaxError
		}
	}
	return f, okReply
}

func (f killFilter) matches(c *client) bool {
	return (f.id == 0 || f.id == c.id) && (f.addr == "" || f.addr == c.addr) &&
		(f.laddr == "" || f.laddr == c.laddr) && (f.user == "" || f.user == c.user)
}
