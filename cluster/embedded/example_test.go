package embedded_test

import (
	"fmt"
	"time"

	"github.com/flatkit/flatkit/cluster/embedded"
	"github.com/nats-io/nats.go"
)

// A test or an example starts a server of its own on a free port, connects
// to it and stops it when done.
func ExampleStartTemp() {
	srv, stop, err := embedded.StartTemp("example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("greet")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := nc.Publish("greet", []byte("hello")); err != nil {
		fmt.Println(err)
		return
	}
	msg, err := sub.NextMsg(time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(msg.Data), "JetStream:", srv.JetStreamEnabled())
	// Output:
	// hello JetStream: true
}
