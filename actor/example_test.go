package actor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/respire-go/respire/actor"
)

// handleMessage is everything that can happen to one lock handle.
type handleMessage struct {
	keepAliveTick uint64 // alarm generation; 0 when this is not a tick
	extend        bool
	reply         actor.Reply[string]
}

// handle is the state only its handler touches: no locks needed.
type handle struct {
	mailbox   *actor.Mailbox[handleMessage]
	keepAlive *actor.Alarm[handleMessage]
	renewals  int
}

func (h *handle) handle(m handleMessage) {
	switch {
	case m.keepAliveTick != 0:
		if !h.keepAlive.Current(m.keepAliveTick) {
			return // a tick from before the last Arm/Stop
		}
		h.renewals++ // here: send the renewal asynchronously, Deliver its completion
		h.keepAlive.Arm(10 * time.Second)
	case m.extend:
		h.keepAlive.Arm(10 * time.Second)
		m.reply.Send(fmt.Sprintf("extended after %d renewals", h.renewals))
	}
}

func Example() {
	var clock actor.ManualClock
	h := &handle{}
	h.mailbox = actor.NewMailbox(16, h.handle)
	h.keepAlive = actor.NewAlarm(&clock, h.mailbox, func(g uint64) handleMessage {
		return handleMessage{keepAliveTick: g}
	})
	h.keepAlive.Arm(10 * time.Second)

	extend := func(r actor.Reply[string]) handleMessage {
		return handleMessage{extend: true, reply: r}
	}
	for range 2 {
		// Advance queues the due tick before Ask queues its request, and the
		// mailbox is FIFO, so the answer already counts the renewal.
		clock.Advance(10 * time.Second)
		answer, err := actor.Ask(context.Background(), h.mailbox, extend)
		fmt.Println(answer, err)
	}

	h.keepAlive.Stop()
	h.mailbox.Stop()
	_, err := actor.Ask(context.Background(), h.mailbox, extend)
	fmt.Println(err)
	// Output:
	// extended after 1 renewals <nil>
	// extended after 2 renewals <nil>
	// actor: mailbox stopped
}
