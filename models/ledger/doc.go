// Package ledger holds the queries of money: double-entry postings and
// balances, the wallet ledger and its checks, the meter's claims on
// running rentals, spending limits and refunds, provider payables and
// payouts. Records are in package models; use cases open the transaction
// and pass it in.
package ledger
