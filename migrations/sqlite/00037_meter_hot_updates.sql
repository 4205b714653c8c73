-- +goose Up
-- The PostgreSQL migration of this number moves rentals_unearned's
-- predicate onto a generated column, so that the meter's updates of
-- billed_fen can be HOT there. SQLite has no HOT updates, but keeps the
-- same column and predicate so that one query (models.TermsToEarn) reads
-- both. A generated column added by ALTER TABLE must be VIRTUAL here.
ALTER TABLE rentals ADD COLUMN unearned INTEGER GENERATED ALWAYS AS (earned_fen < billed_fen) VIRTUAL;
DROP INDEX rentals_unearned;
CREATE INDEX rentals_unearned ON rentals (id) WHERE term <> 'on_demand' AND unearned;

-- +goose Down
DROP INDEX rentals_unearned;
ALTER TABLE rentals DROP COLUMN unearned;
CREATE INDEX rentals_unearned ON rentals (id) WHERE term <> 'on_demand' AND earned_fen < billed_fen;
