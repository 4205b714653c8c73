-- +goose Up
-- Idle stop (issue 16): "stop when GPU utilisation stays below X % for N
-- minutes". A rental's own setting (0 and 0: off), checked at 1–100 %
-- and 5–1440 minutes (the window cannot outlast the 24 hours of
-- telemetry the samples keep; see migration 00017).
ALTER TABLE rentals ADD COLUMN idle_stop_below_pct INTEGER NOT NULL DEFAULT 0 CHECK (idle_stop_below_pct BETWEEN 0 AND 100);
ALTER TABLE rentals ADD COLUMN idle_stop_minutes INTEGER NOT NULL DEFAULT 0 CHECK (idle_stop_minutes = 0 OR idle_stop_minutes BETWEEN 5 AND 1440);
-- When the renter was last warned that the rental will stop: once per
-- idle streak (a warning older than the streak's start is another
-- streak's); cleared when the setting changes.
ALTER TABLE rentals ADD COLUMN idle_warned_at DATETIME;
-- A lab's policy for its members' rentals: they stop at the latest when
-- every GPU stays below idle_policy_below_pct % for idle_policy_minutes
-- (0 and 0: no policy). A member's own setting may only be stricter.
ALTER TABLE orgs ADD COLUMN idle_policy_below_pct INTEGER NOT NULL DEFAULT 0 CHECK (idle_policy_below_pct BETWEEN 0 AND 100);
ALTER TABLE orgs ADD COLUMN idle_policy_minutes INTEGER NOT NULL DEFAULT 0 CHECK (idle_policy_minutes = 0 OR idle_policy_minutes BETWEEN 5 AND 1440);

-- +goose Down
ALTER TABLE orgs DROP COLUMN idle_policy_minutes;
ALTER TABLE orgs DROP COLUMN idle_policy_below_pct;
ALTER TABLE rentals DROP COLUMN idle_warned_at;
ALTER TABLE rentals DROP COLUMN idle_stop_minutes;
ALTER TABLE rentals DROP COLUMN idle_stop_below_pct;
