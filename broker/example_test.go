package broker_test

import (
	"context"
	"fmt"

	"github.com/git-corral/git-corral/broker"
)

// Example shows how a box's broker is started in process: listen on loopback, open the box's
// egress log, create the broker from the trusted allow-list and a fresh secret, and serve until
// the box stops. `git corral broker serve` does the same in its own process.
func Example() {
	ctx, stop := context.WithCancel(context.Background())
	ln, err := broker.Listen(ctx, "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	b, err := broker.New(broker.Config{
		Box:    "demo-abc123",
		Allow:  []string{"proxy.golang.org", "*.githubusercontent.com", "10.0.0.5:5432"},
		Secret: []byte(broker.NewSecret()),
		// Log: broker.OpenLog(ctx, home.EgressLog(box), 0) in real use.
	})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, ln) }()
	// The guest gets http_proxy=http://box:SECRET@192.168.5.2:PORT (Lima's gateway is host
	// loopback).
	stop()
	fmt.Println(<-done)
	// Output: <nil>
}
