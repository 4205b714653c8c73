-- +goose Up
-- Alerts before limits bite (issue 18).
--
-- spend_alert_settings: an organisation's alert thresholds, set by its
-- admins (no row: the defaults). limit_pcts are the percentages of each
-- spending limit (monthly budget, cap per member, cap per hour) at which
-- the alert is mailed, ascending and comma-separated ('': none);
-- low_balance_fen mails when the wallet's balance is below it, and
-- runway_hours when the balance lasts fewer hours at the current rate
-- (NULL: off).
CREATE TABLE spend_alert_settings (
    org_id          INTEGER PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
    limit_pcts      TEXT NOT NULL DEFAULT '50,80,100',
    low_balance_fen INTEGER CHECK (low_balance_fen > 0),
    runway_hours    INTEGER CHECK (runway_hours BETWEEN 1 AND 720),
    updated_by      INTEGER REFERENCES users(id),
    updated_at      DATETIME NOT NULL
);

-- spend_alerts: the alerts mailed, one row per threshold crossed, so
-- that a second pass mails nothing again. kind budget, member_cap or
-- hourly_cap: threshold is a percentage of limit_fen (the limit when it
-- was crossed: a changed limit arms its thresholds again), period the
-- month (YYYY-MM) or, for the cap per hour, the day (YYYY-MM-DD) in
-- Asia/Shanghai it counts for, user_id the member for member_cap (else
-- 0). kind low_balance (threshold in fen) or runway (in hours): period
-- is '' and the row is deleted when the alert is armed again. used_fen
-- is the limit's use, or the balance, when it was mailed.
CREATE TABLE spend_alerts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id     INTEGER NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
    kind       TEXT NOT NULL CHECK (kind IN ('budget', 'member_cap', 'hourly_cap', 'low_balance', 'runway')),
    user_id    INTEGER NOT NULL DEFAULT 0,
    period     TEXT NOT NULL,
    threshold  INTEGER NOT NULL,
    limit_fen  INTEGER NOT NULL DEFAULT 0,
    used_fen   INTEGER NOT NULL,
    created_at DATETIME NOT NULL
);
CREATE UNIQUE INDEX spend_alerts_once ON spend_alerts (org_id, kind, user_id, period, threshold, limit_fen);

-- +goose Down
DROP TABLE spend_alerts;
DROP TABLE spend_alert_settings;
