//! The tables, created and migrated by the library.
//!
//! Version 1, in schema `S` (default `forkpoint`):
//!
//! ```sql
//! S.forkpoint_schema (version integer)          -- one row: the schema's version
//! S.agents (id text COLLATE "C" PRIMARY KEY,    -- sorted by bytes, as the file store lists
//!           meta bytea,                         -- meta.json's text
//!           token bigint,                       -- the last fencing token handed out
//!           holder text,                        -- "pid N on HOST" while held, NULL when released
//!           lease_until timestamptz,            -- when the lease runs out (the database's clock)
//!           hint bytea, state bytea,            -- the resume hint and resume state (caches)
//!           created_at timestamptz)
//! S.session_chunks (agent_id, off bigint, len bigint, z boolean, bytes bytea,
//!                   PRIMARY KEY (agent_id, off))
//!                                               -- whole lines, each chunk at its byte offset;
//!                                               -- len bytes, deflated when z
//! S.events (agent_id, seq bigint, first_seq bigint, len bigint, z boolean, lines bytea,
//!           PRIMARY KEY (agent_id, seq)) -- len bytes, deflated when z
//!                                               -- the event lines of one write, each with its
//!                                               -- newline; seq is the last one's, first_seq the first's
//! S.lease_tokens                                -- the sequence tokens are drawn from
//! ```
//!
//! A step's rows are deflated by the library when that saves a tenth (see
//! `pack.rs`): they are below the size PostgreSQL compresses by itself.
//!
//! Session chunks and events go with their agent (`ON DELETE CASCADE`).

use forkpoint_core::{Error, ErrorCode, Result};
use postgres::Client;

use crate::error::Pg;

/// The version of the tables this build creates and reads. A database whose
/// `forkpoint_schema` names a newer version is `UNSUPPORTED_FORMAT`; an older
/// one is migrated when a store connects.
pub const SCHEMA_VERSION: i32 = 1;

/// Whether `name` can name the schema: a lowercase SQL identifier
/// (`[a-z_][a-z0-9_]{0,62}`), so it needs no quoting rules beyond quotes.
pub(crate) fn check_schema_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit()
        && !name.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(format!(
            "schema name '{name}' is not allowed: lowercase letters, digits and '_', not starting with a digit or 'pg_', at most 63 characters"
        )))
    }
}

/// Creates the schema and its tables, or migrates them to [`SCHEMA_VERSION`];
/// one connecting store at a time (an advisory lock), all in one transaction.
pub(crate) fn migrate(client: &mut Client, schema: &str) -> Result<()> {
    let what = "preparing the agent store's tables";
    let mut tx = client.transaction().pg(what)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('forkpoint-schema:' || $1))",
        &[&schema],
    )
    .pg(what)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS \"{schema}\";
         CREATE TABLE IF NOT EXISTS \"{schema}\".forkpoint_schema (version integer NOT NULL);"
    ))
    .pg(what)?;
    let found: Option<i32> = tx
        .query_opt(
            &format!("SELECT max(version) FROM \"{schema}\".forkpoint_schema"),
            &[],
        )
        .pg(what)?
        .and_then(|row| row.get(0));
    match found {
        Some(v) if v > SCHEMA_VERSION => {
            return Err(Error::new(
                ErrorCode::UnsupportedFormat,
                format!(
                    "the agent store in schema '{schema}' is at version {v}, newer than this forkpoint reads ({SCHEMA_VERSION}); upgrade forkpoint"
                ),
            ));
        }
        Some(v) if v == SCHEMA_VERSION => return Ok(()),
        Some(v) => {
            // Versions before 1 never existed: a row below 1 is damage.
            return Err(Error::new(
                ErrorCode::CorruptedData,
                format!(
                    "the agent store in schema '{schema}' names version {v}, which never existed"
                ),
            ));
        }
        None => {}
    }
    tx.batch_execute(&format!(
        "CREATE TABLE \"{schema}\".agents (
            id text COLLATE \"C\" PRIMARY KEY,
            meta bytea NOT NULL,
            token bigint NOT NULL,
            holder text,
            lease_until timestamptz,
            hint bytea,
            state bytea,
            created_at timestamptz NOT NULL DEFAULT now()
         );
         CREATE TABLE \"{schema}\".session_chunks (
            agent_id text COLLATE \"C\" NOT NULL REFERENCES \"{schema}\".agents (id) ON DELETE CASCADE,
            off bigint NOT NULL,
            len bigint NOT NULL,
            z boolean NOT NULL,
            bytes bytea NOT NULL,
            PRIMARY KEY (agent_id, off)
         );
         CREATE TABLE \"{schema}\".events (
            agent_id text COLLATE \"C\" NOT NULL REFERENCES \"{schema}\".agents (id) ON DELETE CASCADE,
            seq bigint NOT NULL,
            first_seq bigint NOT NULL,
            len bigint NOT NULL,
            z boolean NOT NULL,
            lines bytea NOT NULL,
            PRIMARY KEY (agent_id, seq)
         );
         CREATE SEQUENCE \"{schema}\".lease_tokens;
         INSERT INTO \"{schema}\".forkpoint_schema (version) VALUES ({SCHEMA_VERSION});"
    ))
    .pg(what)?;
    tx.commit().pg(what)
}
