package sim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

func connectionCommands() map[string]*command {
	return map[string]*command{
		"hello":   {arity: -1, run: (*Engine).helloCommand, noAuth: true, noScript: true, noQueue: true},
		"auth":    {arity: -2, run: (*Engine).authCommand, noAuth: true, noScript: true, noQueue: true},
		"ping":    {arity: -1, run: pingCommand},
		"echo":    {arity: 2, run: func(_ *Engine, _ *client, a []string) reply { return bulk(a[1]) }},
		"select":  {arity: 2, run: (*Engine).selectCommand},
		"client":  {arity: -2, run: (*Engine).clientCommand, sub: true, noScript: true},
		"info":    {arity: -1, run: (*Engine).infoCommand},
		"wait":    {arity: 3, run: func(*Engine, *client, []string) reply { return integer(0) }, noScript: true},
		"command": {arity: -1, run: (*Engine).commandCommand, sub: true},
		"multi":   {arity: 1, run: multiCommand, noScript: true, noQueue: true},
		"exec":    {arity: 1, run: (*Engine).execCommand, noScript: true, noQueue: true},
		"discard": {arity: 1, run: discardCommand, noScript: true, noQueue: true},
		"waitaof": {arity: 4, run: func(*Engine, *client, []string) reply { return array(integer(0), integer(0)) },
			noScript: true, has: func(s profileSpec) bool { return s.waitaof }},
	}
}

func pingCommand(_ *Engine, c *client, args []string) reply {
	if len(args) > 2 {
		return wrongArity("ping")
	}
	if c.proto == 2 && len(c.channels) > 0 {
		return array(bulk("pong"), bulk(strings.Join(args[1:], "")))
	}
	if len(args) == 2 {
		return bulk(args[1])
	}
	return status("PONG")
}

func (e *Engine) helloCommand(c *client, args []string) reply {
	proto := c.proto
	if len(args) > 1 {
		v, ok := parseInt(args[1])
		if !ok {
			return errReply("ERR Protocol version is not an integer or out of range")
		}
		if v < 2 || v > 3 {
			return errReply("NOPROTO unsupported protocol version")
		}
		proto = int(v)
	}
	// Like helloCommand in Redis/Valkey: options are parsed (and a SETNAME validated)
	// first, then AUTH runs, then the NOAUTH check.
	user, password, auth := "", "", false
	name, setName := "", false
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch opt := strings.ToLower(args[i]); {
		case opt == "auth" && more >= 2:
			user, password, auth = args[i+1], args[i+2], true
			i += 2
		case opt == "setname" && more >= 1:
			if r := validClientName(args[i+1]); isError(r) {
				return r
			}
			name, setName = args[i+1], true
			i++
		default:
			return errorf("ERR Syntax error in HELLO option '%s'", args[i])
		}
	}
	if auth {
		if r := e.authenticate(c, user, password); isError(r) {
			return r
		}
	}
	if !c.authed {
		return e.spec.helloNoAuth()
	}
	if setName {
		c.name = name
	}
	c.proto = proto
	mode := "standalone"
	if e.cluster != nil {
		mode = "cluster"
	}
	return mapReply(bulk("server"), bulk(e.spec.server), bulk("version"), bulk(e.spec.version),
		bulk("proto"), integer(int64(proto)), bulk("id"), integer(c.id),
		bulk("mode"), bulk(mode), bulk("role"), bulk("master"),
		bulk("modules"), e.spec.modules())
}

func (e *Engine) authCommand(c *client, args []string) reply {
	switch len(args) {
	case 2:
		if u := e.users["default"]; u.nopass {
			return errReply("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		}
		return e.authenticate(c, "default", args[1])
	case 3:
		return e.authenticate(c, args[1], args[2])
	}
	return syntaxError
}

func (e *Engine) selectCommand(c *client, args []string) reply {
	n, ok := parseInt(args[1])
	switch {
	case !ok:
		return notInteger
	case e.cluster != nil && n != 0:
		return errReply("ERR SELECT is not allowed in cluster mode")
	case n < 0 || n >= int64(len(e.dbs)):
		return errReply("ERR DB index is out of range")
	}
	c.db = int(n)
	return okReply
}

func (e *Engine) infoCommand(c *client, args []string) reply {
	mode, enabled := "standalone", 0
	if e.cluster != nil {
		mode, enabled = "cluster", 1
	}
	section := "default"
	if len(args) > 1 {
		section = strings.ToLower(args[1])
	}
	var t string
	if section == "server" || section == "default" || section == "all" || section == "everything" {
		t += e.spec.infoServer(mode, e.port)
	}
	if section == "replication" || section == "default" || section == "all" || section == "everything" {
		t += sep(t) + "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"
	}
	if section == "cluster" || section == "default" || section == "all" || section == "everything" {
		t += sep(t) + fmt.Sprintf("# Cluster\r\ncluster_enabled:%d\r\n", enabled)
	}
	return verbatim(t)
}

func sep(t string) string {
	if t == "" {
		return ""
	}
	return "\r\n"
}

func (e *Engine) commandCommand(c *client, args []string) reply {
	if len(args) == 1 { // bare COMMAND: every command's entry, as COMMAND INFO gives it
		names := slices.Sorted(maps.Keys(commands))
		return e.commandCommand(c, append([]string{"COMMAND", "INFO"}, names...))
	}
	if !strings.EqualFold(args[1], "info") {
		if len(args) >= 2 && strings.EqualFold(args[1], "count") {
			return integer(int64(len(commands)))
		}
		return errorf("ERR unknown subcommand '%s'. Try COMMAND HELP.", strings.Join(args[1:2], ""))
	}
	out := make([]reply, 0, len(args)-2)
	for _, name := range args[2:] {
		if r, ok := e.spec.commandInfo(strings.ToLower(name)); ok {
			out = append(out, r)
			continue
		}
		n, cmd := e.lookupCommand([]string{name})
		if cmd == nil {
			out = append(out, null())
			continue
		}
		out = append(out, array(bulk(n), integer(int64(cmd.arity)), array(), integer(0),
			integer(0), integer(0), array(), array(), array(), array()))
	}
	return array(out...)
}

func multiCommand(_ *Engine, c *client, _ []string) reply {
	if c.inMulti {
		return errReply("ERR MULTI calls can not be nested")
	}
	c.inMulti, c.multi, c.dirty = true, nil, false
	return okReply
}

func discardCommand(_ *Engine, c *client, _ []string) reply {
	if !c.inMulti {
		return errReply("ERR DISCARD without MULTI")
	}
	c.inMulti, c.multi, c.dirty = false, nil, false
	return okReply
}

func (e *Engine) execCommand(c *client, _ []string) reply {
	if !c.inMulti {
		return errReply("ERR EXEC without MULTI")
	}
	queued, dirty := c.multi, c.dirty
	c.inMulti, c.multi, c.dirty = false, nil, false
	if dirty {
		return errReply("EXECABORT Transaction discarded because of previous errors.")
	}
	out := make([]reply, 0, len(queued))
	for _, args := range queued {
		_, cmd := e.lookupCommand(args)
		out = append(out, e.call(c, cmd, args))
	}
	return array(out...)
}

func validClientName(name string) reply {
	for _, r := range name {
		if r < '!' || r > '~' {
			return errReply("ERR Client names cannot contain spaces, newlines or special characters.")
		}
	}
	return okReply
}

// clientInfoLine renders one CLIENT INFO / CLIENT LIST line.
func (e *Engine) clientInfoLine(c *client, current string) string {
	age := int64(e.clock.Now().Sub(c.created).Seconds())
	lib := ""
	if e.spec.clientSetInfo {
		lib = fmt.Sprintf(" lib-name=%s lib-ver=%s", c.libName, c.libVer)
	}
	redir := int64(-1)
	if c.trk.on {
		redir = c.trk.redirect
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=0 flags=%s db=%d sub=%d psub=0 ssub=0 "+
		"multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=1024 rbp=0 obl=0 oll=0 omem=0 tot-mem=1024 "+
		"events=r cmd=%s user=%s redir=%d resp=%d%s\n",
		c.id, c.addr, c.laddr, c.id+7, c.name, age, clientFlags(c), c.db, len(c.channels), current, c.user, redir, c.proto, lib)
}

// clientFlags is CLIENT INFO's flags field: P subscribed, t tracking,
// R broken redirect, B broadcast; N none.
func clientFlags(c *client) string {
	var f []byte
	for _, x := range []struct {
		set  bool
		flag byte
	}{{len(c.channels) > 0, 'P'}, {c.trk.on, 't'}, {c.trk.broken, 'R'}, {c.trk.bcast, 'B'}} {
		if x.set {
			f = append(f, x.flag)
		}
	}
	if len(f) == 0 {
		return "N"
	}
	return string(f)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
