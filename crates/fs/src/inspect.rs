//! What the store knows of an agent, read through [`FileStorage`] without
//! taking the agent's lease (for `forkpoint show`, while another process may
//! run the agent): its `meta.json`, its session (whole) and the tail of its
//! event log.

use forkpoint_core::agent::AgentCore;
use forkpoint_core::agent::runtime::last_breakpoint;
use forkpoint_core::events::parse_event_line;
use forkpoint_core::storage::AgentStorage;
use forkpoint_core::{Error, LoadOptions, Result, Session};
use serde_json::{Value, json};

use crate::io::scan_threads;
use crate::storage::{FileStorage, validate_id};

/// `{meta, breakpoint, lastBookmark, messageCount, lastSfpIndex, leafId,
/// openCalls, toolCalls, snapshots, checkpoints}` of agent `id`:
/// `breakpoint` is where the agent was when it last wrote (its last
/// `breakpoint_changed` event; `READY` if none), `openCalls` the calls of the
/// current path without a result (`{id, name, arguments, state}`; `state` null
/// when only the transcript has the call), `checkpoints` grouped by execution
/// (`{executionId, checkpoints}`). `INVALID_ID`, `AGENT_NOT_FOUND`,
/// `CORRUPTED_DATA` (a `meta.json` that is not this agent's).
pub async fn inspect(store: &FileStorage, id: &str) -> Result<Value> {
    validate_id(id)?;
    let dir = store.root().join(id);
    let path = |f: &str| dir.join(f).display().to_string();
    let meta = store.read_meta(id)?;
    inspect_in(store, id, &meta, &path).await
}

/// [`inspect`] for any store: `meta` is the agent's `meta.json` as stored
/// (read without its lease), `path` names a part (`meta.json`,
/// `session.jsonl`, `events.jsonl`) in errors.
pub async fn inspect_in<S: AgentStorage>(
    store: &S,
    id: &str,
    meta: &[u8],
    path: &dyn Fn(&str) -> String,
) -> Result<Value> {
    let meta: Value = serde_json::from_slice(meta).map_err(|e| {
        Error::corrupted(format!("meta.json is not valid JSON: {e}")).with_path(path("meta.json"))
    })?;
    if meta.get("agentId").and_then(Value::as_str) != Some(id) {
        return Err(
            Error::corrupted(format!("meta.json does not describe agent '{id}'"))
                .with_path(path("meta.json")),
        );
    }
    let bytes = store.read_session(id, 0, u64::MAX).await?;
    let s = Session::from_bytes_threads(
        bytes,
        &LoadOptions::default(),
        Some(path("session.jsonl")),
        scan_threads(),
    )?;
    let mut core = AgentCore::from_session(&s)?;
    let last = match store.tail_events(id, 1).await?.first() {
        Some(line) => Some(
            parse_event_line(line, 512)
                .map_err(|e| {
                    Error::corrupted(format!("the last event is not one: {e}"))
                        .with_path(path("events.jsonl"))
                })?
                .bookmark(),
        ),
        None => None,
    };
    let breakpoint = last_breakpoint(store, id, last).await?;
    let open: Vec<Value> = core
        .open_calls()?
        .into_iter()
        .map(|(id, name, args, rec)| {
            json!({ "id": id, "name": name, "arguments": args, "state": rec.map(|r| r.state) })
        })
        .collect();
    let checkpoints: Vec<Value> = core
        .checkpoints_by_execution()
        .into_iter()
        .map(|(e, c)| json!({ "executionId": e, "checkpoints": c }))
        .collect();
    Ok(json!({
        "meta": meta,
        "breakpoint": breakpoint,
        "lastBookmark": last,
        "messageCount": core.message_count(),
        "lastSfpIndex": core.last_sfp().map_or(-1, |(i, _)| i as i64),
        "leafId": s.leaf_id(),
        "openCalls": open,
        "toolCalls": core.records()?,
        "snapshots": core.snapshots(),
        "checkpoints": checkpoints,
    }))
}
