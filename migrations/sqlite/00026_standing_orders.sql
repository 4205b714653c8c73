-- +goose Up
-- Standing orders (「有卡就租」, issue 18): "when GPUs matching these
-- filters are free, rent them with this image and volume, or just tell
-- me". The market pass matches the open ones on every availability change
-- (package standingorders). status: 'open' until it is 'filled' (it
-- rented rental_id, or told its owner for action 'notify'), 'failed' (a
-- matching offer was found but the rent was refused: failure_code,
-- failure and failure_msg say why; nothing was rented) or 'expired'
-- (expires_at passed first). A cancelled order is deleted.
--
-- Filters: gpu_model (a catalogue slug), city ('' any), from_city and
-- max_latency_ms (0: no latency filter), and either max_price_fen (an
-- on-demand order: the on-demand price per GPU-hour it accepts, the
-- student price when student) or bid_per_gpu_hour_fen (an interruptible
-- order). datacenter_id and node_id are where its volume_id lives (only
-- offers there can mount it). What a rent needs is stored with it: sla,
-- image, volume_id or volume_gb (0: the default size), ssh_public_key.
CREATE TABLE standing_orders (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    org_id               INTEGER NOT NULL REFERENCES orgs(id),
    user_id              INTEGER NOT NULL REFERENCES users(id),
    gpu_model            TEXT NOT NULL,
    city                 TEXT NOT NULL DEFAULT '',
    from_city            TEXT NOT NULL DEFAULT '',
    max_latency_ms       INTEGER NOT NULL DEFAULT 0 CHECK (max_latency_ms >= 0),
    max_price_fen        INTEGER CHECK (max_price_fen > 0),
    bid_per_gpu_hour_fen INTEGER CHECK (bid_per_gpu_hour_fen > 0),
    student              BOOLEAN NOT NULL DEFAULT FALSE,
    gpus                 INTEGER NOT NULL CHECK (gpus BETWEEN 1 AND 64),
    action               TEXT NOT NULL CHECK (action IN ('rent', 'notify')),
    sla                  TEXT NOT NULL DEFAULT 'standard',
    image                TEXT NOT NULL DEFAULT '',
    volume_id            INTEGER REFERENCES volumes(id),
    volume_gb            INTEGER NOT NULL DEFAULT 0 CHECK (volume_gb >= 0),
    datacenter_id        INTEGER,
    node_id              INTEGER,
    ssh_public_key       TEXT NOT NULL DEFAULT '',
    status               TEXT NOT NULL CHECK (status IN ('open', 'filled', 'expired', 'failed')),
    rental_id            INTEGER REFERENCES rentals(id),
    offer_id             INTEGER,
    failure_code         TEXT NOT NULL DEFAULT '',
    failure              TEXT NOT NULL DEFAULT '',
    failure_msg          TEXT NOT NULL DEFAULT '',
    expires_at           DATETIME NOT NULL,
    created_at           DATETIME NOT NULL,
    ended_at             DATETIME,
    CHECK ((max_price_fen IS NULL) <> (bid_per_gpu_hour_fen IS NULL))
);
-- The pass reads the open orders; the pages an organisation's, newest first.
CREATE INDEX standing_orders_open ON standing_orders (expires_at) WHERE status = 'open';
CREATE INDEX standing_orders_org ON standing_orders (org_id, created_at);
-- Moved in every transaction that changes an open order (made, filled,
-- failed, expired, deleted), so that the pass reloads them only then.
INSERT INTO market_versions (name, version) VALUES ('standing_orders', 1);

-- +goose Down
DELETE FROM market_versions WHERE name = 'standing_orders';
DROP TABLE standing_orders;
