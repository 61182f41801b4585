//! The durable agent's state over its session (FORMAT.md §14): tool-call
//! records with their audit trail, safe-fork-points, snapshots, checkpoints and
//! the sealing of interrupted calls. No I/O: the caller appends the entries this
//! module writes and hands back every entry it appended ([`AgentCore::observe`]).
//!
//! Records are pi `custom` entries (`customType` `forkpoint.toolcall`,
//! `forkpoint.snapshot`, `forkpoint.checkpoint`), so pi-style tools keep them
//! and leave them out of the model's context.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::entry::EntryKind;
use crate::json;
use crate::load::Role;
use crate::{Error, ErrorCode, Result, Session};

/// `customType` of a tool-call record.
pub const TOOLCALL: &str = "forkpoint.toolcall";
/// `customType` of a snapshot.
pub const SNAPSHOT: &str = "forkpoint.snapshot";
/// `customType` of a checkpoint.
pub const CHECKPOINT: &str = "forkpoint.checkpoint";
/// `customType` of the todo list (the whole list, each time it changes).
pub const TODOS: &str = "forkpoint.todos";
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
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct ToolCallRecord {
    /// The model's tool-call id.
    pub id: String,
    pub name: String,
    pub state: ToolCallState,
    #[cfg_attr(feature = "ts", ts(type = "unknown"))]
    pub input: Box<RawValue>,
    /// Whether the call needed a decision, and the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "ts",
        ts(
            optional,
            type = "{ decision: 'allow' | 'deny', note?: string } | undefined"
        )
    )]
    pub approval: Option<Box<RawValue>>,
    /// What the tool returned (or the error), once terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub result: Option<Box<RawValue>>,
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
    /// A name for people (given to `IndexedDbStore.saveCheckpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub label: Option<String>,
    /// Entries in the session when it was made (written by `IndexedDbStore`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub entry_count: Option<u64>,
    /// The last seq of the session's event log when it was made (written by `IndexedDbStore`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub event_seq: Option<u64>,
}

/// A call without a result: id, name, arguments, and its record if there is one.
pub type OpenCall<'a> = (String, String, Value, Option<&'a ToolCallRecord>);

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
    /// The error `toolResult` message appended for it.
    #[cfg_attr(feature = "ts", ts(type = "AgentMessage"))]
    pub message: Value,
}

/// The agent's state as its session's entries tell it.
#[derive(Debug, Default)]
pub struct AgentCore {
    /// Messages on the current path, and how many are the user's.
    messages: u64,
    user_messages: u64,
    assistant_messages: u64,
    /// Entry ids on the path (for checkpoints and snapshots).
    path_ids: Vec<String>,
    records: Vec<ToolCallRecord>,
    by_id: HashMap<String, usize>,
    /// Record entries not folded yet, by call (the data JSON, in order), and
    /// the calls in the order of their first record: a resume folds only the
    /// records it needs (open calls); the rest when asked for.
    unfolded: HashMap<String, Vec<String>>,
    record_order: Vec<String>,
    /// Calls of the path without a result message yet, in order: (id, name, arguments).
    open: Vec<(String, String, Value)>,
    /// The safe-fork-points of the path: (index among its messages, entry id).
    sfps: Vec<(u64, String)>,
    snapshots: Vec<SnapshotInfo>,
    checkpoints: Vec<CheckpointInfo>,
    /// Queued messages of the path not yet delivered: (queueId, the entry's data).
    queued: Vec<(String, Value)>,
    /// The last todo list on the path (`{todos, version, updatedAt}` JSON).
    todos: Option<Box<RawValue>>,
}

/// Counts of the current path's messages (all, the user's, the assistant's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathCounts {
    pub messages: u64,
    pub users: u64,
    pub assistants: u64,
}

/// Where an agent's resume from the tail starts, and what lies before it that
/// it needs (FORMAT.md §14.2): found by [`AgentCore::tail_marks`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TailMarks {
    /// The last safe-fork-point's entry: its offset and id, and the path's
    /// counts before it.
    pub sfp_offset: u64,
    pub sfp_id: String,
    pub before: PathCounts,
    /// The last todo list entry on the path: offset and length.
    pub todos: Option<(u64, u64)>,
    /// Queued messages not yet delivered: queue id, offset, length.
    pub queued: Vec<(String, u64, u64)>,
    /// Every checkpoint line of the session, on the path or not (offset,
    /// length), oldest first: checkpoints are answered from the tail.
    pub checkpoints: Vec<(u64, u64)>,
}

impl AgentCore {
    /// The state of a loaded session: the current leaf's path, and every
    /// snapshot and checkpoint in the file.
    pub fn from_session(s: &Session) -> Result<AgentCore> {
        use memchr::memmem::Finder;
        let mut core = AgentCore::default();
        let (snapshot, checkpoint) = (
            Finder::new(b"\"forkpoint.snapshot\""),
            Finder::new(b"\"forkpoint.checkpoint\""),
        );
        let (queue_id, tool_call) = (Finder::new(b"\"queueId\""), Finder::new(b"\"toolCall\""));
        let (toolcall_rec, forkpoint) = (
            Finder::new(b"\"forkpoint.toolcall\""),
            Finder::new(b"\"forkpoint."),
        );
        for (i, e) in s.entries().iter().enumerate() {
            if e.kind == EntryKind::Custom {
                let text = s.entry_text(i as u32);
                // Only forkpoint's own records are parsed here.
                let has = |f: &Finder| f.find(text.as_bytes()).is_some();
                if has(&snapshot) || has(&checkpoint) {
                    let h = head(text)?;
                    match h.custom_type.as_deref() {
                        Some(SNAPSHOT) => core.add_snapshot(h.data),
                        Some(CHECKPOINT) => core.add_checkpoint(h.data),
                        _ => {}
                    }
                }
            }
        }
        for i in s.leaf_path() {
            let e = &s.entries()[i as usize];
            let text = s.entry_text(i);
            let b = text.as_bytes();
            let has = |f: &Finder| f.find(b).is_some();
            match e.kind {
                // Fast path: the loader knows the role and where the message is;
                // only tool calls, result ids and queue ids are read from the line.
                EntryKind::Message => {
                    let msg = text.get(e.msg.0 as usize..e.msg.1 as usize).unwrap_or("");
                    if has(&queue_id)
                        && let Some(q) = member_str(text, "queueId")
                    {
                        core.queued.retain(|(id, _)| *id != q);
                    }
                    match e.role {
                        Role::Assistant if has(&tool_call) => {
                            core.observe_path(&head(text)?, &e.id)?
                        }
                        Role::Assistant => core.on_message("assistant", &e.id, Vec::new(), None),
                        Role::User => core.on_message("user", &e.id, Vec::new(), None),
                        Role::ToolResult => {
                            let c = member_str(msg, "toolCallId");
                            core.on_message("toolResult", &e.id, Vec::new(), c.as_deref())
                        }
                        _ => core.on_message("other", &e.id, Vec::new(), None),
                    }
                }
                EntryKind::Custom if has(&toolcall_rec) => match custom_parts(text) {
                    Some((ty, data)) if ty == TOOLCALL => core.on_record(data, &e.id)?,
                    _ => core.observe_path(&head(text)?, &e.id)?,
                },
                EntryKind::Custom if has(&forkpoint) => core.observe_path(&head(text)?, &e.id)?,
                EntryKind::Leaf | EntryKind::Label => {}
                _ => core.path_ids.push(e.id.to_string()),
            }
        }
        Ok(core)
    }

    /// The path's message counts.
    pub fn counts(&self) -> PathCounts {
        PathCounts {
            messages: self.messages,
            users: self.user_messages,
            assistants: self.assistant_messages,
        }
    }

    /// For a state built from a session's tail: adds the counts of the path
    /// before it (safe-fork-point indexes included), the todo list, the
    /// queued messages and the checkpoint lines found before it.
    pub fn rebase(
        &mut self,
        before: PathCounts,
        todos: Option<&str>,
        queued: Vec<(String, Value)>,
        checkpoints: &[String],
    ) -> Result<()> {
        self.messages += before.messages;
        self.user_messages += before.users;
        self.assistant_messages += before.assistants;
        for s in &mut self.sfps {
            s.0 += before.messages;
        }
        if self.todos.is_none()
            && let Some(line) = todos
        {
            let h = head(line)?;
            if h.custom_type.as_deref() == Some(TODOS) {
                self.todos = h.data.map(|d| d.to_owned());
            }
        }
        let mut q = queued;
        q.append(&mut self.queued);
        self.queued = q;
        // In file order: those before the tail, then the tail's own.
        let tail = std::mem::take(&mut self.checkpoints);
        for line in checkpoints {
            let h = head(line)?;
            if h.custom_type.as_deref() == Some(CHECKPOINT) {
                self.add_checkpoint(h.data);
            }
        }
        for c in tail {
            self.checkpoints.retain(|o| o.id != c.id);
            self.checkpoints.push(c);
        }
        Ok(())
    }

    /// The marks a resume from the tail needs, found on the current path of
    /// `s` (whose line `i` starts at `s.entries()[i].offset + shift` in the
    /// real file, and whose path is preceded by `before`); `prior` gives what
    /// lies before `s` (a tail's todos and queued messages). Without a
    /// safe-fork-point yet, the marks have none (an empty `sfp_id`) but keep
    /// the todo list and the queued messages, for the one that comes later.
    pub fn tail_marks(
        &self,
        s: &Session,
        shift: u64,
        before: PathCounts,
        prior: Option<&TailMarks>,
    ) -> Option<TailMarks> {
        let sfp_id = self.last_sfp().map(|(_, id)| id);
        let mut marks = TailMarks {
            todos: prior.and_then(|p| p.todos),
            queued: prior.map(|p| p.queued.clone()).unwrap_or_default(),
            checkpoints: prior.map(|p| p.checkpoints.clone()).unwrap_or_default(),
            ..TailMarks::default()
        };
        // Checkpoints anywhere in the file (a restore leaves them off the path).
        let checkpoint = memchr::memmem::Finder::new(b"\"forkpoint.checkpoint\"");
        for (i, e) in s.entries().iter().enumerate() {
            if e.kind != EntryKind::Custom {
                continue;
            }
            let text = s.entry_text(i as u32);
            if checkpoint.find(text.as_bytes()).is_some()
                && custom_parts(text).is_some_and(|(ty, _)| ty == CHECKPOINT)
            {
                marks.checkpoints.push((e.offset + shift, u64::from(e.len)));
            }
        }
        let mut counts = before;
        let mut found = false;
        for i in s.leaf_path() {
            let e = &s.entries()[i as usize];
            let off = e.offset + shift;
            let text = s.entry_text(i);
            if !found && let Some(sfp_id) = sfp_id.filter(|s| *e.id == **s) {
                marks.sfp_offset = off;
                marks.sfp_id = sfp_id.to_string();
                marks.before = counts;
                found = true;
            }
            match e.kind {
                EntryKind::Message => {
                    counts.messages += 1;
                    match e.role {
                        Role::User => counts.users += 1,
                        Role::Assistant => counts.assistants += 1,
                        _ => {}
                    }
                    if let Some(q) = member_str(text, "queueId") {
                        marks.queued.retain(|(id, _, _)| *id != q);
                    }
                }
                EntryKind::Custom => match custom_parts(text) {
                    Some((ty, _)) if ty == TODOS => marks.todos = Some((off, u64::from(e.len))),
                    Some((ty, data)) if ty == QUEUED => {
                        if let Some(q) = member_str(data, "queueId") {
                            marks.queued.push((q, off, u64::from(e.len)));
                        }
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        (found || sfp_id.is_none()).then_some(marks)
    }

    /// Checks an entry the way [`observe`](Self::observe) will read it (before it
    /// is queued: an entry the state cannot take in is never written).
    pub fn check(entry_json: &str) -> Result<()> {
        let h: Head<'_> = parse_json(entry_json, "agent entry")?;
        if let Some(m) = &h.message
            && m.role == "assistant"
            && let Some(c) = m.content.filter(|c| c.get().contains("\"toolCall\""))
        {
            parse_checked::<Vec<Block>>(c.get(), "agent entry")?;
        }
        if h.custom_type.as_deref() == Some(TOOLCALL) {
            let d = h
                .data
                .ok_or_else(|| Error::invalid_input("a tool-call record has data"))?;
            parse_checked::<RecordData>(d.get(), "tool-call record")?;
        }
        Ok(())
    }

    /// Takes in an entry the caller appended on the current path, with the id
    /// the writer gave it.
    pub fn observe(&mut self, entry_json: &str, id: &str) -> Result<()> {
        let h = head(entry_json)?;
        match h.custom_type.as_deref() {
            Some(SNAPSHOT) => self.add_snapshot(h.data),
            Some(CHECKPOINT) => self.add_checkpoint(h.data),
            _ => {}
        }
        if !matches!(&*h.kind, "leaf" | "label") {
            self.observe_path(&h, id)?;
        }
        Ok(())
    }

    fn observe_path(&mut self, h: &Head<'_>, id: &str) -> Result<()> {
        match (&*h.kind, &h.message) {
            ("message", Some(m)) => {
                if let Some(q) = &h.queue_id {
                    self.queued.retain(|(id, _)| id != q);
                }
                let mut calls = Vec::new();
                if m.role == "assistant" {
                    let content = m.content.map(RawValue::get).unwrap_or("");
                    if content.contains("\"toolCall\"") {
                        let blocks: Vec<Block> = parse_checked(content, "agent entry")?;
                        for b in blocks.into_iter().filter(|b| b.kind == "toolCall") {
                            calls.push((
                                b.id.unwrap_or_default(),
                                b.name.unwrap_or_default(),
                                b.arguments.unwrap_or(Value::Null),
                            ));
                        }
                    }
                }
                let result_for = m.tool_call_id.as_deref().filter(|_| m.role == "toolResult");
                self.on_message(&m.role, id, calls, result_for);
                return Ok(());
            }
            ("custom", _) => match (h.custom_type.as_deref(), h.data) {
                (Some(TOOLCALL), Some(d)) => {
                    self.on_record(d.get(), id)?;
                    return Ok(());
                }
                (Some(TODOS), Some(d)) => self.todos = Some(d.to_owned()),
                (Some(QUEUED), Some(d)) => {
                    let d = value(d)?;
                    if let Some(q) = d.get("queueId").and_then(Value::as_str) {
                        self.queued.push((q.to_string(), d.clone()));
                    }
                }
                _ => {}
            },
            _ => {}
        }
        self.path_ids.push(id.to_string());
        Ok(())
    }

    /// A tool-call record entry on the path (its `data` JSON), folded when needed.
    fn on_record(&mut self, data: &str, entry_id: &str) -> Result<()> {
        let id = member_str(data, "id").ok_or_else(|| {
            Error::corrupted(format!("tool-call record {entry_id} without a call id"))
        })?;
        if !self.by_id.contains_key(&id) && !self.unfolded.contains_key(&id) {
            self.record_order.push(id.clone());
        }
        self.unfolded.entry(id).or_default().push(data.to_string());
        self.path_ids.push(entry_id.to_string());
        Ok(())
    }

    /// A message on the path: its role, the calls it makes, the call it answers.
    fn on_message(
        &mut self,
        role: &str,
        id: &str,
        calls: Vec<(String, String, Value)>,
        result_for: Option<&str>,
    ) {
        if let Some(c) = result_for {
            self.open.retain(|(id, _, _)| id != c);
        }
        match role {
            "user" => self.user_messages += 1,
            "assistant" => self.assistant_messages += 1,
            _ => {}
        }
        // A safe-fork-point: a user message, an answer without tool calls, or
        // the result that completes a batch — nothing left open.
        let safe = match role {
            "assistant" => calls.is_empty() && self.open.is_empty(),
            _ => self.open.is_empty(),
        };
        // A call id seen before (providers that number calls per answer): the
        // earlier call's records are set aside, so this call starts afresh.
        for (c, _, _) in &calls {
            self.retire_records(c);
        }
        self.open.extend(calls);
        if safe {
            self.sfps.push((self.messages, id.to_string()));
        }
        self.messages += 1;
        self.path_ids.push(id.to_string());
    }

    fn fold_record(&mut self, d: &RawValue, key: &str) -> Result<()> {
        let d: RecordData = parse_checked(d.get(), "tool-call record")?;
        let i = match self.by_id.get(key) {
            Some(&i) => i,
            None => {
                self.records.push(ToolCallRecord {
                    id: d.id.clone(),
                    name: d.name.clone().unwrap_or_default(),
                    state: d.state,
                    input: d.input.unwrap_or_else(null_raw),
                    approval: None,
                    result: None,
                    is_error: None,
                    started_at: None,
                    completed_at: None,
                    audit: Vec::new(),
                });
                self.by_id.insert(key.to_string(), self.records.len() - 1);
                self.records.len() - 1
            }
        };
        let r = &mut self.records[i];
        r.state = d.state;
        if d.approval.is_some() {
            r.approval = d.approval;
        }
        if d.result.is_some() {
            r.result = d.result;
        }
        if d.is_error.is_some() {
            r.is_error = d.is_error;
        }
        if d.state == ToolCallState::Executing {
            r.started_at = Some(d.at);
        }
        if d.state.is_terminal() {
            r.completed_at = Some(d.at);
        }
        r.audit.push(AuditEntry {
            state: d.state,
            at: d.at,
            note: d.note,
        });
        Ok(())
    }

    fn add_snapshot(&mut self, d: Option<&RawValue>) {
        if let Some(Ok(s)) = d.map(|d| parse_checked::<SnapshotInfo>(d.get(), "snapshot")) {
            self.snapshots.retain(|o| o.id != s.id);
            self.snapshots.push(s);
        }
    }

    fn add_checkpoint(&mut self, d: Option<&RawValue>) {
        if let Some(d) = d {
            crate::checkpoint::apply(&mut self.checkpoints, d.get(), |c| &c.id, |c| c);
        }
    }

    /// Moves the records of call `id` under a key of their own (they stay listed).
    fn retire_records(&mut self, id: &str) {
        if !self.by_id.contains_key(id) && !self.unfolded.contains_key(id) {
            return;
        }
        let key = format!("{id}\u{0}{}", self.record_order.len());
        if let Some(i) = self.by_id.remove(id) {
            self.by_id.insert(key.clone(), i);
        }
        if let Some(lines) = self.unfolded.remove(id) {
            self.unfolded.insert(key.clone(), lines);
        }
        if let Some(o) = self.record_order.iter_mut().find(|o| *o == id) {
            *o = key;
        }
    }

    /// Folds the unfolded record entries of call `id`.
    fn fold_id(&mut self, id: &str) -> Result<()> {
        if let Some(lines) = self.unfolded.remove(id) {
            for l in lines {
                let raw: Box<RawValue> = parse_checked(&l, "tool-call record")?;
                self.fold_record(&raw, id)?;
            }
        }
        Ok(())
    }

    /// The tool-call records of the current path, in the order of their first record.
    pub fn records(&mut self) -> Result<Vec<&ToolCallRecord>> {
        let order = std::mem::take(&mut self.record_order);
        for id in &order {
            self.fold_id(id)?;
        }
        self.record_order = order;
        Ok(self
            .record_order
            .iter()
            .filter_map(|id| self.by_id.get(id).map(|&i| &self.records[i]))
            .collect())
    }

    /// The record of a call.
    pub fn record(&mut self, id: &str) -> Result<Option<&ToolCallRecord>> {
        self.fold_id(id)?;
        Ok(self.by_id.get(id).map(|&i| &self.records[i]))
    }

    /// Messages sent while the agent was busy and not yet delivered (the
    /// `forkpoint.queued` entries' data), oldest first.
    pub fn queued(&self) -> Vec<&Value> {
        self.queued.iter().map(|(_, d)| d).collect()
    }

    /// The last todo list on the current path (`{todos, version, updatedAt}`).
    pub fn todos(&self) -> Option<&RawValue> {
        self.todos.as_deref()
    }

    /// The entry replacing the todo list with `todos` (a JSON array of `{id,
    /// title, status, …}`): each todo needs an id (unique), a title and a status
    /// (`pending`, `in_progress`, `completed`; at most one in progress);
    /// `createdAt` is kept from the previous list, `updatedAt` is now. Returns
    /// the entry, the new list and the previous one.
    pub fn todos_entry(&self, todos_json: &str, now_ms: f64) -> Result<(String, Value, Value)> {
        let mut todos: Vec<Value> = parse_json(todos_json, "todos")
            .map_err(|e| Error::invalid_input(format!("todos are a JSON array: {}", e.message)))?;
        let previous: Value = match self.todos() {
            Some(t) => parse_checked::<Value>(t.get(), "todos")?["todos"].take(),
            None => Value::Array(Vec::new()),
        };
        let version = self
            .todos()
            .and_then(|t| parse_checked::<Value>(t.get(), "todos").ok())
            .and_then(|t| t["version"].as_u64())
            .unwrap_or(0)
            + 1;
        let mut ids = std::collections::HashSet::new();
        let mut in_progress = 0;
        for t in &mut todos {
            let ok = t["id"].as_str().is_some_and(|s| !s.is_empty())
                && t["title"].is_string()
                && matches!(
                    t["status"].as_str(),
                    Some("pending" | "in_progress" | "completed")
                );
            if !ok {
                return Err(Error::invalid_input(
                    "a todo has an id, a title and a status (pending, in_progress, completed)",
                ));
            }
            let id = t["id"].as_str().unwrap_or_default().to_string();
            if !ids.insert(id.clone()) {
                return Err(Error::invalid_input(format!("duplicate todo id '{id}'")));
            }
            in_progress += usize::from(t["status"] == "in_progress");
            let before = previous
                .as_array()
                .and_then(|p| p.iter().find(|p| p["id"] == id.as_str()))
                .and_then(|p| p.get("createdAt").cloned());
            let o = t
                .as_object_mut()
                .ok_or_else(|| Error::invalid_input("a todo is an object"))?;
            if !o.contains_key("createdAt") {
                o.insert("createdAt".into(), before.unwrap_or(json!(now_ms)));
            }
            o.insert("updatedAt".into(), json!(now_ms));
        }
        if in_progress > 1 {
            return Err(Error::invalid_input("at most one todo is in progress"));
        }
        let current = Value::Array(todos);
        let data = json!({ "todos": current, "version": version, "updatedAt": now_ms });
        let entry = json!({ "type": "custom", "customType": TODOS, "data": data }).to_string();
        Ok((entry, current, previous))
    }

    /// Number of messages on the current path.
    pub fn message_count(&self) -> u64 {
        self.messages
    }

    /// Number of assistant messages on the current path (model calls answered).
    pub fn assistant_messages(&self) -> u64 {
        self.assistant_messages
    }

    /// Number of user messages on the current path.
    pub fn user_messages(&self) -> u64 {
        self.user_messages
    }

    /// The last safe-fork-point: the index (among the path's messages) and entry
    /// of the last user message, assistant message without tool calls, or tool
    /// result that completes its batch. `None` before the first.
    pub fn last_sfp(&self) -> Option<(u64, &str)> {
        self.sfps.last().map(|(i, e)| (*i, e.as_str()))
    }

    /// The calls of the current path without a result, in order, with their
    /// records where they exist.
    pub fn open_calls(&mut self) -> Result<Vec<OpenCall<'_>>> {
        let ids: Vec<String> = self.open.iter().map(|(id, _, _)| id.clone()).collect();
        for id in &ids {
            self.fold_id(id)?;
        }
        // Open is what the transcript says: a call without its result message
        // (a terminal record without the message is still open: see `seal`).
        Ok(self
            .open
            .iter()
            .map(|(id, name, args)| {
                let rec = self.by_id.get(id).map(|&i| &self.records[i]);
                (id.clone(), name.clone(), args.clone(), rec)
            })
            .collect())
    }

    /// The entries of a model's answer: the message entry and a `PENDING`
    /// record per tool call (with the call's arguments as written), to be
    /// appended together before any tool is looked at.
    pub fn answer_entries(message_json: &str, now_ms: f64) -> Result<Vec<String>> {
        #[derive(Deserialize)]
        struct Answer<'a> {
            #[serde(borrow)]
            content: Option<Vec<AnswerBlock<'a>>>,
        }
        #[derive(Deserialize)]
        struct AnswerBlock<'a> {
            #[serde(rename = "type", default)]
            kind: String,
            #[serde(default)]
            id: Option<String>,
            #[serde(default)]
            name: Option<String>,
            #[serde(default, borrow)]
            arguments: Option<&'a RawValue>,
        }
        #[derive(Serialize)]
        struct Pending<'a> {
            id: &'a str,
            name: &'a str,
            state: ToolCallState,
            at: f64,
            #[serde(skip_serializing_if = "Option::is_none")]
            input: Option<&'a RawValue>,
        }
        let answer: Answer<'_> = parse_json(message_json, "assistant message")?;
        let mut entries = vec![format!(
            "{{\"type\":\"message\",\"message\":{}}}",
            message_json.trim()
        )];
        for b in answer
            .content
            .unwrap_or_default()
            .iter()
            .filter(|b| b.kind == "toolCall")
        {
            let data = serde_json::to_string(&Pending {
                id: b.id.as_deref().unwrap_or(""),
                name: b.name.as_deref().unwrap_or(""),
                state: ToolCallState::Pending,
                at: now_ms,
                input: b.arguments,
            })
            .map_err(|e| Error::internal(format!("record: {e}")))?;
            entries.push(format!(
                "{{\"type\":\"custom\",\"customType\":\"{TOOLCALL}\",\"data\":{data}}}"
            ));
        }
        Ok(entries)
    }

    /// The entry of a user message: delivered now (a `user` message entry
    /// carrying `queueId`), or queued while the agent is busy (a
    /// `forkpoint.queued` entry, delivered later under the same `queueId`).
    /// `content_json` is the message content. Returns the entry and, when
    /// delivered, the message.
    pub fn user_entry(
        queue_id: &str,
        content_json: &str,
        queued: bool,
        now_ms: f64,
    ) -> Result<(String, Option<Value>)> {
        let content: Value = parse_json(content_json, "message content")
            .map_err(|e| Error::invalid_input(e.message))?;
        if queued {
            let data = json!({ "queueId": queue_id, "content": content, "timestamp": now_ms });
            let entry = json!({ "type": "custom", "customType": QUEUED, "data": data });
            return Ok((entry.to_string(), None));
        }
        let message = json!({ "role": "user", "content": content, "timestamp": now_ms });
        let entry = json!({ "type": "message", "queueId": queue_id, "message": message });
        Ok((entry.to_string(), Some(message)))
    }

    /// A `toolResult` message (pi's shape).
    pub fn result_message(id: &str, name: &str, text: &str, is_error: bool, now_ms: f64) -> Value {
        json!({
            "role": "toolResult",
            "toolCallId": id,
            "toolName": name,
            "content": [{ "type": "text", "text": text }],
            "isError": is_error,
            "timestamp": now_ms,
        })
    }

    /// The entries that finish a call: its result message first (if only it
    /// reaches the file, the call is closed), then its terminal record. Returns
    /// the message and the two entries.
    pub fn result_entries(
        id: &str,
        name: &str,
        state: ToolCallState,
        text: &str,
        is_error: bool,
        extra: Option<&Value>,
        now_ms: f64,
    ) -> (Value, [String; 2]) {
        let message = Self::result_message(id, name, text, is_error, now_ms);
        let entry = json!({ "type": "message", "message": message }).to_string();
        let record = Self::record_entry(id, name, state, now_ms, extra);
        (message, [entry, record])
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
    pub fn seal(
        &mut self,
        now_ms: f64,
        note: Option<&str>,
        only: Option<&str>,
    ) -> Result<(Vec<String>, Vec<SealedCall>)> {
        let mut entries = Vec::new();
        let mut sealed = Vec::new();
        for (id, name, _, rec) in self.open_calls()? {
            if only.is_some_and(|o| o != id) {
                continue;
            }
            // A terminal record whose result message never reached the file (a
            // torn batch): the message is written from the record.
            if let Some(r) = rec.filter(|r| r.state.is_terminal()) {
                let raw = r.result.as_deref().map_or("null", RawValue::get);
                let text = serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.to_string());
                let is_error = r.is_error.unwrap_or(r.state != ToolCallState::Completed);
                let message = Self::result_message(&id, &name, &text, is_error, now_ms);
                entries.push(json!({ "type": "message", "message": message }).to_string());
                sealed.push(SealedCall {
                    id,
                    name,
                    prior_state: r.state,
                    recorded: true,
                    note: "Result restored from the call's record after a crash.".into(),
                    recommendations: Vec::new(),
                    message,
                });
                continue;
            }
            let prior = rec.map_or(ToolCallState::Pending, |r| r.state);
            let (message, recs) = seal_text(prior, rec.is_some());
            let note = note.map_or(message.to_string(), str::to_string);
            let recommendations: Vec<String> = recs.iter().map(|s| s.to_string()).collect();
            // The text in Kode's member order: ok, error, data, recommendations.
            let text = serde_json::to_string(&SealPayload {
                ok: false,
                error: &note,
                data: SealData {
                    status: prior,
                    tool_id: &id,
                    recorded: rec.is_some(),
                },
                recommendations: &recommendations,
            })
            .map_err(|e| Error::internal(format!("seal payload: {e}")))?;
            let payload: Value = serde_json::from_str(&text)
                .map_err(|e| Error::internal(format!("seal payload: {e}")))?;
            let mut message = Self::result_message(&id, &name, &text, true, now_ms);
            message["details"] = payload.clone();
            // The message first: if only it reaches the file, the call is closed.
            entries.push(json!({ "type": "message", "message": message }).to_string());
            entries.push(Self::record_entry(
                &id,
                &name,
                ToolCallState::Sealed,
                now_ms,
                Some(&json!({ "note": note, "result": payload, "isError": true })),
            ));
            sealed.push(SealedCall {
                id,
                name,
                prior_state: prior,
                recorded: rec.is_some(),
                note,
                recommendations,
                message,
            });
        }
        Ok((entries, sealed))
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
            label: None,
            entry_count: None,
            event_seq: None,
        };
        Ok((crate::checkpoint::entry(&c), c))
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

/// What the agent reads of an entry: the rest is skipped, not built, and
/// the nested values it keeps are borrowed from the line.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    custom_type: Option<Cow<'a, str>>,
    #[serde(default)]
    queue_id: Option<String>,
    #[serde(default, borrow)]
    message: Option<MessageHead<'a>>,
    #[serde(default, borrow)]
    data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageHead<'a> {
    #[serde(default, borrow)]
    role: Cow<'a, str>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

/// The body of a sealed call's error result.
#[derive(Serialize)]
struct SealPayload<'a> {
    ok: bool,
    error: &'a str,
    data: SealData<'a>,
    recommendations: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SealData<'a> {
    status: ToolCallState,
    tool_id: &'a str,
    recorded: bool,
}

/// One state change of a tool call (a `forkpoint.toolcall` entry's data).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecordData {
    id: String,
    #[serde(default)]
    name: Option<String>,
    state: ToolCallState,
    #[serde(default)]
    at: f64,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    input: Option<Box<RawValue>>,
    #[serde(default)]
    approval: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    is_error: Option<bool>,
}

fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".into()).unwrap_or_else(|_| unreachable!("null is JSON"))
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// Nesting accepted in agent entries: the session writer's limit, so anything
/// the writer stored can be read back.
const MAX_DEPTH: usize = 512;

/// Parses JSON as the session writer accepts it: depth checked first (up to
/// `MAX_DEPTH`, iteratively), then serde without its own recursion limit.
pub fn parse_json<'a, T: Deserialize<'a>>(text: &'a str, what: &str) -> Result<T> {
    json::validate(text.as_bytes(), MAX_DEPTH)
        .map_err(|e| Error::corrupted(format!("{what}: {}", e.describe())))?;
    parse_checked(text, what)
}

/// [`parse_json`] of text whose depth was checked already (read from a session,
/// whose loader checks it, or passed through [`AgentCore::check`]).
pub(crate) fn parse_checked<'a, T: Deserialize<'a>>(text: &'a str, what: &str) -> Result<T> {
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let v = T::deserialize(&mut de).map_err(|e| Error::corrupted(format!("{what}: {e}")))?;
    de.end()
        .map_err(|e| Error::corrupted(format!("{what}: {e}")))?;
    Ok(v)
}

fn head(text: &str) -> Result<Head<'_>> {
    parse_checked(text, "agent entry")
}

/// `customType` and the `data` JSON of a custom entry, read without decoding the rest.
pub(crate) fn custom_parts(line: &str) -> Option<(Cow<'_, str>, &str)> {
    let mut r = json::ObjectReader::open(line.as_bytes(), 0, 1, 512).ok()?;
    let (mut ty, mut data) = (None, None);
    while let Some(k) = r.next_key().ok()? {
        let v = r.skip_value().ok()?;
        if json::key_is(&k, line, "customType") {
            ty = v.str(line);
        } else if json::key_is(&k, line, "data") {
            data = Some(v.raw(line));
        }
        if ty.is_some() && data.is_some() {
            break;
        }
    }
    Some((ty?, data?))
}

/// A string member of a JSON object (`None` if absent or not a string).
fn member_str(obj: &str, name: &str) -> Option<String> {
    let mut r = json::ObjectReader::open(obj.as_bytes(), 0, 1, 512).ok()?;
    while let Some(k) = r.next_key().ok()? {
        let v = r.skip_value().ok()?;
        if json::key_is(&k, obj, name) {
            return v.str(obj).map(|c| c.into_owned());
        }
    }
    None
}

fn value(raw: &RawValue) -> Result<Value> {
    parse_checked(raw.get(), "agent record")
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

pub mod machine;
pub mod meta;
pub mod runtime;
