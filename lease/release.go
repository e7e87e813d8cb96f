package lease

import (
	"context"
	"errors"

	sm "github.com/respire-go/respire/statemachine"
)

// callerError replaces the core's "caller stopped waiting" by ctx's cause.
func callerError(ctx context.Context, err error) error {
	if errors.Is(err, sm.ErrCallerCancelled) && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}
