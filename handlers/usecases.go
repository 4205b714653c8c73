package handlers

import (
	"suanli/idlestop"
	"suanli/workspace"
)

// IdleStop is the idle-stop use case on the handler's services.
func (h *Handler) IdleStop() *idlestop.Service {
	return &idlestop.Service{Rentals: h.Rentals, Accounts: h.Accounts}
}

// Workspace is the workspace use case (who may work in which rental's
// container, share links, the apps origins' grants) on the handler's DB.
func (h *Handler) Workspace() *workspace.Service { return &workspace.Service{DB: h.DB} }
