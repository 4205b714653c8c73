// Package admin is the platform admin console (/admin/...): the queues
// to work through (verifications, bank transfers, refunds, flagged
// payment events, incidents, bank payouts), users and organisations to
// suspend, payouts, the mail outbox, River's jobs and the audit log.
package admin

import "suanli/handlers"

// Handler serves the console. It embeds the shared handlers.Handler, so
// the console reaches the same dependencies (DB, Accounts, Wallet,
// Payouts) as every other page; web builds it and mounts its methods.
type Handler struct{ *handlers.Handler }
