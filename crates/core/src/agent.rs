//! The durable agent's state over its session (FORMAT.md §14): tool-call
//! records with their audit trail, safe-fork-points, snapshots, checkpoints and
//! the sealing of interrupted calls. No I/O: the caller appends the entries this
//! module writes and hands back every entry it appended ([`AgentCore::observe`]).
//!
//! Records are pi `custom` entries (`customType` `forkpoint.toolcall`,
//! `forkpoint.snapshot`, `forkpoint.checkpoint`), so pi-style tools keep them
//! and leave them out of the model's context.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::entry::EntryKind;
use crate::{Error, ErrorCode, Result, Session};

/// `customType` of a tool-call record.
pub const TOOLCALL: &str = "forkpoint.toolcall";
/// `customType` of a snapshot.
pub const SNAPSHOT: &str = "forkpoint.snapshot";
/// `customType` of a checkpoint.
pub const CHECKPOINT: &str = "forkpoint.checkpoint";
/// `customType` of a message sent while the agent was busy (delivered later
/// as a user message entry carrying the same `queueId`).
pub const QUEUED: &str = "forkpoint.queued";

/// Where the agent's loop is. Persisted before the step it announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum Breakpoint {
    /// Idle: nothing is running.
    #[default]
    Ready,
    /// A model call is about to start.
    PreModel,
    /// A model call is running.
    StreamingModel,
    /// The model asked for tools; none has started.
    ToolPending,
    /// A tool call waits for a decision (`decide`).
    AwaitingApproval,
    /// A tool is about to run.
    PreTool,
    /// A tool is running.
    ToolExecuting,
    /// A tool finished; its result is stored.
    PostTool,
}

/// The state of a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum ToolCallState {
    /// Asked for by the model; not yet checked or run.
    Pending,
    /// Waiting for a decision.
    ApprovalRequired,
    /// Allowed; not yet started.
    Approved,
    /// Running (this record is durable before the tool starts).
    Executing,
    /// Finished with a result.
    Completed,
    /// Finished with an error (or the tool does not exist).
    Failed,
    /// Refused by a decision.
    Denied,
    /// Closed by forkpoint after a crash or an interrupt, with an error result.
    Sealed,
}

impl ToolCallState {
    /// Whether the call has its result (no further change).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ToolCallState::Completed
                | ToolCallState::Failed
                | ToolCallState::Denied
                | ToolCallState::Sealed
        )
    }

    fn as_str(self) -> &'static str {
        match self {
            ToolCallState::Pending => "PENDING",
            ToolCallState::ApprovalRequired => "APPROVAL_REQUIRED",
            ToolCallState::Approved => "APPROVED",
            ToolCallState::Executing => "EXECUTING",
            ToolCallState::Completed => "COMPLETED",
            ToolCallState::Failed => "FAILED",
            ToolCallState::Denied => "DENIED",
            ToolCallState::Sealed => "SEALED",
        }
    }
}

/// One change of a tool call's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct AuditEntry {
    pub state: ToolCallState,
    /// Milliseconds since the epoch.
    pub at: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub note: Option<String>,
}

/// A tool call as its records tell it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ToolCallRecord {
    /// The model's tool-call id.
    pub id: String,
    pub name: String,
    pub state: ToolCallState,
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub input: Value,
    /// Whether the call needed a decision, and the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "ts",
        ts(
            optional,
            type = "{ decision: 'allow' | 'deny', note?: string } | undefined"
        )
    )]
    pub approval: Option<Value>,
    /// What the tool returned (or the error), once terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub is_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub started_at: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub completed_at: Option<f64>,
    /// Every state the call went through, oldest first.
    pub audit: Vec<AuditEntry>,
}

/// A named safe-fork-point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SnapshotInfo {
    /// The label, or `sfp:{index}`.
    pub id: String,
    /// The session entry of the safe-fork-point (the last entry a fork copies).
    pub entry_id: String,
    /// Index of that message among the context messages.
    pub sfp_index: u64,
    pub created_at: f64,
}

/// A checkpoint of a workflow execution (the `/checkpoint` flow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct CheckpointInfo {
    /// `ckpt-{executionId}-{stepIndex}`.
    pub id: String,
    pub execution_id: String,
    pub step_name: String,
    pub step_index: u64,
    /// `'success'` unless given.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub state: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub context: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "Record<string, unknown>"))]
    pub variables: Option<Value>,
    /// The session entry that was the leaf when it was made (restore moves the leaf there).
    pub entry_id: String,
    pub created_at: f64,
}

/// What a crash resume or an interrupt closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct SealedCall {
    pub id: String,
    pub name: String,
    /// The state the call was in (`PENDING` when only the transcript knew of it).
    pub prior_state: ToolCallState,
    /// Whether a record of the call existed (else it was found in the transcript only).
    pub recorded: bool,
    pub note: String,
    pub recommendations: Vec<String>,
}

/// A message on the current path, as far as the agent cares.
#[derive(Debug, Clone)]
struct PathMsg {
    role: String,
    /// Tool calls of an assistant message: (id, name, arguments).
    calls: Vec<(String, String, Value)>,
}

/// The agent's state as its session's entries tell it.
#[derive(Debug, Default)]
pub struct AgentCore {
    path: Vec<PathMsg>,
    /// Entry ids on the path (for checkpoints and snapshots).
    path_ids: Vec<String>,
    records: Vec<ToolCallRecord>,
    by_id: HashMap<String, usize>,
    answered: HashMap<String, ()>,
    /// Calls of the path without a result message yet (for safe-fork-points).
    unanswered: HashMap<String, ()>,
    /// The safe-fork-points of the path: (index among its messages, entry id).
    sfps: Vec<(u64, String)>,
    snapshots: Vec<SnapshotInfo>,
    checkpoints: Vec<CheckpointInfo>,
    /// Queued messages of the path not yet delivered: (queueId, the entry's data).
    queued: Vec<(String, Value)>,
}

fn custom_type(v: &Value) -> Option<&str> {
    (v.get("type")?.as_str()? == "custom")
        .then(|| v.get("customType")?.as_str())
        .flatten()
}

impl AgentCore {
    /// The state of a loaded session: the current leaf's path, and every
    /// snapshot and checkpoint in the file.
    pub fn from_session(s: &Session) -> Result<AgentCore> {
        let mut core = AgentCore::default();
        for (i, e) in s.entries().iter().enumerate() {
            if e.kind == EntryKind::Custom {
                let v = parse(s.entry_text(i as u32))?;
                match custom_type(&v) {
                    Some(SNAPSHOT) => core.add_snapshot(&v),
                    Some(CHECKPOINT) => core.add_checkpoint(&v),
                    _ => {}
                }
            }
        }
        for i in s.leaf_path() {
            core.observe_path(&parse(s.entry_text(i))?);
        }
        Ok(core)
    }

    /// Takes in an entry the caller appended on the current path, with the id
    /// the writer gave it.
    pub fn observe(&mut self, entry_json: &str, id: &str) -> Result<()> {
        let mut v = parse(entry_json)?;
        if let Value::Object(o) = &mut v {
            o.insert("id".into(), Value::String(id.to_string()));
        }
        match custom_type(&v) {
            Some(SNAPSHOT) => self.add_snapshot(&v),
            Some(CHECKPOINT) => self.add_checkpoint(&v),
            _ => {}
        }
        self.observe_path(&v);
        Ok(())
    }

    fn observe_path(&mut self, v: &Value) {
        let Some(id) = v.get("id").and_then(Value::as_str) else {
            return;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("leaf") | Some("label") => return,
            Some("message") => {
                if let Some(q) = v.get("queueId").and_then(Value::as_str) {
                    self.queued.retain(|(id, _)| id != q);
                }
                let m = &v["message"];
                let role = m.get("role").and_then(Value::as_str).unwrap_or("");
                let mut msg = PathMsg {
                    role: role.to_string(),
                    calls: Vec::new(),
                };
                if role == "assistant" {
                    for b in m
                        .get("content")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if b.get("type").and_then(Value::as_str) == Some("toolCall") {
                            msg.calls.push((
                                b.get("id").and_then(Value::as_str).unwrap_or("").into(),
                                b.get("name").and_then(Value::as_str).unwrap_or("").into(),
                                b.get("arguments").cloned().unwrap_or(Value::Null),
                            ));
                        }
                    }
                } else if let Some(c) = m
                    .get("toolCallId")
                    .and_then(Value::as_str)
                    .filter(|_| role == "toolResult")
                {
                    self.answered.insert(c.to_string(), ());
                    self.unanswered.remove(c);
                }
                for (c, _, _) in &msg.calls {
                    self.unanswered.insert(c.clone(), ());
                }
                // A safe-fork-point: a user message, an answer without tool calls,
                // or the result that completes a batch — nothing left open.
                let safe = match role {
                    "assistant" => msg.calls.is_empty(),
                    _ => self.unanswered.is_empty(),
                };
                if safe {
                    self.sfps.push((self.path.len() as u64, id.to_string()));
                }
                self.path.push(msg);
            }
            Some("custom") if custom_type(v) == Some(TOOLCALL) => self.fold_record(&v["data"]),
            Some("custom") if custom_type(v) == Some(QUEUED) => {
                if let Some(q) = v["data"].get("queueId").and_then(Value::as_str) {
                    self.queued.push((q.to_string(), v["data"].clone()));
                }
            }
            _ => {}
        }
        self.path_ids.push(id.to_string());
    }

    fn fold_record(&mut self, d: &Value) {
        let Some(id) = d.get("id").and_then(Value::as_str) else {
            return;
        };
        let Ok(state) = serde_json::from_value::<ToolCallState>(d["state"].clone()) else {
            return;
        };
        let at = d.get("at").and_then(Value::as_f64).unwrap_or(0.0);
        let note = d.get("note").and_then(Value::as_str).map(str::to_string);
        let i = match self.by_id.get(id) {
            Some(&i) => i,
            None => {
                self.records.push(ToolCallRecord {
                    id: id.to_string(),
                    name: d
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    state,
                    input: d.get("input").cloned().unwrap_or(Value::Null),
                    approval: None,
                    result: None,
                    is_error: None,
                    started_at: None,
                    completed_at: None,
                    audit: Vec::new(),
                });
                self.by_id.insert(id.to_string(), self.records.len() - 1);
                self.records.len() - 1
            }
        };
        let r = &mut self.records[i];
        r.state = state;
        if let Some(a) = d.get("approval") {
            r.approval = Some(a.clone());
        }
        if let Some(x) = d.get("result") {
            r.result = Some(x.clone());
        }
        if let Some(e) = d.get("isError").and_then(Value::as_bool) {
            r.is_error = Some(e);
        }
        if state == ToolCallState::Executing {
            r.started_at = Some(at);
        }
        if state.is_terminal() {
            r.completed_at = Some(at);
        }
        r.audit.push(AuditEntry { state, at, note });
    }

    fn add_snapshot(&mut self, v: &Value) {
        if let Ok(s) = serde_json::from_value::<SnapshotInfo>(v["data"].clone()) {
            self.snapshots.retain(|o| o.id != s.id);
            self.snapshots.push(s);
        }
    }

    fn add_checkpoint(&mut self, v: &Value) {
        if let Ok(c) = serde_json::from_value::<CheckpointInfo>(v["data"].clone()) {
            self.checkpoints.retain(|o| o.id != c.id);
            self.checkpoints.push(c);
        }
    }

    /// The tool-call records of the current path, oldest first.
    pub fn records(&self) -> &[ToolCallRecord] {
        &self.records
    }

    /// The record of a call.
    pub fn record(&self, id: &str) -> Option<&ToolCallRecord> {
        self.by_id.get(id).map(|&i| &self.records[i])
    }

    /// Messages sent while the agent was busy and not yet delivered (the
    /// `forkpoint.queued` entries' data), oldest first.
    pub fn queued(&self) -> Vec<&Value> {
        self.queued.iter().map(|(_, d)| d).collect()
    }

    /// Number of messages on the current path.
    pub fn message_count(&self) -> u64 {
        self.path.len() as u64
    }

    /// Number of user messages on the current path (Kode's step count).
    pub fn user_messages(&self) -> u64 {
        self.path.iter().filter(|m| m.role == "user").count() as u64
    }

    /// The last safe-fork-point: the index (among the path's messages) and entry
    /// of the last user message, assistant message without tool calls, or tool
    /// result that completes its batch. `None` before the first.
    pub fn last_sfp(&self) -> Option<(u64, &str)> {
        self.sfps.last().map(|(i, e)| (*i, e.as_str()))
    }

    /// The calls of the current path without a result, in order, with their
    /// records where they exist.
    pub fn open_calls(&self) -> Vec<(String, String, Value, Option<&ToolCallRecord>)> {
        let mut out = Vec::new();
        for m in &self.path {
            for (id, name, args) in &m.calls {
                if self.answered.contains_key(id) {
                    continue;
                }
                let rec = self.record(id);
                if rec.is_some_and(|r| r.state.is_terminal()) {
                    continue;
                }
                out.push((id.clone(), name.clone(), args.clone(), rec));
            }
        }
        out
    }

    /// The entry of a tool-call record (one state change).
    pub fn record_entry(
        id: &str,
        name: &str,
        state: ToolCallState,
        now_ms: f64,
        extra: Option<&Value>,
    ) -> String {
        let mut data = json!({ "id": id, "name": name, "state": state.as_str(), "at": now_ms });
        if let (Some(Value::Object(x)), Value::Object(d)) = (extra, &mut data) {
            for (k, v) in x {
                if !matches!(k.as_str(), "id" | "name" | "state" | "at") {
                    d.insert(k.clone(), v.clone());
                }
            }
        }
        json!({ "type": "custom", "customType": TOOLCALL, "data": data }).to_string()
    }

    /// The entries that seal every open call of the current path: per call a
    /// `SEALED` record and an error `toolResult` carrying the note and the
    /// recommendations for the state it was in. `note` replaces the crash text
    /// (interrupts). Returns the entries to append, in order, and the calls.
    pub fn seal(&self, now_ms: f64, note: Option<&str>) -> (Vec<String>, Vec<SealedCall>) {
        let mut entries = Vec::new();
        let mut sealed = Vec::new();
        for (id, name, _, rec) in self.open_calls() {
            let prior = rec.map_or(ToolCallState::Pending, |r| r.state);
            let (message, recs) = seal_text(prior, rec.is_some());
            let note = note.map_or(message.to_string(), str::to_string);
            let recommendations: Vec<String> = recs.iter().map(|s| s.to_string()).collect();
            let payload = json!({
                "ok": false,
                "error": note,
                "data": { "status": prior.as_str(), "toolId": id, "recorded": rec.is_some() },
                "recommendations": recommendations,
            });
            let result_msg = json!({
                "type": "message",
                "message": {
                    "role": "toolResult",
                    "toolCallId": id,
                    "toolName": name,
                    "content": [{ "type": "text", "text": payload.to_string() }],
                    "details": payload,
                    "isError": true,
                    "timestamp": now_ms,
                }
            });
            entries.push(Self::record_entry(
                &id,
                &name,
                ToolCallState::Sealed,
                now_ms,
                Some(&json!({ "note": note, "result": payload, "isError": true })),
            ));
            entries.push(result_msg.to_string());
            sealed.push(SealedCall {
                id,
                name,
                prior_state: prior,
                recorded: rec.is_some(),
                note,
                recommendations,
            });
        }
        (entries, sealed)
    }

    /// The entry naming the last safe-fork-point: `label`, or `sfp:{index}`.
    pub fn snapshot_entry(&self, label: Option<&str>, now_ms: f64) -> Result<(String, String)> {
        let (index, entry) = self.last_sfp().ok_or_else(|| {
            Error::new(
                ErrorCode::SnapshotNotFound,
                "the agent has no safe-fork-point yet (send a message first)",
            )
        })?;
        let id = match label {
            Some(l) => {
                check_label(l)?;
                l.to_string()
            }
            None => format!("sfp:{index}"),
        };
        let data = SnapshotInfo {
            id: id.clone(),
            entry_id: entry.to_string(),
            sfp_index: index,
            created_at: now_ms,
        };
        Ok((
            json!({ "type": "custom", "customType": SNAPSHOT, "data": data }).to_string(),
            id,
        ))
    }

    /// A snapshot by id (`sfp:{n}` and `sfp-{n}` name the same one; an
    /// `sfp:{n}` never taken resolves to message `n` of the path if it is a
    /// safe-fork-point).
    pub fn snapshot(&self, id: &str) -> Result<SnapshotInfo> {
        let alt = id
            .strip_prefix("sfp-")
            .map(|n| format!("sfp:{n}"))
            .unwrap_or_else(|| id.to_string());
        if let Some(s) = self
            .snapshots
            .iter()
            .rev()
            .find(|s| s.id == id || s.id == alt)
        {
            return Ok(s.clone());
        }
        // `sfp:{n}` of the current path, named or not.
        if let Some(n) = alt.strip_prefix("sfp:").and_then(|n| n.parse::<u64>().ok())
            && let Some((i, e)) = self.sfps.iter().find(|(i, _)| *i == n)
        {
            return Ok(SnapshotInfo {
                id: format!("sfp:{i}"),
                entry_id: e.clone(),
                sfp_index: *i,
                created_at: 0.0,
            });
        }
        Err(Error::new(
            ErrorCode::SnapshotNotFound,
            format!("no snapshot '{id}'"),
        ))
    }

    /// Every snapshot, oldest first.
    pub fn snapshots(&self) -> &[SnapshotInfo] {
        &self.snapshots
    }

    /// The entry of a new checkpoint at the current leaf (`args` as given by
    /// `checkpoints.create`).
    pub fn checkpoint_entry(&self, args: &Value, now_ms: f64) -> Result<(String, CheckpointInfo)> {
        let bad = |m: &str| Error::invalid_input(format!("checkpoint: {m}"));
        let execution_id = args
            .get("executionId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| bad("executionId (a non-empty string) is required"))?;
        let step_name = args
            .get("stepName")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("stepName (a string) is required"))?;
        let step_index = args
            .get("stepIndex")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("stepIndex (a whole number ≥ 0) is required"))?;
        let entry_id = self
            .path_ids
            .last()
            .ok_or_else(|| bad("the agent has no history to checkpoint yet"))?;
        let c = CheckpointInfo {
            id: format!("ckpt-{execution_id}-{step_index}"),
            execution_id: execution_id.to_string(),
            step_name: step_name.to_string(),
            step_index,
            status: args
                .get("status")
                .and_then(Value::as_str)
                .unwrap_or("success")
                .to_string(),
            state: args.get("state").cloned(),
            context: args.get("context").cloned(),
            variables: args.get("variables").cloned(),
            entry_id: entry_id.clone(),
            created_at: now_ms,
        };
        Ok((
            json!({ "type": "custom", "customType": CHECKPOINT, "data": c }).to_string(),
            c,
        ))
    }

    /// Every checkpoint, oldest first.
    pub fn checkpoints(&self) -> &[CheckpointInfo] {
        &self.checkpoints
    }

    /// A checkpoint by id.
    pub fn checkpoint(&self, id: &str) -> Result<&CheckpointInfo> {
        self.checkpoints
            .iter()
            .rev()
            .find(|c| c.id == id)
            .ok_or_else(|| Error::new(ErrorCode::NotFound, format!("no checkpoint '{id}'")))
    }

    /// Checkpoints grouped by execution (exact match), each group by step.
    pub fn checkpoints_by_execution(&self) -> Vec<(String, Vec<CheckpointInfo>)> {
        let mut groups: Vec<(String, Vec<CheckpointInfo>)> = Vec::new();
        for c in &self.checkpoints {
            match groups.iter_mut().find(|(e, _)| *e == c.execution_id) {
                Some((_, g)) => g.push(c.clone()),
                None => groups.push((c.execution_id.clone(), vec![c.clone()])),
            }
        }
        for (_, g) in &mut groups {
            g.sort_by_key(|c| c.step_index);
        }
        groups
    }

    /// The last checkpoint of `execution_id` with status `success` (before
    /// `before_step` when given).
    pub fn last_successful(
        &self,
        execution_id: &str,
        before_step: Option<u64>,
    ) -> Option<CheckpointInfo> {
        self.checkpoints_by_execution()
            .into_iter()
            .find(|(e, _)| e == execution_id)?
            .1
            .into_iter()
            .rfind(|c| c.status == "success" && before_step.is_none_or(|b| c.step_index < b))
    }
}

fn parse(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::corrupted(format!("agent entry: {e}")))
}

fn check_label(l: &str) -> Result<()> {
    if l.is_empty() || l.len() > 128 || l.chars().any(|c| c.is_control()) {
        return Err(Error::new(
            ErrorCode::InvalidId,
            "a snapshot label is 1 to 128 characters without control characters",
        ));
    }
    Ok(())
}

/// The seal message and recommendations for the state a call was in.
fn seal_text(prior: ToolCallState, recorded: bool) -> (&'static str, [&'static str; 2]) {
    match (prior, recorded) {
        (ToolCallState::Pending, false) => (
            "Tool call found without a result or a record after a crash; session sealed automatically.",
            [
                "Check for possible side effects of the tool",
                "Re-trigger the tool if it is still needed",
            ],
        ),
        (ToolCallState::ApprovalRequired, _) => (
            "Tool interrupted while awaiting approval; session sealed automatically.",
            [
                "Confirm if approval is still required",
                "Re-trigger the tool and complete approval to continue",
            ],
        ),
        (ToolCallState::Approved, _) => (
            "Tool approved but not yet executed; session sealed automatically.",
            [
                "Confirm the tool input is still valid",
                "Re-trigger the tool to execute",
            ],
        ),
        (ToolCallState::Executing, _) => (
            "Tool interrupted during execution; session sealed automatically.",
            [
                "Check for possible side effects of the tool",
                "Confirm external system state before retrying",
            ],
        ),
        _ => (
            "Tool interrupted just before execution; session sealed automatically.",
            [
                "Confirm tool parameters are correct",
                "Re-trigger the tool to continue",
            ],
        ),
    }
}
