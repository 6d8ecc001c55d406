package embedded

import (
	"errors"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start starts a server with JetStream on a random port of 127.0.0.1,
// keeping its store in dir, and waits until it accepts connections. Its
// ClientURL() is the address to connect to; Shutdown stops it.
func Start(dir string) (*server.Server, error) {
	opts := &server.Options{
		Host:      "127.0.0.1",
		Port:      server.RANDOM_PORT,
		JetStream: true,
		StoreDir:  dir,
		NoLog:     true,
		NoSigs:    true,
		// Room for the JetStream store on small machines.
		JetStreamMaxMemory: 256 << 20,
		JetStreamMaxStore:  1 << 30,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("embedded: the NATS server did not start within 10 s")
	}
	return s, nil
}

// StartTemp is Start with its store in a new temporary directory (named
// from pattern as os.MkdirTemp does). stop shuts the server down and then
// removes the directory.
func StartTemp(pattern string) (srv *server.Server, stop func(), err error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, nil, err
	}
	srv, err = Start(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return srv, func() {
		srv.Shutdown()
		os.RemoveAll(dir)
	}, nil
}
