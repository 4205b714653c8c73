-- +goose Up
-- The meter (issue 20) updates every running on-demand rental once a
-- minute (billed_until, billed_fen, carry_num). PostgreSQL can make such
-- an update HOT, a new row version on the same page with no new index
-- entries, only when no indexed column changes, and a column named in a
-- partial index's predicate counts: rentals_unearned named billed_fen,
-- so every claim wrote a new entry into each of the table's indexes.
-- The predicate now reads a generated column that holds its value:
-- for an on-demand rental it stays true from the first charge on, so
-- the meter's updates leave it unchanged.
--
-- A HOT update also needs room on the row's own page for the new
-- version, and a pass updates every running rental on a page: a page
-- half full holds each row's new version while the previous pass's
-- versions wait to be pruned. With fillfactor 50, 67% of a pass's
-- updates were HOT in BenchmarkMeterPass100k (27% at 85, 0 before) and
-- a pass over 100,000 rentals took 4.4–5.2 s instead of 6.4–7.2 s. The
-- price is a rentals table about twice its packed size on disk. Set
-- first: adding the stored column rewrites the table at that fill.
ALTER TABLE rentals SET (fillfactor = 50);
ALTER TABLE rentals ADD COLUMN unearned BOOLEAN GENERATED ALWAYS AS (earned_fen < billed_fen) STORED;
DROP INDEX rentals_unearned;
CREATE INDEX rentals_unearned ON rentals (id) WHERE term <> 'on_demand' AND unearned;

-- +goose Down
ALTER TABLE rentals RESET (fillfactor);
DROP INDEX rentals_unearned;
ALTER TABLE rentals DROP COLUMN unearned;
CREATE INDEX rentals_unearned ON rentals (id) WHERE term <> 'on_demand' AND earned_fen < billed_fen;
