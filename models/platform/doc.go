// Package platform holds the queries that run the platform itself: the
// admin console's lists and locks, the Prometheus figures, the mail
// outbox relay, sign-up throttles and the session store.
package platform
