package sim

import (
	"slices"
	"strings"
)

// CLIENT TRACKING, CACHING, TRACKINGINFO and GETREDIR, with the checks and
// error texts of networking.c (identical in the four profiles; NOPERM for
// users without client|tracking or client|caching is the profile's usual
// text).

// trackingOptions is a parsed CLIENT TRACKING.
type trackingOptions struct {
	redirect                     int64
	bcast, optin, optout, noloop bool
	prefixes                     []string
}

const (
	errBcastSwitch = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, " +
		"and then re-enabling it with a different mode."
	errOptSwitch = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, " +
		"and then re-enabling it with a different mode."
	errCachingOff = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
)

// clientTracking is CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p]...
// [BCAST] [OPTIN] [OPTOUT] [NOLOOP]. Options are parsed (and REDIRECT
// checked) before ON/OFF, as in networking.c.
func (e *Engine) clientTracking(c *client, args []string) reply {
	o, r := e.parseTrackingOptions(args[3:])
	if isError(r) {
		return r
	}
	switch strings.ToLower(args[2]) {
	case "off":
		e.disableTracking(c)
		return okReply
	case "on":
	default:
		return syntaxError
	}
	if r := trackingModeError(c, o); isError(r) {
		return r
	}
	var overlap reply
	if o.bcast {
		var stop bool
		if overlap, stop = prefixCollision(c, o.prefixes); stop {
			return overlap
		}
	}
	e.enableTracking(c, o)
	if isError(overlap) {
		// Real servers reply the error, then enable tracking anyway and
		// reply +OK too, when the overlap is not with the first prefix
		// (checkPrefixCollisionsOrReply returns its index).
		return seq(overlap, okReply)
	}
	return okReply
}

func (e *Engine) parseTrackingOptions(opts []string) (trackingOptions, reply) {
	var o trackingOptions
	for j := 0; j < len(opts); j++ {
		more := j+1 < len(opts)
		switch opt := strings.ToLower(opts[j]); {
		case opt == "redirect" && more:
			j++
			if o.redirect != 0 {
				return o, errReply("ERR A client can only redirect to a single other client")
			}
			id, ok := parseInt(opts[j])
			if !ok {
				return o, notInteger
			}
			if e.clients[id] == nil {
				return o, errReply("ERR The client ID you want redirect to does not exist")
			}
			o.redirect = id
		case opt == "bcast":
			o.bcast = true
		case opt == "optin":
			o.optin = true
		case opt == "optout":
			o.optout = true
		case opt == "noloop":
			o.noloop = true
		case opt == "prefix" && more:
			j++
			o.prefixes = append(o.prefixes, opts[j])
		default:
			return o, syntaxError
		}
	}
	return o, okReply
}

// trackingModeError checks CLIENT TRACKING ON's options against each other
// and the client's current mode, in the real servers' order.
func trackingModeError(c *client, o trackingOptions) reply {
	switch {
	case !o.bcast && len(o.prefixes) > 0:
		return errReply("ERR PREFIX option requires BCAST mode to be enabled")
	case c.trk.on && c.trk.bcast != o.bcast:
		return errReply(errBcastSwitch)
	case o.bcast && (o.optin || o.optout):
		return errReply("ERR OPTIN and OPTOUT are not compatible with BCAST")
	case o.optin && o.optout:
		return errReply("ERR You can't specify both OPTIN mode and OPTOUT mode")
	case (o.optin && c.trk.optout) || (o.optout && c.trk.optin):
		return errReply(errOptSwitch)
	}
	return okReply
}

// prefixCollision is checkPrefixCollisionsOrReply: the overlap error, and
// whether it stops the command (it does not when two given prefixes
// overlap and the first of them is not the first given).
func prefixCollision(c *client, prefixes []string) (reply, bool) {
	overlaps := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range prefixes {
		for _, q := range c.trk.prefixes {
			if overlaps(q, p) {
				return errorf("ERR Prefix '%s' overlaps with an existing prefix '%s'. "+
					"Prefixes for a single client must not overlap.", p, q), true
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlaps(p, q) {
				return errorf("ERR Prefix '%s' overlaps with another provided prefix '%s'. "+
					"Prefixes for a single client must not overlap.", p, q), i == 0
			}
		}
	}
	return okReply, false
}

func (e *Engine) enableTracking(c *client, o trackingOptions) {
	if !c.trk.on {
		e.trackers++
	}
	t := &c.trk
	t.on, t.broken, t.bcast = true, false, o.bcast
	t.optin, t.optout, t.noloop, t.redirect = o.optin, o.optout, o.noloop, o.redirect
	if !o.bcast {
		return
	}
	if len(o.prefixes) == 0 {
		e.listenPrefix(c, "")
	}
	for _, p := range o.prefixes {
		e.listenPrefix(c, p)
	}
}

func (e *Engine) listenPrefix(c *client, p string) {
	if e.bcast == nil {
		e.bcast = map[string]*bcastState{}
	}
	bs := e.bcast[p]
	if bs == nil {
		bs = &bcastState{clients: map[int64]bool{}}
		e.bcast[p] = bs
	}
	if bs.clients[c.id] {
		return
	}
	bs.clients[c.id] = true
	i, _ := slices.BinarySearch(c.trk.prefixes, p)
	c.trk.prefixes = slices.Insert(c.trk.prefixes, i, p)
}

// disableTracking is CLIENT TRACKING OFF (and a closed connection). The
// keys the client read stay in the table, as on real servers: turning
// tracking back on revives them.
func (e *Engine) disableTracking(c *client) {
	for _, p := range c.trk.prefixes {
		if bs := e.bcast[p]; bs != nil {
			delete(bs.clients, c.id)
			if len(bs.clients) == 0 {
				delete(e.bcast, p)
			}
		}
	}
	if c.trk.on {
		e.trackers--
	}
	c.trk = tracking{redirect: c.trk.redirect}
}

// clientCaching is CLIENT CACHING YES|NO.
func clientCaching(c *client, args []string) reply {
	if !c.trk.on {
		return errReply(errCachingOff)
	}
	switch strings.ToLower(args[2]) {
	case "yes":
		if !c.trk.optin {
			return errReply("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
		}
	case "no":
		if !c.trk.optout {
			return errReply("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
		}
	default:
		return syntaxError
	}
	c.trk.caching = true
	return okReply
}

// clientTrackingInfo is CLIENT TRACKINGINFO.
func clientTrackingInfo(c *client) reply {
	t := c.trk
	flags := []reply{bulk("off")}
	redirect := int64(-1)
	if t.on {
		flags[0], redirect = bulk("on"), t.redirect
	}
	for _, f := range []struct {
		set  bool
		name string
	}{{t.bcast, "bcast"}, {t.optin, "optin"}, {t.optin && t.caching, "caching-yes"}, {t.optout, "optout"},
		{t.optout && t.caching, "caching-no"}, {t.noloop, "noloop"}, {t.broken, "broken_redirect"}} {
		if f.set {
			flags = append(flags, bulk(f.name))
		}
	}
	prefixes := make([]reply, len(t.prefixes))
	for i, p := range t.prefixes {
		prefixes[i] = bulk(p)
	}
	return mapReply(bulk("flags"), reply{kind: kindSet, elems: flags}, bulk("redirect"), integer(redirect),
		bulk("prefixes"), array(prefixes...))
}

// clientGetRedir is CLIENT GETREDIR.
func clientGetRedir(c *client) reply {
	if !c.trk.on {
		return integer(-1)
	}
	return integer(c.trk.redirect)
}
