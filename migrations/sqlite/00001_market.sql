-- +goose Up
CREATE TABLE gpu_models (
    slug               TEXT PRIMARY KEY,
    name               TEXT NOT NULL,
    arch               TEXT NOT NULL,
    form_factor        TEXT NOT NULL,
    vram_gb            INTEGER NOT NULL,
    mem_bw_gbps        INTEGER NOT NULL,
    bf16_tflops        REAL NOT NULL,
    fp16_tflops        REAL NOT NULL,
    fp32_tflops        REAL NOT NULL,
    tdp_w              INTEGER NOT NULL,
    nvlink_gbps        REAL NOT NULL,
    nvml_name_contains TEXT NOT NULL,
    confirmed          TEXT NOT NULL,
    source             TEXT NOT NULL
);

CREATE TABLE providers (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    slug       TEXT NOT NULL UNIQUE,
    name_zh    TEXT NOT NULL,
    name_en    TEXT NOT NULL,
    demo       BOOLEAN NOT NULL DEFAULT FALSE,
    synthetic  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at DATETIME NOT NULL
);

CREATE TABLE datacenters (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    slug        TEXT NOT NULL UNIQUE,
    name_zh     TEXT NOT NULL,
    name_en     TEXT NOT NULL,
    city        TEXT NOT NULL,
    district_zh TEXT NOT NULL DEFAULT '',
    district_en TEXT NOT NULL DEFAULT '',
    region      TEXT NOT NULL,
    tier        TEXT NOT NULL,
    uplink_gbps INTEGER NOT NULL,
    demo        BOOLEAN NOT NULL DEFAULT FALSE,
    created_at  DATETIME NOT NULL
);

CREATE TABLE datacenter_latencies (
    datacenter_id INTEGER NOT NULL REFERENCES datacenters(id) ON DELETE CASCADE,
    from_city     TEXT NOT NULL,
    rtt_ms        REAL NOT NULL CHECK (rtt_ms >= 0),
    source        TEXT NOT NULL,
    PRIMARY KEY (datacenter_id, from_city)
);

CREATE TABLE nodes (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    provider_id   INTEGER NOT NULL REFERENCES providers(id),
    datacenter_id INTEGER NOT NULL REFERENCES datacenters(id),
    name          TEXT NOT NULL,
    gpu_model     TEXT NOT NULL REFERENCES gpu_models(slug),
    status        TEXT NOT NULL DEFAULT 'active',
    demo          BOOLEAN NOT NULL DEFAULT FALSE,
    synthetic     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at    DATETIME NOT NULL,
    UNIQUE (provider_id, name)
);

CREATE TABLE gpus (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id   INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    idx       INTEGER NOT NULL,
    uuid      TEXT NOT NULL UNIQUE,
    gpu_model TEXT NOT NULL REFERENCES gpu_models(slug),
    state     TEXT NOT NULL DEFAULT 'free' CHECK (state IN ('free', 'busy', 'unhealthy')),
    UNIQUE (node_id, idx)
);
CREATE INDEX gpus_node_state ON gpus (node_id, state);

CREATE TABLE offers (
    id                        INTEGER PRIMARY KEY AUTOINCREMENT,
    provider_id               INTEGER NOT NULL REFERENCES providers(id),
    node_id                   INTEGER NOT NULL REFERENCES nodes(id),
    datacenter_id             INTEGER NOT NULL REFERENCES datacenters(id),
    gpu_model                 TEXT NOT NULL REFERENCES gpu_models(slug),
    max_gpus                  INTEGER NOT NULL CHECK (max_gpus BETWEEN 1 AND 64),
    vcpu_per_gpu              INTEGER NOT NULL,
    ram_gb_per_gpu            INTEGER NOT NULL,
    disk_gb                   INTEGER NOT NULL,
    interconnect              TEXT NOT NULL CHECK (interconnect IN ('pcie', 'nvlink', 'nvlink-ib')),
    price_per_gpu_hour_fen    INTEGER NOT NULL CHECK (price_per_gpu_hour_fen > 0),
    weekly_price_per_gpu_fen  INTEGER CHECK (weekly_price_per_gpu_fen > 0),
    monthly_price_per_gpu_fen INTEGER CHECK (monthly_price_per_gpu_fen > 0),
    offpeak_discount_pct      INTEGER NOT NULL DEFAULT 0 CHECK (offpeak_discount_pct BETWEEN 0 AND 90),
    student_discount_pct      INTEGER NOT NULL DEFAULT 0 CHECK (student_discount_pct BETWEEN 0 AND 90),
    available_gpus            INTEGER NOT NULL DEFAULT 0 CHECK (available_gpus >= 0),
    status                    TEXT NOT NULL DEFAULT 'listed' CHECK (status IN ('listed', 'paused')),
    demo                      BOOLEAN NOT NULL DEFAULT FALSE,
    synthetic                 BOOLEAN NOT NULL DEFAULT FALSE,
    created_at                DATETIME NOT NULL,
    updated_at                DATETIME NOT NULL
);
CREATE INDEX offers_datacenter ON offers (datacenter_id);
CREATE INDEX offers_node ON offers (node_id);

-- One row per named counter. offers_version is bumped in the same
-- transaction as every change to what the offer list shows, so that every
-- process's in-memory offer index can tell, with one cheap read, that it is stale.
CREATE TABLE market_versions (
    name    TEXT PRIMARY KEY,
    version INTEGER NOT NULL
);
INSERT INTO market_versions (name, version) VALUES ('offers', 1);

-- +goose Down
DROP TABLE market_versions;
DROP TABLE offers;
DROP TABLE gpus;
DROP TABLE nodes;
DROP TABLE datacenter_latencies;
DROP TABLE datacenters;
DROP TABLE providers;
DROP TABLE gpu_models;
