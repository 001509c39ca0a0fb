package boomtool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/boomerangd/boomerang/client"
)

var (
	errNotLoggedIn  = errors.New("not logged in: run \"boomtool login --client ID\", or set " + EnvClient + " and " + EnvPassword)
	errSavedExpired = errors.New("the saved session has expired: run \"boomtool login\" again")
)

// describe turns an error into one clear sentence, with a hint where one
// helps.
func describe(err error, a *app) string {
	var ce *client.Error
	var opErr *net.OpError
	var netErr net.Error
	switch {
	case errors.Is(err, client.ErrSessionExpired):
		return "the session has expired: run \"boomtool login\" again, or pass --client and --password"
	case errors.As(err, &ce) && ce.Status == statusInvalid:
		switch {
		case ce.Field != "" && strings.Contains(ce.Message, ce.Field):
			return clean(ce.Message)
		case ce.Field != "":
			return clean(fmt.Sprintf("invalid %s: %s", ce.Field, ce.Message))
		}
		return withStatus(ce)
	case errors.As(err, &ce) && ce.Status == statusUnauthorized:
		return withStatus(ce) + hintAuth(a)
	case errors.As(err, &ce):
		return withStatus(ce)
	case errors.Is(err, client.ErrConnectionLost):
		return clean(err.Error()) + " (check the server's log)"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("the server did not answer within %v (--timeout): %v", a.timeout, err)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Sprintf("%v\nIs the server running? Use --addr or %s to point at it.", err, EnvAddr)
	}
	return clean(err.Error())
}

// withStatus prefixes the server's message with its status in words,
// unless the message says it already: "task 9: not found" stays as it is.
func withStatus(e *client.Error) string {
	words := statusWords(e.Status)
	msg := clean(e.Message)
	if msg == "" {
		return words
	}
	if strings.Contains(strings.ToLower(msg), words) {
		return msg
	}
	return words + ": " + msg
}

func hintAuth(a *app) string {
	if a.saved != nil {
		return " (using the session saved for client " + a.saved.Client + "; run \"boomtool login\" to replace it)"
	}
	return ""
}
