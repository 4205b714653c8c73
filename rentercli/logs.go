package rentercli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"suanli/apiclient"
)

// runLogs prints a running rental's container output (GET
// /api/v1/rentals/{id}/logs): the last --tail lines, and with -f each
// new line as it is printed, until Ctrl-C or the rental stops. Each API
// line starts with its time; --timestamps keeps it.
func runLogs(a *app, args []string) error {
	fs := a.flags()
	org := fs.Int("org", 0, a.T("cli.flag.org_lookup"))
	follow := fs.Bool("f", false, a.T("cli.flag.follow"))
	fs.BoolVar(follow, "follow", false, a.T("cli.flag.follow"))
	tail := fs.Int("tail", 200, a.T("cli.flag.tail"))
	stamps := fs.Bool("timestamps", false, a.T("cli.flag.timestamps"))
	pos, _, err := a.parse(fs, args)
	if err != nil {
		return err
	}
	if *tail < 1 || *tail > 10000 {
		return a.usageErr("cli.err.tail")
	}
	c, _, err := a.login()
	if err != nil {
		return err
	}
	id, err := a.rentalArg(c, pos, *org)
	if err != nil {
		return err
	}
	if !*follow {
		res, err := c.GetRentalLogsWithResponse(a.ctx, apiclient.Id(id), &apiclient.GetRentalLogsParams{Tail: tail})
		if err := a.answer(err, res, http.StatusOK); err != nil {
			return err
		}
		for _, line := range strings.SplitAfter(string(res.Body), "\n") {
			if line != "" {
				fmt.Fprint(a.stdout, logLine(line, *stamps))
			}
		}
		return nil
	}
	return a.followLogs(c, id, *tail, *stamps)
}

// followLogs reads the server-sent events of …/logs?follow=1 and prints
// each line. When the stream ends (the server checks access every 30 s
// and may close it; a proxy may cut it) it connects again with
// Last-Event-ID, so that no line is printed twice or lost; an answer
// other than 200 then (the rental stopped: 409) ends the command.
func (a *app) followLogs(c *apiclient.ClientWithResponses, id, tail int, stamps bool) error {
	p := &apiclient.GetRentalLogsParams{Tail: &tail, Follow: ptr(apiclient.GetRentalLogsParamsFollow("1"))}
	for first := true; ; first = false {
		res, err := c.GetRentalLogs(a.ctx, apiclient.Id(id), p)
		if err != nil {
			if a.ctx.Err() != nil {
				return nil // Ctrl-C: the usual way to stop following
			}
			return a.errorf(ExitError, "cli.err.unreachable", err)
		}
		if res.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
			res.Body.Close()
			if first {
				return decodeAPIError(res.StatusCode, body)
			}
			fmt.Fprintln(a.stderr, a.T("cli.logs.ended", id, decodeAPIError(res.StatusCode, body).Error()))
			return nil
		}
		last, err := a.printEvents(res.Body, stamps)
		res.Body.Close()
		if a.ctx.Err() != nil {
			return nil
		}
		if last != "" {
			p.LastEventID = &last
		}
		_ = err // a cut stream: connect again below
		if err := sleepCtx(a.ctx, time.Second); err != nil {
			return nil
		}
	}
}

// printEvents prints the data of each server-sent event (id: the line's
// time, data: the line; several data fields are lines of one event) and
// returns the last id seen.
func (a *app) printEvents(r io.Reader, stamps bool) (lastID string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var id string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				text := strings.Join(data, "\n")
				if stamps && id != "" {
					text = id + " " + text
				}
				fmt.Fprintln(a.stdout, text)
			}
			if id != "" {
				lastID = id
			}
			id, data = "", nil
		case strings.HasPrefix(line, "id:"):
			id = strings.TrimPrefix(strings.TrimPrefix(line, "id:"), " ")
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
		// Comments (":…", keep-alives) and other fields are skipped.
	}
	err = sc.Err()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return lastID, err
}

// logLine is one line of the plain answer ("TIME line"), without its
// time unless stamps.
func logLine(line string, stamps bool) string {
	if stamps {
		return line
	}
	if t, rest, ok := strings.Cut(line, " "); ok {
		if _, err := time.Parse(time.RFC3339Nano, t); err == nil {
			return rest
		}
	}
	return line
}
