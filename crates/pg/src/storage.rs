//! [`PgStorage`]: the storage seam on PostgreSQL.

use std::str::FromStr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use forkpoint_core::events::parse_event_line;
use forkpoint_core::storage::{
    AgentHead, AgentStorage, EventLine, Lease, Listed, WriteBatch, agent_not_found, already_exists,
    lease_lost,
};
use forkpoint_core::store::validate_id;
use forkpoint_core::{Error, ErrorCode, Result};
use postgres::{Config, Transaction};

use crate::error::Pg;
use crate::keeper::Keeper;
use crate::pack::{pack, unpack};
use crate::pool::Pool;
use crate::schema::{check_schema_name, migrate};
use crate::tls::{Connector, Tls};
use crate::watch::{Notifier, Watch};

/// Session chunks are cut at line ends once they reach this size (a line
/// longer than it stays whole), so a range read fetches little more than it needs.
const CHUNK: usize = 256 * 1024;

/// How a [`PgStorage`] connects and behaves.
#[derive(Clone)]
pub struct PgOptions {
    /// A PostgreSQL connection string: a URL (`postgres://user:pw@host:5432/db`)
    /// or `key=value` pairs (`host=… port=… user=… password=… dbname=…`).
    pub url: String,
    /// The PostgreSQL schema holding the tables (default `forkpoint`).
    pub schema: String,
    /// How long a lease lasts without a write or a renewal, in milliseconds
    /// (default 10,000).
    pub lease_ms: u64,
    /// The host name written as the lease's holder (default: this machine's).
    pub host: Option<String>,
    /// How many connections the store opens at most (default 4); calls
    /// beyond that wait for one.
    pub pool_size: usize,
    /// How long opening a connection may take, in milliseconds, when the
    /// connection string sets no `connect_timeout` (default 10,000).
    pub connect_timeout_ms: u64,
    /// Whether the leases this storage holds are renewed on a thread of its
    /// own every third of `lease_ms` (default true). Without it they last
    /// `lease_ms` after each write or [`PgStorage::renew`].
    pub keep_leases: bool,
}

impl PgOptions {
    /// Options with the defaults for connection string `url`.
    pub fn new(url: impl Into<String>) -> PgOptions {
        PgOptions {
            url: url.into(),
            schema: "forkpoint".into(),
            lease_ms: 10_000,
            host: None,
            pool_size: 4,
            connect_timeout_ms: 10_000,
            keep_leases: true,
        }
    }
}

impl From<&str> for PgOptions {
    fn from(url: &str) -> PgOptions {
        PgOptions::new(url)
    }
}

impl From<String> for PgOptions {
    fn from(url: String) -> PgOptions {
        PgOptions::new(url)
    }
}

/// Agents in PostgreSQL (see the crate's documentation).
pub struct PgStorage {
    pool: Pool,
    schema: String,
    lease_ms: i64,
    holder: String,
    sql: Sql,
    keeper: Keeper,
    notifier: Notifier,
    config: Connector,
    watch: OnceLock<Arc<Watch>>,
}

impl Drop for PgStorage {
    fn drop(&mut self) {
        if let Some(w) = self.watch.get() {
            w.stop();
        }
    }
}

impl std::fmt::Debug for PgStorage {
    // Not the connection string: it may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStorage")
            .field("schema", &self.schema)
            .field("lease_ms", &self.lease_ms)
            .field("holder", &self.holder)
            .finish_non_exhaustive()
    }
}

/// The statements, with the schema's name in them.
struct Sql {
    create: String,
    append: String,
    lock_agent: String,
    take_free: String,
    renew: String,
    write: String,
    last_chunk: String,
    cut_chunk: String,
    drop_chunk: String,
    last_events: String,
    ends: String,
    drop_events: String,
    put_events: String,
    head: String,
    read_session: String,
    read_events: String,
    tail_events: String,
    release: String,
    list: String,
    exists: String,
    meta: String,
    delete: String,
}

impl Sql {
    fn new(s: &str) -> Sql {
        let s = format!("\"{s}\"");
        let until = "clock_timestamp() + $3::bigint * interval '1 millisecond'";
        Sql {
            create: format!(
                "INSERT INTO {s}.agents (id, meta, token, holder, lease_until, hint, state)
                 VALUES ($1, $4, nextval('{s}.lease_tokens'), $2, {until}, $5, $6)
                 ON CONFLICT (id) DO NOTHING RETURNING token"
            ),
            append: format!(
                "WITH chunks AS (INSERT INTO {s}.session_chunks (agent_id, off, len, z, bytes)
                   SELECT $1, o, l, c, b
                   FROM unnest($2::bigint[], $3::bigint[], $4::bool[], $5::bytea[]) AS u(o, l, c, b)),
                 evs AS (INSERT INTO {s}.events (agent_id, seq, first_seq, len, z, lines)
                   SELECT $1, $6::bigint, $7::bigint, $8::bigint, $9::bool, $10::bytea
                   WHERE $10::bytea IS NOT NULL)
                 SELECT 1"
            ),
            lock_agent: format!(
                "SELECT holder, lease_until > clock_timestamp(),
                        (extract(epoch FROM lease_until - clock_timestamp()) * 1000)::bigint
                 FROM {s}.agents WHERE id = $1 FOR UPDATE"
            ),
            // Takes a free (or run out) lease in one statement, and says
            // whether a log ends without its newline (only a raw, uncompressed
            // row can: the library writes whole lines).
            take_free: format!(
                "UPDATE {s}.agents SET token = nextval('{s}.lease_tokens'), holder = $2,
                 lease_until = {until}
                 WHERE id = $1 AND (holder IS NULL OR lease_until <= clock_timestamp())
                 RETURNING token,
                   coalesce((SELECT CASE WHEN z THEN false WHEN length(bytes) = 0 THEN true
                                    ELSE get_byte(bytes, length(bytes) - 1) <> 10 END
                             FROM {s}.session_chunks WHERE agent_id = $1 ORDER BY off DESC LIMIT 1), false)
                   OR coalesce((SELECT CASE WHEN z THEN false WHEN length(lines) = 0 THEN true
                                       ELSE get_byte(lines, length(lines) - 1) <> 10 END
                                FROM {s}.events WHERE agent_id = $1 ORDER BY seq DESC LIMIT 1), false)"
            ),
            renew: format!(
                "UPDATE {s}.agents SET lease_until = {until}
                 WHERE id = $1 AND token = $2 AND holder IS NOT NULL"
            ),
            // One statement, so one round trip and its own transaction: the
            // agent's row is updated (lease renewed, meta, hint, state) only
            // if the token is the current one and the batch continues both
            // logs where they end, and the logs are appended only if it was.
            // A takeover holds the row locked until it commits; this waits
            // for it and then finds the token changed.
            write: format!(
                "WITH head AS (
                   UPDATE {s}.agents SET lease_until = {until}, meta = coalesce($4, meta),
                     hint = coalesce($5, hint), state = coalesce($6, state)
                   WHERE id = $1 AND token = $2 AND holder IS NOT NULL
                     AND coalesce((SELECT off + len FROM {s}.session_chunks
                                   WHERE agent_id = $1 ORDER BY off DESC LIMIT 1), 0) = $7
                     AND ($12::bigint IS NULL OR coalesce((SELECT max(seq) FROM {s}.events
                                                           WHERE agent_id = $1), -1) < $12::bigint)
                   RETURNING 1),
                 chunks AS (INSERT INTO {s}.session_chunks (agent_id, off, len, z, bytes)
                   SELECT $1, o, l, c, b
                   FROM unnest($8::bigint[], $9::bigint[], $10::bool[], $11::bytea[]) AS u(o, l, c, b)
                   WHERE EXISTS (SELECT 1 FROM head)),
                 evs AS (INSERT INTO {s}.events (agent_id, seq, first_seq, len, z, lines)
                   SELECT $1, $13::bigint, $12::bigint, $14::bigint, $15::bool, $16::bytea
                   WHERE $16::bytea IS NOT NULL AND EXISTS (SELECT 1 FROM head))
                 SELECT EXISTS (SELECT 1 FROM head)"
            ),
            last_chunk: format!(
                "SELECT off, len, z, bytes FROM {s}.session_chunks WHERE agent_id = $1
                 ORDER BY off DESC LIMIT 1"
            ),
            cut_chunk: format!(
                "UPDATE {s}.session_chunks SET bytes = $3, len = $4, z = $5 WHERE agent_id = $1 AND off = $2"
            ),
            drop_chunk: format!("DELETE FROM {s}.session_chunks WHERE agent_id = $1 AND off = $2"),
            last_events: format!(
                "SELECT seq, first_seq, len, z, lines FROM {s}.events WHERE agent_id = $1
                 ORDER BY seq DESC LIMIT 1"
            ),
            drop_events: format!("DELETE FROM {s}.events WHERE agent_id = $1 AND seq = $2"),
            ends: format!(
                "SELECT token, (SELECT off + len FROM {s}.session_chunks
                                WHERE agent_id = $1 ORDER BY off DESC LIMIT 1),
                        (SELECT max(seq) FROM {s}.events WHERE agent_id = $1),
                        holder IS NOT NULL
                 FROM {s}.agents WHERE id = $1"
            ),
            put_events: format!(
                "INSERT INTO {s}.events (agent_id, seq, first_seq, len, z, lines)
                 VALUES ($1, $2, $3, $4, $5, $6)"
            ),
            // One read (the lease was just taken or renewed): the row, the
            // session's end, the last events row.
            head: format!(
                "SELECT a.meta, a.hint, a.state,
                   (SELECT off + len FROM {s}.session_chunks
                    WHERE agent_id = $1 ORDER BY off DESC LIMIT 1),
                   e.len, e.z, e.lines
                 FROM {s}.agents a
                 LEFT JOIN LATERAL (SELECT len, z, lines FROM {s}.events WHERE agent_id = a.id
                                    ORDER BY seq DESC LIMIT 1) e ON true
                 WHERE a.id = $1 AND a.token = $2 AND a.holder IS NOT NULL"
            ),
            read_session: format!(
                "SELECT a.id IS NOT NULL, c.off, c.len, c.z, c.bytes FROM (SELECT 1) AS one
                 LEFT JOIN {s}.agents a ON a.id = $1
                 LEFT JOIN {s}.session_chunks c ON c.agent_id = a.id AND c.off < $3
                   AND c.off >= coalesce((SELECT max(off) FROM {s}.session_chunks
                                          WHERE agent_id = $1 AND off <= $2), 0)
                 ORDER BY c.off"
            ),
            read_events: format!(
                "SELECT a.id IS NOT NULL, e.len, e.z, e.lines FROM (SELECT 1) AS one
                 LEFT JOIN {s}.agents a ON a.id = $1
                 LEFT JOIN LATERAL (SELECT seq, len, z, lines FROM {s}.events
                   WHERE agent_id = a.id AND seq > $2 ORDER BY seq LIMIT $3) e ON true
                 ORDER BY e.seq"
            ),
            tail_events: format!(
                "SELECT a.id IS NOT NULL, e.len, e.z, e.lines FROM (SELECT 1) AS one
                 LEFT JOIN {s}.agents a ON a.id = $1
                 LEFT JOIN LATERAL (SELECT seq, len, z, lines FROM {s}.events
                   WHERE agent_id = a.id AND seq < $2 ORDER BY seq DESC LIMIT $3) e ON true
                 ORDER BY e.seq DESC"
            ),
            release: format!(
                "UPDATE {s}.agents SET holder = NULL, lease_until = NULL
                 WHERE id = $1 AND token = $2"
            ),
            list: format!("SELECT id, meta FROM {s}.agents ORDER BY id"),
            exists: format!("SELECT 1 FROM {s}.agents WHERE id = $1"),
            meta: format!("SELECT meta FROM {s}.agents WHERE id = $1"),
            delete: format!("DELETE FROM {s}.agents WHERE id = $1"),
        }
    }
}

/// This machine's name, for the lease's holder.
fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .or_else(|| std::env::var("COMPUTERNAME").ok().filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "an unknown host".into())
}

/// A token as the database keeps it; a token it cannot hold was never handed out.
fn token_of(lease: &Lease) -> Result<i64> {
    i64::try_from(lease.token).map_err(|_| lease_lost(&lease.agent_id))
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `bytes` (whole lines) as chunks of about [`CHUNK`] bytes at offset `at` on.
fn chunks(bytes: &[u8], at: i64) -> Result<(Vec<i64>, Vec<&[u8]>)> {
    let mut offs = Vec::new();
    let mut parts = Vec::new();
    let mut start = 0usize;
    while start < bytes.len() {
        let mut end = (start + CHUNK).min(bytes.len());
        if end < bytes.len() {
            // To the end of the line the cut falls in.
            end = bytes[end..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |i| end + i + 1);
        }
        let off = i64::try_from(start)
            .ok()
            .and_then(|s| at.checked_add(s))
            .ok_or_else(|| Error::invalid_input("a session longer than 2^63 bytes"))?;
        offs.push(off);
        parts.push(&bytes[start..end]);
        start = end;
    }
    Ok((offs, parts))
}

/// The batch's event lines as one row: its last seq, its first, the lines
/// (each with its newline), checked to continue the log after `last` in
/// strictly increasing order. `None` without events.
fn event_row(events: &[EventLine], last: Option<i64>) -> Result<Option<(i64, i64, Vec<u8>)>> {
    let Some(first) = events.first() else {
        return Ok(None);
    };
    let mut bytes = Vec::with_capacity(events.iter().map(|e| e.line.len() + 1).sum());
    let mut prev = last;
    for e in events {
        let seq = i64::try_from(e.meta.seq)
            .map_err(|_| Error::invalid_input(format!("event seq {} is too large", e.meta.seq)))?;
        if prev.is_some_and(|p| seq <= p) {
            return Err(Error::internal(format!(
                "an event with seq {seq} after seq {}: seqs must increase",
                prev.unwrap_or(0)
            )));
        }
        if e.line.contains('\n') {
            return Err(Error::invalid_input("an event line holds a newline"));
        }
        prev = Some(seq);
        bytes.extend_from_slice(e.line.as_bytes());
        bytes.push(b'\n');
    }
    let first = i64::try_from(first.meta.seq).unwrap_or(i64::MAX);
    Ok(prev.map(|last| (last, first, bytes)))
}

/// A batch as the parameters of the statements that store it: the session's
/// chunks (offset, length, deflated or not, bytes) and the events' row.
struct Rows<'a> {
    offs: Vec<i64>,
    lens: Vec<i64>,
    zs: Vec<bool>,
    parts: Vec<std::borrow::Cow<'a, [u8]>>,
    first: Option<i64>,
    last: Option<i64>,
    len: Option<i64>,
    z: Option<bool>,
    lines: Option<Vec<u8>>,
}

impl Rows<'_> {
    /// `batch` appended to a session of `at` bytes and a log whose last seq is `last`.
    fn of(batch: &WriteBatch, at: i64, last: Option<i64>) -> Result<Rows<'_>> {
        let (offs, parts) = chunks(&batch.session, at)?;
        let lens = parts.iter().map(|p| to_i64(p.len() as u64)).collect();
        let (zs, parts) = parts.into_iter().map(pack).unzip();
        let mut r = Rows {
            offs,
            lens,
            zs,
            parts,
            first: None,
            last: None,
            len: None,
            z: None,
            lines: None,
        };
        if let Some((l, f, lines)) = event_row(&batch.events, last)? {
            let (z, packed) = pack(&lines);
            (r.last, r.first, r.len) = (Some(l), Some(f), Some(to_i64(lines.len() as u64)));
            (r.z, r.lines) = (Some(z), Some(packed.into_owned()));
        }
        Ok(r)
    }
}

/// The seq an event line starts with (`{"seq":N,…`: the log writes it first).
fn seq_of(line: &[u8]) -> Option<u64> {
    let rest = line.strip_prefix(b"{\"seq\":")?;
    let end = rest.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// The complete lines of an events row (a last line without its newline was
/// never acknowledged), without their newlines.
fn row_lines(bytes: &[u8]) -> impl DoubleEndedIterator<Item = &[u8]> {
    let end = bytes.iter().rposition(|&b| b == b'\n').unwrap_or(0);
    let whole = if bytes.contains(&b'\n') {
        &bytes[..end]
    } else {
        &[][..]
    };
    whole
        .split(|&b| b == b'\n')
        .filter(move |_| bytes.contains(&b'\n'))
}

/// The lines of an events row read with its `len` and `z` (columns 1 to 3).
fn events_bytes(row: &postgres::Row) -> Result<Option<Vec<u8>>> {
    match (
        row.get::<_, Option<i64>>(1),
        row.get::<_, Option<bool>>(2),
        row.get::<_, Option<Vec<u8>>>(3),
    ) {
        (Some(len), Some(z), Some(bytes)) => unpack(z, bytes, len, "an events row").map(Some),
        _ => Ok(None),
    }
}

/// An event line as text.
fn event_text(line: &[u8], id: &str) -> Result<Arc<str>> {
    std::str::from_utf8(line)
        .map(Arc::from)
        .map_err(|_| Error::corrupted(format!("an event line of agent '{id}' is not UTF-8")))
}

fn locked(id: &str, holder: &str, left_ms: i64) -> Error {
    Error::new(
        ErrorCode::AgentLocked,
        format!(
            "agent '{id}' is open on another host, in another process or in another Agent object (held by {holder}; its lease runs out in {} ms unless renewed)",
            left_ms.max(0)
        ),
    )
}

impl PgStorage {
    /// Connects to the database, creates or migrates the tables
    /// (`UNSUPPORTED_FORMAT` when they are newer than this build), and keeps
    /// the connection for later calls. `options` is a connection string or
    /// [`PgOptions`]. A server that cannot be reached or refuses the
    /// credentials is `STORE_UNAVAILABLE`; a malformed connection string or
    /// option `INVALID_INPUT`.
    pub fn connect(options: impl Into<PgOptions>) -> Result<PgStorage> {
        let o: PgOptions = options.into();
        check_schema_name(&o.schema)?;
        if o.lease_ms == 0 || o.lease_ms > 365 * 24 * 3_600_000 {
            return Err(Error::invalid_input(
                "leaseMs must be between 1 ms and one year",
            ));
        }
        let (url, tls) = crate::tls::split(&o.url)?;
        let (tls, ssl_mode) = Tls::new(&tls)?;
        let mut config = Config::from_str(&url).map_err(|e| {
            Error::invalid_input(format!(
                "the PostgreSQL connection string is not valid: {e}"
            ))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_millis(o.connect_timeout_ms.max(1)));
        }
        if config.get_application_name().is_none() {
            config.application_name("forkpoint");
        }
        // A connection to a server that stopped answering (a partition) fails
        // after this instead of waiting for the kernel's retransmissions
        // (minutes): the write's outcome is then decided by its transaction.
        if config.get_tcp_user_timeout().is_none() {
            let ms = o.lease_ms.saturating_mul(2).clamp(5_000, 60_000);
            config.tcp_user_timeout(Duration::from_millis(ms));
        }
        // A client frozen or cut off inside a transaction (between the
        // statements of a takeover, say) must not keep an agent's row locked
        // for ever: the server ends such a session, and a wait for a row lock
        // gives up, after a lease's time (at least a second).
        let wait = o.lease_ms.clamp(1_000, 600_000);
        let mut options = config.get_options().unwrap_or_default().to_string();
        for (name, value) in [
            ("idle_in_transaction_session_timeout", wait),
            ("lock_timeout", wait),
        ] {
            if !options.contains(name) {
                options.push_str(&format!(" -c {name}={value}"));
            }
        }
        config.options(options.trim());
        let config = Connector::new(crate::tls::checked(config, ssl_mode)?, tls);
        let pool = Pool::new(config.clone(), o.pool_size);
        pool.with(|c| migrate(c, &o.schema))?;
        let host = o.host.clone().unwrap_or_else(host_name);
        let lease_ms = to_i64(o.lease_ms);
        Ok(PgStorage {
            pool,
            sql: Sql::new(&o.schema),
            keeper: Keeper::new(config.clone(), &o.schema, lease_ms, o.keep_leases),
            notifier: Notifier::new(config.clone(), &o.schema),
            config,
            watch: OnceLock::new(),
            schema: o.schema,
            lease_ms,
            holder: format!("pid {} on {host}", std::process::id()),
        })
    }

    /// The notifications of this schema's writes (started at the first call):
    /// what followers on this host wake up on.
    pub fn watch(&self) -> Arc<Watch> {
        self.watch
            .get_or_init(|| Watch::start(self.config.clone(), self.schema.clone()))
            .clone()
    }

    /// Closes the idle connections and stops following notifications (the
    /// store's `close`). Agents still open keep their leases and connect
    /// again when they write.
    pub fn close_idle(&self) {
        self.pool.clear_idle();
        if let Some(w) = self.watch.get() {
            w.stop();
        }
    }

    /// How long a lease lasts without a write or a renewal, in milliseconds.
    pub fn lease_ms(&self) -> u64 {
        u64::try_from(self.lease_ms).unwrap_or(0)
    }

    /// The PostgreSQL schema holding the tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The holder this store writes into the leases it takes (`pid N on HOST`).
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// The `meta.json` text of agent `id`, read without its lease (it is
    /// replaced whole by each write): `INVALID_ID`, `AGENT_NOT_FOUND`.
    pub fn read_meta(&self, id: &str) -> Result<Vec<u8>> {
        validate_id(id, "agent")?;
        let row = self.pool.read(|c| {
            c.query_opt(&self.sql.meta, &[&id])
                .pg("reading the agent's meta")
        })?;
        row.map(|r| r.get(0)).ok_or_else(|| agent_not_found(id))
    }

    /// Renews the lease for another `leaseMs` without writing (a write renews
    /// it too): `LEASE_LOST` when it was taken over or released.
    pub fn renew(&self, lease: &Lease) -> Result<()> {
        let token = token_of(lease)?;
        let n = self.pool.with(|c| {
            c.execute(&self.sql.renew, &[&lease.agent_id, &token, &self.lease_ms])
                .pg("renewing the lease")
        })?;
        if n == 1 {
            Ok(())
        } else {
            self.keeper.forget(&lease.agent_id, token);
            Err(lease_lost(&lease.agent_id))
        }
    }

    /// Appends the session bytes and events of `batch` at the given ends
    /// (one statement: one round trip).
    fn append(
        &self,
        tx: &mut Transaction<'_>,
        append: &postgres::Statement,
        id: &str,
        batch: &WriteBatch,
        (session_len, last_seq): (i64, Option<i64>),
        what: &str,
    ) -> Result<()> {
        if batch.session.is_empty() && batch.events.is_empty() {
            return Ok(());
        }
        let r = Rows::of(batch, session_len, last_seq)?;
        tx.query(
            append,
            &[
                &id, &r.offs, &r.lens, &r.zs, &r.parts, &r.last, &r.first, &r.len, &r.z, &r.lines,
            ],
        )
        .pg(what)?;
        Ok(())
    }

    /// Cuts a session chunk tail and an event row without their final newline.
    fn cut_torn(&self, tx: &mut Transaction<'_>, id: &str, what: &str) -> Result<()> {
        while let Some(row) = tx.query_opt(&self.sql.last_chunk, &[&id]).pg(what)? {
            let off: i64 = row.get(0);
            let bytes = unpack(row.get(2), row.get(3), row.get(1), "a session chunk")?;
            if bytes.last() == Some(&b'\n') {
                break;
            }
            match bytes.iter().rposition(|&b| b == b'\n') {
                Some(i) => {
                    let (z, kept) = pack(&bytes[..=i]);
                    let len = to_i64(i as u64 + 1);
                    tx.execute(&self.sql.cut_chunk, &[&id, &off, &&*kept, &len, &z])
                        .pg(what)?;
                    break;
                }
                None => {
                    tx.execute(&self.sql.drop_chunk, &[&id, &off]).pg(what)?;
                }
            }
        }
        // The last events row: cut after its last complete line.
        if let Some(row) = tx.query_opt(&self.sql.last_events, &[&id]).pg(what)? {
            let (seq, first): (i64, i64) = (row.get(0), row.get(1));
            let bytes = unpack(row.get(3), row.get(4), row.get(2), "an events row")?;
            if bytes.last() != Some(&b'\n') {
                tx.execute(&self.sql.drop_events, &[&id, &seq]).pg(what)?;
                let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                if let Some(last) = row_lines(&bytes).next_back().and_then(seq_of) {
                    let last = i64::try_from(last).unwrap_or(i64::MAX);
                    let (z, kept) = pack(&bytes[..keep]);
                    let len = to_i64(keep as u64);
                    tx.execute(
                        &self.sql.put_events,
                        &[&id, &last, &first, &len, &z, &&*kept],
                    )
                    .pg(what)?;
                }
            }
        }
        Ok(())
    }

    fn create_sync(&self, id: &str, init: &WriteBatch) -> Result<Lease> {
        validate_id(id, "agent")?;
        let Some(meta) = &init.meta else {
            return Err(Error::invalid_input("a new agent needs its meta"));
        };
        if init.session_at != 0 {
            return Err(Error::internal(format!(
                "a new agent's session written at byte {}",
                init.session_at
            )));
        }
        let what = "creating the agent";
        self.pool.with(|c| {
            let append = c.prep(&self.sql.append)?;
            let mut tx = c.transaction().pg(what)?;
            let row = tx
                .query_opt(
                    &self.sql.create,
                    &[
                        &id,
                        &self.holder,
                        &self.lease_ms,
                        meta,
                        &init.hint,
                        &init.state,
                    ],
                )
                .pg(what)?;
            let Some(row) = row else {
                return Err(already_exists(id));
            };
            let token: i64 = row.get(0);
            self.append(&mut tx, &append, id, init, (0, None), what)?;
            tx.commit().pg(what)?;
            self.keeper.hold(id, token);
            if let Some(e) = init.events.last() {
                self.notifier.committed(id, e.meta.seq);
            }
            Ok(Lease {
                agent_id: id.to_string(),
                token: u64::try_from(token).unwrap_or(0),
            })
        })
    }

    /// Locks agent `id`'s row in `tx`: `AGENT_NOT_FOUND`, or `AGENT_LOCKED`
    /// while another holds a live lease.
    fn lock_unheld(&self, tx: &mut postgres::Transaction<'_>, id: &str, what: &str) -> Result<()> {
        let Some(row) = tx.query_opt(&self.sql.lock_agent, &[&id]).pg(what)? else {
            return Err(agent_not_found(id));
        };
        let holder: Option<String> = row.get(0);
        let live: Option<bool> = row.get(1);
        if let (Some(h), Some(true)) = (&holder, live) {
            let left: Option<i64> = row.get(2);
            return Err(locked(id, h, left.unwrap_or(0)));
        }
        Ok(())
    }

    /// Locks agent `id`'s row in `tx` and checks that lease `token` is still
    /// the current one (`LEASE_LOST` otherwise).
    fn lock_unheld_but(
        &self,
        tx: &mut postgres::Transaction<'_>,
        id: &str,
        token: i64,
        what: &str,
    ) -> Result<()> {
        tx.execute(&self.sql.lock_agent, &[&id]).pg(what)?;
        let row = tx
            .query_opt(&self.sql.ends, &[&id])
            .pg(what)?
            .ok_or_else(|| agent_not_found(id))?;
        if row.get::<_, i64>(0) == token {
            Ok(())
        } else {
            Err(lease_lost(id))
        }
    }

    fn acquire_sync(&self, id: &str) -> Result<Lease> {
        validate_id(id, "agent")?;
        let what = "taking the agent's lease";
        // Usually one statement; a held agent, or a torn log, takes more.
        for _ in 0..3 {
            let row = self.pool.with(|c| {
                let take = c.prep(&self.sql.take_free)?;
                c.query_opt(&take, &[&id, &self.holder, &self.lease_ms])
                    .pg(what)
            })?;
            let Some(row) = row else {
                // Not found, or held: which (a lease that ran out meanwhile is tried again).
                self.pool.with(|c| {
                    let mut tx = c.transaction().pg(what)?;
                    self.lock_unheld(&mut tx, id, what)
                })?;
                continue;
            };
            let token: i64 = row.get(0);
            if row.get::<_, bool>(1) {
                self.pool.with(|c| {
                    let mut tx = c.transaction().pg(what)?;
                    self.lock_unheld_but(&mut tx, id, token, what)?;
                    self.cut_torn(&mut tx, id, what)?;
                    tx.commit().pg(what)
                })?;
            }
            self.keeper.hold(id, token);
            return Ok(Lease {
                agent_id: id.to_string(),
                token: u64::try_from(token).unwrap_or(0),
            });
        }
        Err(Error::new(
            ErrorCode::AgentLocked,
            format!("agent '{id}' is being taken and released by others: try again"),
        ))
    }

    fn head_sync(&self, lease: &Lease) -> Result<AgentHead> {
        let id = lease.agent_id.as_str();
        let token = token_of(lease)?;
        let what = "reading the agent";
        let row = self.pool.read(|c| {
            let head = c.prep(&self.sql.head)?;
            c.query_opt(&head, &[&id, &token]).pg(what)
        })?;
        let Some(row) = row else {
            return Err(lease_lost(id));
        };
        let meta: Vec<u8> = row.get(0);
        let hint: Option<Vec<u8>> = row.get(1);
        let state: Option<Vec<u8>> = row.get(2);
        let len: Option<i64> = row.get(3);
        let last_row = match (
            row.get::<_, Option<i64>>(4),
            row.get::<_, Option<bool>>(5),
            row.get::<_, Option<Vec<u8>>>(6),
        ) {
            (Some(n), Some(z), Some(bytes)) => Some(unpack(z, bytes, n, "an events row")?),
            _ => None,
        };
        let last_line = match &last_row {
            Some(bytes) => match row_lines(bytes).next_back() {
                Some(l) => Some(event_text(l, id)?),
                // A row without a whole line (only a raw one): read further back.
                None => self.tail_events_sync(id, 1)?.pop(),
            },
            None => None,
        };
        let last_event = match last_line {
            Some(line) => Some(
                parse_event_line(&line, 512)
                    .map_err(|e| Error::corrupted(format!("the last event of agent '{id}': {e}")))?
                    .bookmark(),
            ),
            None => None,
        };
        Ok(AgentHead {
            meta,
            session_len: u64::try_from(len.unwrap_or(0)).unwrap_or(0),
            last_event,
            hint,
            state,
        })
    }

    fn read_session_sync(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
        validate_id(id, "agent")?;
        let (start, end) = (to_i64(start), to_i64(end));
        let rows = self.pool.read(|c| {
            let st = c.prep(&self.sql.read_session)?;
            c.query(&st, &[&id, &start, &end]).pg("reading the session")
        })?;
        let mut out = Vec::new();
        for row in rows {
            let found: bool = row.get(0);
            if !found {
                return Err(agent_not_found(id));
            }
            let (Some(off), Some(len), Some(z), Some(bytes)) = (
                row.get::<_, Option<i64>>(1),
                row.get::<_, Option<i64>>(2),
                row.get::<_, Option<bool>>(3),
                row.get::<_, Option<Vec<u8>>>(4),
            ) else {
                continue;
            };
            let bytes = unpack(z, bytes, len, "a session chunk")?;
            // The part of [off, off + len) inside [start, end).
            let len = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
            let from = (start.max(off) - off).clamp(0, len);
            let to = (end.min(off.saturating_add(len)) - off).clamp(from, len);
            out.extend_from_slice(&bytes[from as usize..to as usize]);
        }
        Ok(out)
    }

    /// The event lines with a seq above `since`, at most `limit`, oldest first.
    fn read_events_sync(&self, id: &str, since: i64, limit: usize) -> Result<Vec<Arc<str>>> {
        validate_id(id, "agent")?;
        let rows_max = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
        let rows = self.pool.read(|c| {
            let st = c.prep(&self.sql.read_events)?;
            c.query(&st, &[&id, &since, &rows_max])
                .pg("reading the events")
        })?;
        let mut out = Vec::new();
        for row in rows {
            if !row.get::<_, bool>(0) {
                return Err(agent_not_found(id));
            }
            let Some(bytes) = events_bytes(&row)? else {
                continue;
            };
            for line in row_lines(&bytes) {
                if out.len() >= limit {
                    return Ok(out);
                }
                if seq_of(line).is_some_and(|q| i64::try_from(q).unwrap_or(i64::MAX) > since) {
                    out.push(event_text(line, id)?);
                }
            }
        }
        Ok(out)
    }

    /// The last `count` event lines (fewer when the log is shorter), oldest
    /// first, read in `tx`: rows from the end until they hold enough.
    fn tail_in(
        &self,
        tx: &mut impl postgres::GenericClient,
        id: &str,
        count: usize,
        what: &str,
    ) -> Result<Vec<Arc<str>>> {
        let mut out: Vec<Arc<str>> = Vec::new();
        let mut before = i64::MAX;
        while out.len() < count {
            let rows = tx
                .query(&self.sql.tail_events, &[&id, &before, &16i64])
                .pg(what)?;
            let mut any = false;
            for row in rows {
                if !row.get::<_, bool>(0) {
                    return Err(agent_not_found(id));
                }
                let Some(bytes) = events_bytes(&row)? else {
                    continue;
                };
                any = true;
                for line in row_lines(&bytes).rev() {
                    if out.len() < count {
                        out.push(event_text(line, id)?);
                    }
                }
                if let Some(q) = row_lines(&bytes).next().and_then(seq_of) {
                    before = i64::try_from(q).unwrap_or(i64::MAX);
                }
            }
            if !any {
                break;
            }
        }
        out.reverse();
        Ok(out)
    }

    pub(crate) fn tail_events_sync(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>> {
        validate_id(id, "agent")?;
        self.pool
            .read(|c| self.tail_in(&mut **c, id, count, "reading the events"))
    }

    /// Writes `batch`; a connection that broke is replaced and the write
    /// tried again (twice at most), after checking whether the broken attempt
    /// was committed after all (the break can come after the commit was sent).
    fn write_sync(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        self.write_retrying(lease, batch)?;
        if let Some(e) = batch.events.last() {
            self.notifier.committed(&lease.agent_id, e.meta.seq);
        }
        Ok(())
    }

    fn write_retrying(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        let mut tries = 0u32;
        loop {
            match self.write_once(lease, batch) {
                Err(e) if e.code == ErrorCode::StoreUnavailable && tries < 2 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(25 << tries));
                    match self.landed(lease, batch) {
                        Ok(true) => return Ok(()),
                        Ok(false) => {}
                        Err(e2) if e2.code == ErrorCode::LeaseLost => return Err(e2),
                        Err(_) => return Err(e),
                    }
                }
                r => return r,
            }
        }
    }

    /// Whether `batch` is stored (after a write whose connection broke):
    /// `LEASE_LOST` if another holder took the agent meanwhile.
    fn landed(&self, lease: &Lease, batch: &WriteBatch) -> Result<bool> {
        let id = lease.agent_id.as_str();
        let token = token_of(lease)?;
        let row = self.pool.fresh(|c| {
            c.query_opt(&self.sql.ends, &[&id])
                .pg("checking a write whose connection broke")
        })?;
        let Some(row) = row else {
            return Err(agent_not_found(id));
        };
        if row.get::<_, i64>(0) != token {
            self.keeper.forget(id, token);
            return Err(lease_lost(id));
        }
        let len = row.get::<_, Option<i64>>(1).unwrap_or(0);
        let last = row.get::<_, Option<i64>>(2);
        if !batch.session.is_empty() {
            let end = batch.session_at + batch.session.len() as u64;
            return Ok(u64::try_from(len).ok() == Some(end));
        }
        if let Some(e) = batch.events.last() {
            return Ok(last.and_then(|l| u64::try_from(l).ok()) >= Some(e.meta.seq));
        }
        // Only meta, hint or state: writing them again changes nothing.
        Ok(false)
    }

    fn write_once(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        let id = lease.agent_id.as_str();
        let token = token_of(lease)?;
        let what = "writing the agent";
        let at = i64::try_from(batch.session_at).map_err(|_| {
            Error::internal(format!(
                "a batch for byte {} of a session (beyond 2^63)",
                batch.session_at
            ))
        })?;
        let r = Rows::of(batch, at, None)?;
        let stored: bool = self.pool.with(|c| {
            let write = c.prep(&self.sql.write)?;
            let row = c
                .query_one(
                    &write,
                    &[
                        &id,
                        &token,
                        &self.lease_ms,
                        &batch.meta,
                        &batch.hint,
                        &batch.state,
                        &at,
                        &r.offs,
                        &r.lens,
                        &r.zs,
                        &r.parts,
                        &r.first,
                        &r.last,
                        &r.len,
                        &r.z,
                        &r.lines,
                    ],
                )
                .pg(what)
                .map_err(|mut e| {
                    if e.code == ErrorCode::StoreUnavailable {
                        e.message.push_str(
                            " (the connection broke during the write: the batch may or may not be stored)",
                        );
                    }
                    e
                })?;
            Ok(row.get(0))
        })?;
        if stored {
            return Ok(());
        }
        // Nothing was stored: say why.
        let row = self
            .pool
            .read(|c| c.query_opt(&self.sql.ends, &[&id]).pg(what))?;
        let Some(row) = row else {
            return Err(agent_not_found(id));
        };
        if row.get::<_, i64>(0) != token || !row.get::<_, bool>(3) {
            self.keeper.forget(id, token);
            return Err(lease_lost(id));
        }
        let end = row.get::<_, Option<i64>>(1).unwrap_or(0);
        if end != at {
            return Err(Error::internal(format!(
                "a batch for byte {at} of a session of {end} bytes"
            )));
        }
        let max = row.get::<_, Option<i64>>(2).unwrap_or(0);
        Err(Error::internal(format!(
            "an event with seq {} after seq {max}: seqs must increase",
            r.first.unwrap_or(0)
        )))
    }

    fn release_sync(&self, lease: &Lease) -> Result<()> {
        let Ok(token) = token_of(lease) else {
            return Ok(());
        };
        self.keeper.forget(&lease.agent_id, token);
        self.pool.with(|c| {
            c.execute(&self.sql.release, &[&lease.agent_id, &token])
                .pg("releasing the lease")
        })?;
        Ok(())
    }

    fn list_sync(&self) -> Result<Vec<Listed>> {
        let rows = self
            .pool
            .read(|c| c.query(&self.sql.list, &[]).pg("listing the agents"))?;
        Ok(rows
            .into_iter()
            .map(|row| Listed {
                id: row.get(0),
                meta: Ok(row.get(1)),
            })
            .collect())
    }

    fn exists_sync(&self, id: &str) -> Result<bool> {
        if validate_id(id, "agent").is_err() {
            return Ok(false);
        }
        let row = self.pool.read(|c| {
            c.query_opt(&self.sql.exists, &[&id])
                .pg("looking the agent up")
        })?;
        Ok(row.is_some())
    }

    fn delete_sync(&self, id: &str) -> Result<()> {
        validate_id(id, "agent")?;
        let what = "deleting the agent";
        self.pool.with(|c| {
            let mut tx = c.transaction().pg(what)?;
            self.lock_unheld(&mut tx, id, what)?;
            tx.execute(&self.sql.delete, &[&id]).pg(what)?;
            tx.commit().pg(what)
        })
    }
}

impl AgentStorage for PgStorage {
    async fn create(&self, id: &str, init: &WriteBatch) -> Result<Lease> {
        self.create_sync(id, init)
    }

    async fn acquire(&self, id: &str) -> Result<Lease> {
        self.acquire_sync(id)
    }

    async fn head(&self, lease: &Lease) -> Result<AgentHead> {
        self.head_sync(lease)
    }

    async fn read_session(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
        self.read_session_sync(id, start, end)
    }

    async fn read_events(
        &self,
        id: &str,
        since: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Arc<str>>> {
        // Seqs start at 1 or later: "after -1" is the whole log.
        self.read_events_sync(id, since.map_or(-1, to_i64), limit)
    }

    async fn tail_events(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>> {
        self.tail_events_sync(id, count)
    }

    async fn write(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        self.write_sync(lease, batch)
    }

    async fn release(&self, lease: &Lease) -> Result<()> {
        self.release_sync(lease)
    }

    async fn list(&self) -> Result<Vec<Listed>> {
        self.list_sync()
    }

    async fn exists(&self, id: &str) -> Result<bool> {
        self.exists_sync(id)
    }

    async fn delete(&self, id: &str) -> Result<()> {
        self.delete_sync(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(bytes: &[u8]) -> Vec<(i64, Vec<u8>)> {
        let (offs, parts) = chunks(bytes, 100).unwrap();
        offs.into_iter()
            .zip(parts.into_iter().map(<[u8]>::to_vec))
            .collect()
    }

    #[test]
    fn chunks_end_lines_and_cover_the_bytes() {
        assert!(cut(b"").is_empty());
        assert_eq!(cut(b"a\nb\n"), [(100, b"a\nb\n".to_vec())]);
        // Many short lines: chunks of about CHUNK bytes, each ending a line.
        let line = b"0123456789abcde\n";
        let many: Vec<u8> = line
            .iter()
            .copied()
            .cycle()
            .take(line.len() * 50_000)
            .collect();
        let got = cut(&many);
        assert!(got.len() >= 3, "{}", got.len());
        let mut at = 100;
        let mut joined = Vec::new();
        for (off, part) in &got {
            assert_eq!(*off, at);
            assert_eq!(part.last(), Some(&b'\n'));
            assert!(part.len() <= CHUNK + line.len());
            at += part.len() as i64;
            joined.extend_from_slice(part);
        }
        assert_eq!(joined, many);
        // A line longer than a chunk stays whole.
        let mut long = vec![b'x'; CHUNK * 2 + 5];
        long.push(b'\n');
        long.extend_from_slice(b"y\n");
        let got = cut(&long);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].1.len(), CHUNK * 2 + 6);
        assert_eq!(got[1], (100 + CHUNK as i64 * 2 + 6, b"y\n".to_vec()));
    }

    #[test]
    fn rows_split_into_whole_lines_with_their_seqs() {
        let row = b"{\"seq\":7,\"x\":1}\n{\"seq\":9,\"x\":2}\n{\"seq\":1";
        let lines: Vec<&[u8]> = row_lines(row).collect();
        assert_eq!(lines.len(), 2, "the torn last line is not one");
        assert_eq!(
            lines.iter().map(|l| seq_of(l)).collect::<Vec<_>>(),
            [Some(7), Some(9)]
        );
        assert_eq!(row_lines(b"{\"seq\":1").count(), 0);
        assert_eq!(row_lines(b"").count(), 0);
        assert_eq!(row_lines(b"a\n").collect::<Vec<_>>(), [b"a"]);
        assert_eq!(seq_of(b"{\"seq\":x}"), None);
    }

    #[test]
    fn schema_names() {
        for ok in ["forkpoint", "_x", "a1_b"] {
            assert!(check_schema_name(ok).is_ok(), "{ok}");
        }
        let long = "a".repeat(64);
        for bad in [
            "",
            "A",
            "1a",
            "a-b",
            "a b",
            "pg_catalog",
            "é",
            long.as_str(),
        ] {
            assert!(check_schema_name(bad).is_err(), "{bad}");
        }
    }
}
