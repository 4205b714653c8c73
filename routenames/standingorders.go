package routenames

// Standing orders (「有卡就租」): the page, its forms and the console's
// notices, and the API.
const (
	// StandingOrders is GET /standing-orders.
	StandingOrders = "standing_orders"
	// StandingOrdersCreate is POST /standing-orders.
	StandingOrdersCreate = "standing_orders.create"
	// StandingOrdersCancel is POST /standing-orders/:id/cancel.
	StandingOrdersCancel = "standing_orders.cancel"
	// StandingOrdersNotices is GET /standing-orders/notices: the console's
	// fragment.
	StandingOrdersNotices = "standing_orders.notices"
	// APIStandingOrdersList is GET /api/v1/standing-orders.
	APIStandingOrdersList = "api.standing_orders.list"
	// APIStandingOrdersCreate is POST /api/v1/standing-orders.
	APIStandingOrdersCreate = "api.standing_orders.create"
	// APIStandingOrdersDelete is DELETE /api/v1/standing-orders/:id.
	APIStandingOrdersDelete = "api.standing_orders.delete"
)
