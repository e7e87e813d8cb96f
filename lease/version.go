package lease

// Version is respire-go's version, as the newest heading of CHANGELOG.md
// names it (without its "v"). The instrumentation scope of the metrics and
// spans (WithMeterProvider, WithTracerProvider) carries it, so that a
// dashboard can tell which release recorded what.
const Version = "0.1.0"
