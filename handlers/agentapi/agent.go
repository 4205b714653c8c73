// Package agentapi holds the handlers of the node agents' protocol:
// heartbeats, the task long-poll, task results and progress. Agents
// authenticate with their node credential, not a session.
package agentapi

import (
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"suanli/agent"
	"suanli/apperr"
	"suanli/fleet"
	"suanli/handlers"
	"suanli/models"
	"suanli/tunnel"
)

// Handler serves the agent protocol.
type Handler struct{ *handlers.Handler }

// maxPollWait bounds an agent's long-poll below the server's write timeout.
const maxPollWait = 30 * time.Second

func bearer(c echo.Context) string {
	t, _ := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
	return strings.TrimSpace(t)
}

// agentNode authenticates a node agent by its credential.
func (h *Handler) agentNode(c echo.Context) (*models.Node, error) {
	return h.Rentals.Fleet().NodeByCredential(c.Request().Context(), bearer(c))
}

// AgentHeartbeat is POST /agent/v1/heartbeat.
func (h *Handler) AgentHeartbeat(c echo.Context) error {
	if bearer(c) == "" {
		return fleet.ErrBadNodeToken
	}
	var hb agent.Heartbeat
	dec := handlers.JSONDecoderLimit(c, agent.MaxHeartbeatBytes)
	if err := dec.Decode(&hb); err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "want a JSON heartbeat"}
	}
	reply, err := h.Rentals.Fleet().Heartbeat(c.Request().Context(), bearer(c), hb)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, reply)
}

// AgentTasks is GET /agent/v1/tasks?wait=SECONDS, the agent's long-poll.
func (h *Handler) AgentTasks(c echo.Context) error {
	n, err := h.agentNode(c)
	if err != nil {
		return err
	}
	wait := 25 * time.Second
	if s := c.QueryParam("wait"); s != "" {
		secs, err := strconv.Atoi(s)
		if err != nil || secs < 0 {
			return &apperr.Error{Code: apperr.EINVALID, Field: "wait", Message: "wait must be a number of seconds"}
		}
		wait = min(time.Duration(secs)*time.Second, maxPollWait)
	}
	ts, err := h.Rentals.Fleet().NextTasks(c.Request().Context(), n.ID, wait)
	if err != nil {
		return err
	}
	if ts == nil {
		ts = []agent.Task{}
	}
	return c.JSON(http.StatusOK, agent.Tasks{Tasks: ts})
}

// AgentTaskResult is POST /agent/v1/tasks/{id}/result.
func (h *Handler) AgentTaskResult(c echo.Context) error {
	n, err := h.agentNode(c)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return apperr.NotFound("task")
	}
	var res agent.Result
	if err := handlers.JSONDecoderLimit(c, agent.MaxResultBytes).Decode(&res); err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "want a JSON task result"}
	}
	if err := h.Rentals.TaskResult(c.Request().Context(), n.ID, id, res); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"recorded": true})
}

// AgentTaskProgress is POST /agent/v1/tasks/{id}/progress: how far a
// running task is (an image pull), shown on the rental page.
func (h *Handler) AgentTaskProgress(c echo.Context) error {
	n, err := h.agentNode(c)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return apperr.NotFound("task")
	}
	var p agent.Progress
	if err := handlers.JSONDecoderLimit(c, 4<<10).Decode(&p); err != nil {
		return &apperr.Error{Code: apperr.EINVALID, Field: "body", Message: "want a JSON task progress"}
	}
	if err := h.Rentals.TaskProgress(c.Request().Context(), n.ID, id, p); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// AgentTunnel is GET /agent/v1/tunnel: the agent's tunnel, a WebSocket
// carrying yamux streams, held until it drops or the server stops. The
// browser proxy (handlers/browser) opens its streams.
func (h *Handler) AgentTunnel(c echo.Context) error {
	if h.Tunnels == nil {
		return apperr.NotFound("tunnel")
	}
	n, err := h.agentNode(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	sess, err := tunnel.Accept(ctx, c.Response(), c.Request())
	if err != nil {
		// The WebSocket handshake answered the agent already.
		slog.Warn("tunnel: refused", "node_id", n.ID, "err", err)
		return nil
	}
	slog.Info("tunnel: agent connected", "node_id", n.ID)
	h.Tunnels.Serve(ctx, n.ID, sess)
	slog.Info("tunnel: agent disconnected", "node_id", n.ID)
	return nil
}
