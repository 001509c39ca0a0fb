// Command receiver is the smallest useful webhook receiver for Boomerang:
// it listens for deliveries, checks each one's signature with the
// client's signing secret, and prints it.
//
//	go run ./examples/receiver -secret quickstart-secret
//
// The secret is the one the client was registered with: -secret takes it
// as text (boomtool client register --signing-secret TEXT), -secret-hex as
// the hex string boomtool prints when it generates one.
package main

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	boomerangv1 "github.com/boomerangd/boomerang/api/boomerang/v1"
	"github.com/boomerangd/boomerang/client"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on; port 0 picks a free one")
	path := flag.String("path", "/hook", "URL path of the webhook")
	text := flag.String("secret", "", "the client's signing secret, as text")
	hexSecret := flag.String("secret-hex", "", "the client's signing secret, hex encoded")
	flag.Parse()

	secret := []byte(*text)
	if *hexSecret != "" {
		b, err := hex.DecodeString(*hexSecret)
		if err != nil {
			return fmt.Errorf("-secret-hex: %w", err)
		}
		secret = b
	}
	if len(secret) == 0 {
		return errors.New("a signing secret is required: -secret or -secret-hex")
	}
	r, err := client.NewHTTPReceiver(client.HTTPReceiverConfig{
		Secret:  secret,
		Handler: printDelivery,
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(*path, r)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("receiving on http://%s%s\n", ln.Addr(), *path)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// printDelivery acknowledges every delivery after printing it. Returning an error
// instead makes Boomerang retry the delivery.
func printDelivery(_ context.Context, d *boomerangv1.Delivery) error {
	group := d.GetGroup()
	if group == "" {
		group = "-"
	}
	fmt.Printf("task %d attempt %d group %s term %d due %s: %q\n", d.GetTaskId(), d.GetAttempt(), group, d.GetTerm(),
		time.UnixMilli(d.GetFireAtMs()).UTC().Format(time.RFC3339), d.GetPayload())
	return nil
}
