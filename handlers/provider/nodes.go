package provider

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"suanli/handlers"
	"suanli/models"
	"suanli/providers"
	"suanli/routenames"
	"suanli/views"
	"suanli/views/providerpages"
)

func (h *Handler) nodesVM(c echo.Context, acc *providers.Account, shell providerpages.ProviderShell, f views.Form) (providerpages.ProviderNodesVM, error) {
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	lang := handlers.Lang(c)
	vm := providerpages.ProviderNodesVM{Shell: shell, Form: f, Now: h.DB.Now()}
	nodes, err := h.Providers.Nodes(ctx, u, acc.Provider.ID)
	if err != nil {
		return vm, err
	}
	vm.Nodes = nodeRowsVM(nodes, lang)
	dcs, err := h.Providers.Datacenters(ctx, u, acc.Provider.ID)
	// New nodes go into the provider's own datacentres only.
	for _, d := range dcs {
		if !d.Shared {
			vm.Datacenters = append(vm.Datacenters, datacenterVM(d, lang))
		}
	}
	return vm, err
}

// ProviderNodes is GET /provider/{pid}/nodes: the nodes, live, and the
// "add node" form.
func (h *Handler) ProviderNodes(c echo.Context) error {
	acc, shell, err := h.providerAccount(c, "nodes")
	if err != nil {
		return err
	}
	vm, err := h.nodesVM(c, acc, shell, handlers.ReadForm(c))
	if err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, providerpages.ProviderNodesPage(handlers.ViewCtx(c), vm))
}

// ProviderNodesLive is GET /provider/{pid}/nodes/live: the node list alone,
// which the page polls every 5 s.
func (h *Handler) ProviderNodesLive(c echo.Context) error {
	acc, shell, err := h.providerAccount(c, "nodes")
	if err != nil {
		return err
	}
	vm, err := h.nodesVM(c, acc, shell, handlers.ReadForm(c))
	if err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, providerpages.ProviderNodesLive(handlers.ViewCtx(c), vm))
}

// ProviderNodeCreate is POST /provider/{pid}/nodes: the node is made and
// its page shown with the one-time token and the install commands (201;
// the token is never shown again).
func (h *Handler) ProviderNodeCreate(c echo.Context) error {
	acc, shell, err := h.providerWriter(c, "nodes")
	if err != nil {
		return err
	}
	ctx, u := c.Request().Context(), handlers.CurrentUser(c)
	f := handlers.ReadForm(c, "datacenter_id", "name")
	dcID, perr := strconv.ParseInt(strings.TrimSpace(f.Get("datacenter_id")), 10, 64)
	if perr != nil && f.Get("datacenter_id") != "" {
		dcID = -1 // not a datacentre of this provider: the market says so
	}
	n, token, err := h.Providers.AddNode(ctx, u, acc.Provider.ID, providers.NodeInput{DatacenterID: dcID, Name: f.Get("name")})
	if err == nil {
		return h.renderNode(c, shell, n.ID, token, "", http.StatusCreated)
	}
	status, err := providerFormError(c, &f, err, nil)
	if err != nil {
		return err
	}
	vm, err := h.nodesVM(c, acc, shell, f)
	if err != nil {
		return err
	}
	return handlers.Render(c, status, providerpages.ProviderNodesPage(handlers.ViewCtx(c), vm))
}

// nodeVM loads the node :id of the provider for its page, with the
// node's record (its install commands are made from it).
func (h *Handler) nodeVM(c echo.Context, shell providerpages.ProviderShell, nodeID int64) (providerpages.ProviderNodeVM, *providers.NodeDetail, error) {
	d, err := h.Providers.Node(c.Request().Context(), handlers.CurrentUser(c), shell.ProviderID, nodeID)
	if err != nil {
		return providerpages.ProviderNodeVM{}, nil, err
	}
	vm := providerpages.ProviderNodeVM{Shell: shell, Now: h.DB.Now()}
	nodeDetailVM(&vm, d, handlers.Lang(c))
	return vm, d, nil
}

// renderNode renders the node's page, with its new token and the install
// commands when token is not empty, and a refused change's reason.
func (h *Handler) renderNode(c echo.Context, shell providerpages.ProviderShell, nodeID int64, token, refusal string, status int) error {
	vm, d, err := h.nodeVM(c, shell, nodeID)
	if err != nil {
		return err
	}
	if token != "" {
		ic := h.Providers.InstallCommands(&d.Node, token)
		vm.Token, vm.Install = token, providerpages.InstallCommands{Shell: ic.Shell, Systemd: ic.Systemd, Docker: ic.Docker}
	}
	vm.Refusal = refusal
	return handlers.Render(c, status, providerpages.ProviderNodePage(handlers.ViewCtx(c), vm))
}

// ProviderNode is GET /provider/{pid}/nodes/{id}.
func (h *Handler) ProviderNode(c echo.Context) error {
	_, shell, err := h.providerAccount(c, "nodes")
	if err != nil {
		return err
	}
	id, err := handlers.ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	return h.renderNode(c, shell, id, "", "", http.StatusOK)
}

// ProviderNodeLive is GET /provider/{pid}/nodes/{id}/live: the node's
// status and GPUs alone, which its page polls every 5 s.
func (h *Handler) ProviderNodeLive(c echo.Context) error {
	_, shell, err := h.providerAccount(c, "nodes")
	if err != nil {
		return err
	}
	id, err := handlers.ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	vm, _, err := h.nodeVM(c, shell, id)
	if err != nil {
		return err
	}
	return handlers.Render(c, http.StatusOK, providerpages.ProviderNodeLive(handlers.ViewCtx(c), vm))
}

// nodeStatusFlash is the message after a node status change.
var nodeStatusFlash = map[models.NodeStatus]string{
	models.NodeDraining: "provider.node.drained",
	models.NodeActive:   "provider.node.resumed",
	models.NodeRemoved:  "provider.node.removed",
}

// ProviderNodeStatus is POST /provider/{pid}/nodes/{id}/status: drain,
// resume or remove. A refusal (a node with live rentals cannot be
// removed) is shown beside the buttons, 409; nothing changes.
func (h *Handler) ProviderNodeStatus(c echo.Context) error {
	_, shell, err := h.providerWriter(c, "nodes")
	if err != nil {
		return err
	}
	id, err := handlers.ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	status := c.FormValue("status")
	err = h.Providers.SetNodeStatus(c.Request().Context(), handlers.CurrentUser(c), shell.ProviderID, id, status)
	if err == nil {
		key := nodeStatusFlash[models.NodeStatus(status)]
		if key == "" {
			key = "provider.saved"
		}
		h.Flash(c, key)
		return handlers.SeeOther(c, c.Echo().Reverse(routenames.ProviderNodesShow, shell.PID(), strconv.FormatInt(id, 10)))
	}
	f := handlers.ReadForm(c)
	code, err := providerFormError(c, &f, err, nil)
	if err != nil {
		return err
	}
	return h.renderNode(c, shell, id, "", f.Err("_form"), code)
}

// ProviderNodeToken is POST /provider/{pid}/nodes/{id}/token: a new
// one-time registration token (the old one stops working), shown once.
func (h *Handler) ProviderNodeToken(c echo.Context) error {
	_, shell, err := h.providerWriter(c, "nodes")
	if err != nil {
		return err
	}
	id, err := handlers.ParseID(c, "id", "node")
	if err != nil {
		return err
	}
	token, err := h.Providers.RenewNodeToken(c.Request().Context(), handlers.CurrentUser(c), shell.ProviderID, id)
	if err != nil {
		f := handlers.ReadForm(c)
		code, err := providerFormError(c, &f, err, nil)
		if err != nil {
			return err
		}
		return h.renderNode(c, shell, id, "", f.Err("_form"), code)
	}
	return h.renderNode(c, shell, id, token, "", http.StatusCreated)
}
