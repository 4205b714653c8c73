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
--                session ends. The id is hashtext(token) here (the row
--                has no integer key; two tokens that share a hash only
--                end a stream that reconnects at once), the rowid on
--                SQLite: an integer a stream reads once when it
--                connects, never the token itself
--
-- The meter's passes change none of these, so a running rental that
-- nothing else touches costs its open pages nothing.
--
-- On PostgreSQL the triggers NOTIFY suanli_changes with '<topic>:<id>':
-- delivered on commit, in commit order, to each process's one listening
-- connection (duplicates within a transaction are folded into one).
-- suanli_notify_change's arguments are pairs: a topic and the column
-- that holds its id (a NULL id names nothing).
-- +goose StatementBegin
CREATE FUNCTION suanli_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    rec jsonb;
BEGIN
    IF TG_OP = 'DELETE' THEN
        rec := to_jsonb(OLD);
    ELSE
        rec := to_jsonb(NEW);
    END IF;
    FOR i IN 0 .. TG_NARGS / 2 - 1 LOOP
        IF rec ->> TG_ARGV[2 * i + 1] IS NOT NULL THEN
            PERFORM pg_notify('suanli_changes', TG_ARGV[2 * i] || ':' || (rec ->> TG_ARGV[2 * i + 1]));
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER rentals_inserted AFTER INSERT ON rentals FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'id', 'org', 'org_id');

CREATE TRIGGER rentals_changed AFTER UPDATE ON rentals FOR EACH ROW
WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id OR OLD.user_id IS DISTINCT FROM NEW.user_id
    OR OLD.offer_id IS DISTINCT FROM NEW.offer_id
    OR OLD.provider_id IS DISTINCT FROM NEW.provider_id
    OR OLD.node_id IS DISTINCT FROM NEW.node_id OR OLD.gpus IS DISTINCT FROM NEW.gpus
    OR OLD.sla IS DISTINCT FROM NEW.sla OR OLD.term IS DISTINCT FROM NEW.term
    OR OLD.status IS DISTINCT FROM NEW.status
    OR OLD.ssh_public_key IS DISTINCT FROM NEW.ssh_public_key
    OR OLD.workspace_id IS DISTINCT FROM NEW.workspace_id
    OR OLD.price_per_gpu_hour_fen IS DISTINCT FROM NEW.price_per_gpu_hour_fen
    OR OLD.offpeak_pct IS DISTINCT FROM NEW.offpeak_pct
    OR OLD.student_pct IS DISTINCT FROM NEW.student_pct
    OR OLD.sla_surcharge_pct IS DISTINCT FROM NEW.sla_surcharge_pct
    OR OLD.term_price_fen IS DISTINCT FROM NEW.term_price_fen
    OR OLD.auto_renew IS DISTINCT FROM NEW.auto_renew OR OLD.access IS DISTINCT FROM NEW.access
    OR OLD.checks IS DISTINCT FROM NEW.checks OR OLD.failure IS DISTINCT FROM NEW.failure
    OR OLD.failure_msg IS DISTINCT FROM NEW.failure_msg
    OR OLD.stop_reason IS DISTINCT FROM NEW.stop_reason
    OR OLD.attempts IS DISTINCT FROM NEW.attempts
    OR OLD.running_since IS DISTINCT FROM NEW.running_since
    OR OLD.down_since IS DISTINCT FROM NEW.down_since OR OLD.free IS DISTINCT FROM NEW.free
    OR OLD.ends_at IS DISTINCT FROM NEW.ends_at
    OR OLD.stopped_at IS DISTINCT FROM NEW.stopped_at
    OR OLD.min_billed_s IS DISTINCT FROM NEW.min_billed_s
    OR OLD.image IS DISTINCT FROM NEW.image OR OLD.volume_id IS DISTINCT FROM NEW.volume_id
    OR OLD.released_at IS DISTINCT FROM NEW.released_at
    OR OLD.no_gpu IS DISTINCT FROM NEW.no_gpu
    OR OLD.no_gpu_price_per_hour_fen IS DISTINCT FROM NEW.no_gpu_price_per_hour_fen
    OR OLD.ports IS DISTINCT FROM NEW.ports
    OR OLD.idle_stop_below_pct IS DISTINCT FROM NEW.idle_stop_below_pct
    OR OLD.idle_stop_minutes IS DISTINCT FROM NEW.idle_stop_minutes
    OR OLD.bid_per_gpu_hour_fen IS DISTINCT FROM NEW.bid_per_gpu_hour_fen
    OR OLD.interrupted_at IS DISTINCT FROM NEW.interrupted_at
    OR OLD.interrupt_reason IS DISTINCT FROM NEW.interrupt_reason
    OR OLD.interrupt_msg IS DISTINCT FROM NEW.interrupt_msg
    OR OLD.grace_until IS DISTINCT FROM NEW.grace_until)
EXECUTE FUNCTION suanli_notify_change('rental', 'id');

CREATE TRIGGER rentals_rate_changed AFTER UPDATE ON rentals FOR EACH ROW
WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.gpus IS DISTINCT FROM NEW.gpus
    OR OLD.free IS DISTINCT FROM NEW.free OR OLD.no_gpu IS DISTINCT FROM NEW.no_gpu
    OR OLD.no_gpu_price_per_hour_fen IS DISTINCT FROM NEW.no_gpu_price_per_hour_fen
    OR OLD.price_per_gpu_hour_fen IS DISTINCT FROM NEW.price_per_gpu_hour_fen
    OR OLD.term IS DISTINCT FROM NEW.term)
EXECUTE FUNCTION suanli_notify_change('org', 'org_id');

CREATE TRIGGER rental_events_inserted AFTER INSERT ON rental_events FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_gpus_inserted AFTER INSERT ON rental_gpus FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_gpus_changed AFTER UPDATE ON rental_gpus FOR EACH ROW
WHEN (OLD.released_at IS DISTINCT FROM NEW.released_at)
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER agent_tasks_inserted AFTER INSERT ON agent_tasks FOR EACH ROW
WHEN (NEW.rental_id IS NOT NULL)
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER agent_tasks_changed AFTER UPDATE ON agent_tasks FOR EACH ROW
WHEN (NEW.rental_id IS NOT NULL AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.progress IS DISTINCT FROM NEW.progress
    OR OLD.ok IS DISTINCT FROM NEW.ok OR OLD.result IS DISTINCT FROM NEW.result
    OR OLD.done_at IS DISTINCT FROM NEW.done_at))
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_registry_auths_inserted AFTER INSERT ON rental_registry_auths FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_registry_auths_changed AFTER UPDATE ON rental_registry_auths FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_registry_auths_deleted AFTER DELETE ON rental_registry_auths FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_launch_specs_inserted AFTER INSERT ON rental_launch_specs FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_launch_specs_changed AFTER UPDATE ON rental_launch_specs FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_launch_specs_deleted AFTER DELETE ON rental_launch_specs FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_labels_inserted AFTER INSERT ON rental_labels FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_labels_changed AFTER UPDATE ON rental_labels FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER rental_labels_deleted AFTER DELETE ON rental_labels FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('rental', 'rental_id');

CREATE TRIGGER volumes_inserted AFTER INSERT ON volumes FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('volume', 'id', 'org', 'org_id');

CREATE TRIGGER volumes_changed AFTER UPDATE ON volumes FOR EACH ROW
WHEN (OLD.org_id IS DISTINCT FROM NEW.org_id OR OLD.user_id IS DISTINCT FROM NEW.user_id
    OR OLD.offer_id IS DISTINCT FROM NEW.offer_id
    OR OLD.provider_id IS DISTINCT FROM NEW.provider_id
    OR OLD.datacenter_id IS DISTINCT FROM NEW.datacenter_id
    OR OLD.node_id IS DISTINCT FROM NEW.node_id OR OLD.storage IS DISTINCT FROM NEW.storage
    OR OLD.name IS DISTINCT FROM NEW.name
    OR OLD.workspace_key IS DISTINCT FROM NEW.workspace_key
    OR OLD.size_gb IS DISTINCT FROM NEW.size_gb
    OR OLD.price_per_gb_month_fen IS DISTINCT FROM NEW.price_per_gb_month_fen
    OR OLD.status IS DISTINCT FROM NEW.status
    OR OLD.delete_after IS DISTINCT FROM NEW.delete_after
    OR OLD.delete_reason IS DISTINCT FROM NEW.delete_reason
    OR OLD.deleted_at IS DISTINCT FROM NEW.deleted_at
    OR OLD.left_by_rental_id IS DISTINCT FROM NEW.left_by_rental_id)
EXECUTE FUNCTION suanli_notify_change('volume', 'id', 'rental', 'left_by_rental_id');

CREATE TRIGGER volumes_status_changed AFTER UPDATE ON volumes FOR EACH ROW
WHEN (OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION suanli_notify_change('org', 'org_id');

CREATE TRIGGER wallets_credited AFTER UPDATE ON ledger_accounts FOR EACH ROW
WHEN (NEW.kind = 'wallet' AND NEW.balance_fen > OLD.balance_fen)
EXECUTE FUNCTION suanli_notify_change('org', 'org_id');

CREATE TRIGGER orgs_changed AFTER UPDATE ON orgs FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('org', 'id');

CREATE TRIGGER memberships_inserted AFTER INSERT ON memberships FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('user', 'user_id');

CREATE TRIGGER memberships_changed AFTER UPDATE ON memberships FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('user', 'user_id');

CREATE TRIGGER memberships_deleted AFTER DELETE ON memberships FOR EACH ROW
EXECUTE FUNCTION suanli_notify_change('user', 'user_id');

CREATE TRIGGER users_sessions_changed AFTER UPDATE ON users FOR EACH ROW
WHEN (OLD.platform_admin IS DISTINCT FROM NEW.platform_admin
    OR OLD.suspended_at IS DISTINCT FROM NEW.suspended_at
    OR OLD.session_epoch IS DISTINCT FROM NEW.session_epoch)
EXECUTE FUNCTION suanli_notify_change('user', 'id');

CREATE TRIGGER nodes_changed AFTER UPDATE ON nodes FOR EACH ROW
WHEN (OLD.name IS DISTINCT FROM NEW.name OR OLD.status IS DISTINCT FROM NEW.status
    OR OLD.health IS DISTINCT FROM NEW.health OR OLD.simulated IS DISTINCT FROM NEW.simulated
    OR OLD.removed_at IS DISTINCT FROM NEW.removed_at)
EXECUTE FUNCTION suanli_notify_change('node', 'id');

-- +goose StatementBegin
CREATE FUNCTION suanli_notify_session_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('suanli_changes', 'session:' || hashtext(OLD.token));
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER sessions_deleted AFTER DELETE ON sessions FOR EACH ROW
EXECUTE FUNCTION suanli_notify_session_ended();

-- +goose Down
DROP TRIGGER sessions_deleted ON sessions;
DROP FUNCTION suanli_notify_session_ended();
DROP TRIGGER nodes_changed ON nodes;
DROP TRIGGER users_sessions_changed ON users;
DROP TRIGGER memberships_deleted ON memberships;
DROP TRIGGER memberships_changed ON memberships;
DROP TRIGGER memberships_inserted ON memberships;
DROP TRIGGER orgs_changed ON orgs;
DROP TRIGGER wallets_credited ON ledger_accounts;
DROP TRIGGER volumes_status_changed ON volumes;
DROP TRIGGER volumes_changed ON volumes;
DROP TRIGGER volumes_inserted ON volumes;
DROP TRIGGER rental_labels_deleted ON rental_labels;
DROP TRIGGER rental_labels_changed ON rental_labels;
DROP TRIGGER rental_labels_inserted ON rental_labels;
DROP TRIGGER rental_launch_specs_deleted ON rental_launch_specs;
DROP TRIGGER rental_launch_specs_changed ON rental_launch_specs;
DROP TRIGGER rental_launch_specs_inserted ON rental_launch_specs;
DROP TRIGGER rental_registry_auths_deleted ON rental_registry_auths;
DROP TRIGGER rental_registry_auths_changed ON rental_registry_auths;
DROP TRIGGER rental_registry_auths_inserted ON rental_registry_auths;
DROP TRIGGER agent_tasks_changed ON agent_tasks;
DROP TRIGGER agent_tasks_inserted ON agent_tasks;
DROP TRIGGER rental_gpus_changed ON rental_gpus;
DROP TRIGGER rental_gpus_inserted ON rental_gpus;
DROP TRIGGER rental_events_inserted ON rental_events;
DROP TRIGGER rentals_rate_changed ON rentals;
DROP TRIGGER rentals_changed ON rentals;
DROP TRIGGER rentals_inserted ON rentals;
DROP FUNCTION suanli_notify_change();
