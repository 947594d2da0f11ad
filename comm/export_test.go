package comm

// ProbeDelay exports probeDelay to the external tests.
const ProbeDelay = probeDelay
