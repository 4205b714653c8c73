-- +goose Up
-- The change feed (package changefeed, issue 20): a process learns that a
-- rental, a volume, an organisation's wallet, a user's sessions or
-- memberships, or a node changed, whichever process changed it, so that
-- an open console waits instead of polling. Triggers name what changed
-- as a topic and an id:
--
--   rental:<id>  the rental's row (not the meter's billing columns:
--                billed_until, carry_num, billed_fen, earned_fen,
--                downtime_secs, low_balance_mailed, idle_warned_at,
--                updated_at), its timeline, GPUs, launch task (pull
--                progress), registry credential, name and labels
--   volume:<id>  the volume's row (not the meter's columns; a volume a
--                rental left on a node is that rental's change too)
--   org:<id>     what the wallet's runway depends on besides time: a
--                credit to the wallet (never the meter's debits), a
--                rental or volume of the organisation that starts, stops
--                or changes its rate; and any change to the org's row
--   user:<id>    the user's memberships, admin flag, suspension or
--                session epoch (an open stream authorises again)
--   node:<id>    the node's name, status, health or simulated flag (not
--                its heartbeats)
--   session:<id> a browser session ended (its row deleted: a logout, a
--                renewed token, a purge): an open stream of that
--                session ends. The id is the row's rowid here (a rowid
--                table; ON CONFLICT DO UPDATE keeps it), hashtext(token)
--                on PostgreSQL: an integer a stream reads once when it
--                connects, never the token itself
--
-- The meter's passes change none of these, so a running rental that
-- nothing else touches costs its open pages nothing.
--
-- On SQLite (one process) the triggers append to change_log in the
-- writing transaction; SQLite serialises writers, so id order is commit
-- order and a poller reads WHERE id > last. created_at (Unix seconds,
-- SQLite's clock) lets the poller prune old rows.
CREATE TABLE change_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    topic      TEXT NOT NULL,
    ref_id     INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX change_log_created ON change_log (created_at);

-- +goose StatementBegin
CREATE TRIGGER rentals_inserted AFTER INSERT ON rentals
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.id IS NOT NULL;
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'org', NEW.org_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.org_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rentals_changed AFTER UPDATE ON rentals
WHEN OLD.org_id IS NOT NEW.org_id OR OLD.user_id IS NOT NEW.user_id
    OR OLD.offer_id IS NOT NEW.offer_id OR OLD.provider_id IS NOT NEW.provider_id
    OR OLD.node_id IS NOT NEW.node_id OR OLD.gpus IS NOT NEW.gpus OR OLD.sla IS NOT NEW.sla
    OR OLD.term IS NOT NEW.term OR OLD.status IS NOT NEW.status
    OR OLD.ssh_public_key IS NOT NEW.ssh_public_key OR OLD.workspace_id IS NOT NEW.workspace_id
    OR OLD.price_per_gpu_hour_fen IS NOT NEW.price_per_gpu_hour_fen
    OR OLD.offpeak_pct IS NOT NEW.offpeak_pct OR OLD.student_pct IS NOT NEW.student_pct
    OR OLD.sla_surcharge_pct IS NOT NEW.sla_surcharge_pct
    OR OLD.term_price_fen IS NOT NEW.term_price_fen OR OLD.auto_renew IS NOT NEW.auto_renew
    OR OLD.access IS NOT NEW.access OR OLD.checks IS NOT NEW.checks
    OR OLD.failure IS NOT NEW.failure OR OLD.failure_msg IS NOT NEW.failure_msg
    OR OLD.stop_reason IS NOT NEW.stop_reason OR OLD.attempts IS NOT NEW.attempts
    OR OLD.running_since IS NOT NEW.running_since OR OLD.down_since IS NOT NEW.down_since
    OR OLD.free IS NOT NEW.free OR OLD.ends_at IS NOT NEW.ends_at
    OR OLD.stopped_at IS NOT NEW.stopped_at OR OLD.min_billed_s IS NOT NEW.min_billed_s
    OR OLD.image IS NOT NEW.image OR OLD.volume_id IS NOT NEW.volume_id
    OR OLD.released_at IS NOT NEW.released_at OR OLD.no_gpu IS NOT NEW.no_gpu
    OR OLD.no_gpu_price_per_hour_fen IS NOT NEW.no_gpu_price_per_hour_fen
    OR OLD.ports IS NOT NEW.ports OR OLD.idle_stop_below_pct IS NOT NEW.idle_stop_below_pct
    OR OLD.idle_stop_minutes IS NOT NEW.idle_stop_minutes
    OR OLD.bid_per_gpu_hour_fen IS NOT NEW.bid_per_gpu_hour_fen
    OR OLD.interrupted_at IS NOT NEW.interrupted_at
    OR OLD.interrupt_reason IS NOT NEW.interrupt_reason
    OR OLD.interrupt_msg IS NOT NEW.interrupt_msg OR OLD.grace_until IS NOT NEW.grace_until
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rentals_rate_changed AFTER UPDATE ON rentals
WHEN OLD.status IS NOT NEW.status OR OLD.gpus IS NOT NEW.gpus OR OLD.free IS NOT NEW.free
    OR OLD.no_gpu IS NOT NEW.no_gpu
    OR OLD.no_gpu_price_per_hour_fen IS NOT NEW.no_gpu_price_per_hour_fen
    OR OLD.price_per_gpu_hour_fen IS NOT NEW.price_per_gpu_hour_fen OR OLD.term IS NOT NEW.term
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'org', NEW.org_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.org_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_events_inserted AFTER INSERT ON rental_events
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_gpus_inserted AFTER INSERT ON rental_gpus
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_gpus_changed AFTER UPDATE ON rental_gpus
WHEN OLD.released_at IS NOT NEW.released_at
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER agent_tasks_inserted AFTER INSERT ON agent_tasks
WHEN NEW.rental_id IS NOT NULL
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER agent_tasks_changed AFTER UPDATE ON agent_tasks
WHEN NEW.rental_id IS NOT NULL AND (OLD.status IS NOT NEW.status OR OLD.progress IS NOT NEW.progress OR OLD.ok IS NOT NEW.ok
    OR OLD.result IS NOT NEW.result OR OLD.done_at IS NOT NEW.done_at)
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_registry_auths_inserted AFTER INSERT ON rental_registry_auths
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_registry_auths_changed AFTER UPDATE ON rental_registry_auths
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_registry_auths_deleted AFTER DELETE ON rental_registry_auths
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', OLD.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE OLD.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_launch_specs_inserted AFTER INSERT ON rental_launch_specs
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_launch_specs_changed AFTER UPDATE ON rental_launch_specs
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_launch_specs_deleted AFTER DELETE ON rental_launch_specs
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', OLD.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE OLD.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_labels_inserted AFTER INSERT ON rental_labels
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_labels_changed AFTER UPDATE ON rental_labels
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER rental_labels_deleted AFTER DELETE ON rental_labels
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', OLD.rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE OLD.rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER volumes_inserted AFTER INSERT ON volumes
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'volume', NEW.id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.id IS NOT NULL;
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'org', NEW.org_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.org_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER volumes_changed AFTER UPDATE ON volumes
WHEN OLD.org_id IS NOT NEW.org_id OR OLD.user_id IS NOT NEW.user_id
    OR OLD.offer_id IS NOT NEW.offer_id OR OLD.provider_id IS NOT NEW.provider_id
    OR OLD.datacenter_id IS NOT NEW.datacenter_id OR OLD.node_id IS NOT NEW.node_id
    OR OLD.storage IS NOT NEW.storage OR OLD.name IS NOT NEW.name
    OR OLD.workspace_key IS NOT NEW.workspace_key OR OLD.size_gb IS NOT NEW.size_gb
    OR OLD.price_per_gb_month_fen IS NOT NEW.price_per_gb_month_fen
    OR OLD.status IS NOT NEW.status OR OLD.delete_after IS NOT NEW.delete_after
    OR OLD.delete_reason IS NOT NEW.delete_reason OR OLD.deleted_at IS NOT NEW.deleted_at
    OR OLD.left_by_rental_id IS NOT NEW.left_by_rental_id
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'volume', NEW.id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.id IS NOT NULL;
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'rental', NEW.left_by_rental_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.left_by_rental_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER volumes_status_changed AFTER UPDATE ON volumes
WHEN OLD.status IS NOT NEW.status
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'org', NEW.org_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.org_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER wallets_credited AFTER UPDATE ON ledger_accounts
WHEN NEW.kind = 'wallet' AND NEW.balance_fen > OLD.balance_fen
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'org', NEW.org_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.org_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER orgs_changed AFTER UPDATE ON orgs
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'org', NEW.id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER memberships_inserted AFTER INSERT ON memberships
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'user', NEW.user_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.user_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER memberships_changed AFTER UPDATE ON memberships
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'user', NEW.user_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.user_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER memberships_deleted AFTER DELETE ON memberships
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'user', OLD.user_id, CAST(strftime('%s', 'now') AS INTEGER) WHERE OLD.user_id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_sessions_changed AFTER UPDATE ON users
WHEN OLD.platform_admin IS NOT NEW.platform_admin OR OLD.suspended_at IS NOT NEW.suspended_at
    OR OLD.session_epoch IS NOT NEW.session_epoch
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'user', NEW.id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER nodes_changed AFTER UPDATE ON nodes
WHEN OLD.name IS NOT NEW.name OR OLD.status IS NOT NEW.status OR OLD.health IS NOT NEW.health
    OR OLD.simulated IS NOT NEW.simulated OR OLD.removed_at IS NOT NEW.removed_at
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        SELECT 'node', NEW.id, CAST(strftime('%s', 'now') AS INTEGER) WHERE NEW.id IS NOT NULL;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER sessions_deleted AFTER DELETE ON sessions
BEGIN
    INSERT INTO change_log (topic, ref_id, created_at)
        VALUES ('session', OLD.rowid, CAST(strftime('%s', 'now') AS INTEGER));
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER sessions_deleted;
DROP TRIGGER nodes_changed;
DROP TRIGGER users_sessions_changed;
DROP TRIGGER memberships_deleted;
DROP TRIGGER memberships_changed;
DROP TRIGGER memberships_inserted;
DROP TRIGGER orgs_changed;
DROP TRIGGER wallets_credited;
DROP TRIGGER volumes_status_changed;
DROP TRIGGER volumes_changed;
DROP TRIGGER volumes_inserted;
DROP TRIGGER rental_labels_deleted;
DROP TRIGGER rental_labels_changed;
DROP TRIGGER rental_labels_inserted;
DROP TRIGGER rental_launch_specs_deleted;
DROP TRIGGER rental_launch_specs_changed;
DROP TRIGGER rental_launch_specs_inserted;
DROP TRIGGER rental_registry_auths_deleted;
DROP TRIGGER rental_registry_auths_changed;
DROP TRIGGER rental_registry_auths_inserted;
DROP TRIGGER agent_tasks_changed;
DROP TRIGGER agent_tasks_inserted;
DROP TRIGGER rental_gpus_changed;
DROP TRIGGER rental_gpus_inserted;
DROP TRIGGER rental_events_inserted;
DROP TRIGGER rentals_rate_changed;
DROP TRIGGER rentals_changed;
DROP TRIGGER rentals_inserted;
DROP TABLE change_log;
