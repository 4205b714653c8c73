-- +goose Up
-- offer_changes: what each move of the offers version changed (issue 20),
-- so that every web replica patches its in-memory offer index instead of
-- reloading it whole. Written in the transaction that moves the version
-- (models.OffersChanged); the version row's lock orders those
-- transactions, so a reader that sees version V sees every row up to V.
-- kind is offer, node, datacenter, provider, org (the offers of those)
-- or all (reload everything). Old rows are pruned by the writers; a
-- replica that fell behind the pruned range reloads whole.
CREATE TABLE offer_changes (
    version BIGINT NOT NULL,
    kind    TEXT   NOT NULL,
    ref_id  BIGINT NOT NULL
);
CREATE INDEX offer_changes_version ON offer_changes (version);

-- +goose Down
DROP TABLE offer_changes;
