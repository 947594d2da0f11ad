package tcp

// Polled says that this build polls plain TCP links (transport.Poller).
const Polled = polled
