-- +goose Up
-- The platform's image catalogue. digest and size_bytes stay NULL until
-- they are known (read from the registry or a node that pulled the
-- image): they are never made up. cuda_version is the CUDA runtime the
-- image was built for ('' when it has none); a node whose driver supports
-- an older CUDA is refused the image (package images).
CREATE TABLE images (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    slug              TEXT NOT NULL UNIQUE,
    name              TEXT NOT NULL,
    framework         TEXT NOT NULL DEFAULT '',
    framework_version TEXT NOT NULL DEFAULT '',
    cuda_version      TEXT NOT NULL DEFAULT '',
    reference         TEXT NOT NULL,
    digest            TEXT,
    size_bytes        INTEGER CHECK (size_bytes > 0),
    jupyter           BOOLEAN NOT NULL DEFAULT FALSE,
    created_at        DATETIME NOT NULL
);
-- Upstream tags that exist; the catalogue's order (by id) is the order
-- the rent form lists them in, and the first an offer offers is its
-- default. debian-sshd is built locally by the tests (mmdebstrap +
-- docker import; it is on no registry).
INSERT INTO images (slug, name, framework, framework_version, cuda_version, reference, jupyter, created_at) VALUES
    ('pytorch-2.5-cuda12.4', 'PyTorch 2.5.1 (CUDA 12.4, cuDNN 9)', 'PyTorch', '2.5.1', '12.4', 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime', FALSE, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    ('pytorch-2.7-cuda12.8', 'PyTorch 2.7.0 (CUDA 12.8, cuDNN 9)', 'PyTorch', '2.7.0', '12.8', 'pytorch/pytorch:2.7.0-cuda12.8-cudnn9-runtime', FALSE, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    ('tensorflow-2.17-cuda12.3', 'TensorFlow 2.17.0 (CUDA 12.3)', 'TensorFlow', '2.17.0', '12.3', 'tensorflow/tensorflow:2.17.0-gpu', FALSE, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    ('cuda-12.4-runtime', 'CUDA 12.4.1 runtime (Ubuntu 22.04)', 'CUDA', '12.4.1', '12.4', 'nvidia/cuda:12.4.1-runtime-ubuntu22.04', FALSE, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    ('ubuntu-22.04', 'Ubuntu 22.04', 'Ubuntu', '22.04', '', 'ubuntu:22.04', FALSE, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now')),
    ('debian-sshd', 'Debian 12 (sshd, python3)', 'Debian', '12', '', 'suanli-test/sshd:bookworm', FALSE, strftime('%Y-%m-%d %H:%M:%f+00:00', 'now'));

-- What an offer sells besides GPU time: whether renters may bring their
-- own image, the storage price of its volumes and the hourly price of
-- the container without GPUs (无卡模式).
ALTER TABLE offers ADD COLUMN custom_images BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE offers ADD COLUMN storage_price_per_gb_month_fen INTEGER NOT NULL DEFAULT 30 CHECK (storage_price_per_gb_month_fen >= 0);
ALTER TABLE offers ADD COLUMN no_gpu_price_per_hour_fen INTEGER NOT NULL DEFAULT 10 CHECK (no_gpu_price_per_hour_fen >= 0);
-- The catalogue images an offer offers; none listed means every one
-- (models.OfferImageIDs says so where it is read).
CREATE TABLE offer_images (
    offer_id INTEGER NOT NULL REFERENCES offers(id) ON DELETE CASCADE,
    image_id INTEGER NOT NULL REFERENCES images(id) ON DELETE CASCADE,
    PRIMARY KEY (offer_id, image_id)
);

-- local: a volume lives on one node's disk; shared: every node of the
-- datacentre mounts the same path (agents run with --volume-root).
ALTER TABLE datacenters ADD COLUMN storage TEXT NOT NULL DEFAULT 'local' CHECK (storage IN ('local', 'shared'));

-- What each node's agent last said about its images, its volume root and
-- its CUDA driver. images_hash is the hash of the last reported image
-- list, so an unchanged list costs no write.
ALTER TABLE nodes ADD COLUMN volume_root TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN cuda_driver_version TEXT NOT NULL DEFAULT '';
ALTER TABLE nodes ADD COLUMN images_hash TEXT NOT NULL DEFAULT '';
-- One row per image name (repository:tag) on the node; image_id is the
-- Docker image id (sha256:…), not an images row. seen_at is when the
-- list last changed (nodes.last_heartbeat_at says it is still current).
CREATE TABLE node_images (
    node_id      INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    ref          TEXT NOT NULL,
    image_id     TEXT NOT NULL,
    size_bytes   INTEGER NOT NULL DEFAULT 0,
    cuda_version TEXT NOT NULL DEFAULT '',
    seen_at      DATETIME NOT NULL,
    PRIMARY KEY (node_id, ref)
);

-- +goose Down
DROP TABLE node_images;
ALTER TABLE nodes DROP COLUMN images_hash;
ALTER TABLE nodes DROP COLUMN cuda_driver_version;
ALTER TABLE nodes DROP COLUMN volume_root;
ALTER TABLE datacenters DROP COLUMN storage;
DROP TABLE offer_images;
ALTER TABLE offers DROP COLUMN no_gpu_price_per_hour_fen;
ALTER TABLE offers DROP COLUMN storage_price_per_gb_month_fen;
ALTER TABLE offers DROP COLUMN custom_images;
DROP TABLE images;
