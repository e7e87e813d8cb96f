package dst

// DefaultCore builds the production handle core. It is replaced by the
// statemachine adapter once statemachine/ provides its Step API.
var DefaultCore CoreFactory = func(HandleInfo) Core {
	panic("dst: no production core wired (statemachine/ adapter missing)")
}
