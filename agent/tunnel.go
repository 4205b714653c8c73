package agent

import (
	"context"
	"errors"
	"net/http"
	"time"

	"suanli/tunnel"
)

// tunnelLoop keeps the node's tunnel to the server open, once the agent
// is registered: it dials, serves the server's streams with h until the
// connection drops, and dials again with backoff.
func (a *Agent) tunnelLoop(ctx context.Context, h http.Handler) {
	select {
	case <-a.registered:
	case <-ctx.Done():
		return
	}
	// The tunnel outlives any request timeout; Dial bounds the handshake.
	hc := *a.client
	hc.Timeout = 0
	var bo backoff
	for {
		for a.silent() {
			if !sleep(ctx, a.idleWait()) {
				return
			}
		}
		sess, err := tunnel.Dial(ctx, &hc, a.server, a.bearer())
		if ctx.Err() != nil {
			if sess != nil {
				_ = sess.Close()
			}
			return
		}
		if err != nil {
			var re *tunnel.RefusedError
			wait := bo.next()
			if errors.As(err, &re) && re.Code == http.StatusNotFound {
				// A server without tunnels: ask again now and then only.
				wait = max(wait, time.Minute)
			}
			a.log.Warn("tunnel: cannot connect; retrying", "err", err, "retry_in", wait)
			if !sleep(ctx, wait) {
				return
			}
			continue
		}
		a.log.Info("tunnel: connected")
		start := time.Now()
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil}
		// A silent agent (the injected fault) drops its tunnel too.
		stop := make(chan struct{})
		go func() {
			t := time.NewTicker(a.idleWait())
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					_ = sess.Close()
					return
				case <-sess.CloseChan():
					return
				case <-stop:
					return
				case <-t.C:
					if a.silent() {
						_ = sess.Close()
						return
					}
				}
			}
		}()
		_ = srv.Serve(sess)
		close(stop)
		_ = sess.Close()
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			bo.reset()
		}
		wait := bo.next()
		a.log.Warn("tunnel: connection lost; connecting again", "retry_in", wait)
		if !sleep(ctx, wait) {
			return
		}
	}
}
