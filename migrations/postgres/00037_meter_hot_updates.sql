-- +goose Up
-- The meter (issue 20) updates every running on-demand rental once a
-- minute (billed_until, billed_fen, carry_num). PostgreSQL can make such
-- an update HOT, a new row version on the same page with no new index
-- entries, only when no indexed column changes, and a column named in a
-- partial index's predicate counts: rentals_unearned named billed_fen,
-- so every claim wrote a new entry into each of the table's indexes.
-- The predicate now reads a generated column that holds its value:
-- for an on-demand rental it stays true from the first charge on, so
-- the meter's updates leave it unchanged. Fillfactor leaves a page room
-- for those new versions (it applies to pages written from now on).
ALTER TABLE rentals ADD COLUMN unearned BOOLEAN GENERATED ALWAYS AS (earned_fen < billed_fen) STORED;
DROP INDEX rentals_unearned;
CREATE INDEX rentals_unearned ON rentals (id) WHERE term <> 'on_demand' AND unearned;
ALTER TABLE rentals SET (fillfactor = 85);

-- +goose Down
ALTER TABLE rentals RESET (fillfactor);
DROP INDEX rentals_unearned;
ALTER TABLE rentals DROP COLUMN unearned;
CREATE INDEX rentals_unearned ON rentals (id) WHERE term <> 'on_demand' AND earned_fen < billed_fen;
