// Package embedded starts a NATS server with JetStream inside the process:
// for tests, examples and benchmarks that need no external server.
package embedded
