//! Adversarial review of the agent machine: each test pins one behaviour a
//! resume, a crash or an odd input must not break.

use std::cell::Cell;
use std::sync::Arc;

use forkpoint_core::agent::machine::{
    Command, Input, Query, ResumeStrategy, ToolOutcome, ToolSpec,
};
use forkpoint_core::agent::meta::AgentMeta;
use forkpoint_core::agent::runtime::{AgentRuntime, Step};
use forkpoint_core::agent::{Breakpoint, ToolCallState};
use forkpoint_core::storage::{AgentHead, AgentStorage, Lease, Listed, MemoryStorage, WriteBatch};
use forkpoint_core::{ErrorCode, LoadOptions, Result, Session};
use serde_json::{Value, json};

fn meta(id: &str) -> AgentMeta {
    serde_json::from_value(json!({
        "agentId": id, "templateId": null, "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z", "lineage": [], "configVersion": "forkpoint-1",
        "model": { "provider": "scripted", "model": "s-1", "api": "scripted" },
        "tools": ["echo", "danger"], "permission": { "mode": "auto" },
        "systemPrompt": "be brief", "metadata": {}
    }))
    .unwrap()
}

fn tools() -> Vec<ToolSpec> {
    let t = |name: &str, approval: bool| ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        input_schema: json!({ "type": "object" }),
        requires_approval: approval,
    };
    vec![t("echo", false), t("danger", true)]
}

fn text(t: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": t }], "stopReason": "stop" })
}

fn calls(cs: &[(&str, &str, Value)]) -> Value {
    let content: Vec<Value> = cs
        .iter()
        .map(|(id, name, args)| json!({ "type": "toolCall", "id": id, "name": name, "arguments": args }))
        .collect();
    json!({ "content": content, "stopReason": "toolUse" })
}

fn q(k: &str) -> Query {
    serde_json::from_value(json!({ "kind": k })).unwrap()
}

fn model_ticket(s: &Step) -> Option<u64> {
    s.commands.iter().find_map(|c| match c {
        Command::CallModel { ticket, .. } => Some(*ticket),
        _ => None,
    })
}

fn tool_ticket(s: &Step) -> Option<(u64, String)> {
    s.commands.iter().find_map(|c| match c {
        Command::RunTool {
            ticket, call_id, ..
        } => Some((*ticket, call_id.clone())),
        _ => None,
    })
}

async fn send<S: AgentStorage>(rt: &mut AgentRuntime<S>, t: &str, now: f64) -> Step {
    rt.handle(Input::Send { content: json!(t) }, now)
        .await
        .unwrap()
}

async fn reply<S: AgentStorage>(rt: &mut AgentRuntime<S>, ticket: u64, r: Value, now: f64) -> Step {
    rt.handle(Input::ModelReply { ticket, reply: r }, now)
        .await
        .unwrap()
}

/// A user turn answered with text.
async fn turn<S: AgentStorage>(rt: &mut AgentRuntime<S>, t: &str, now: f64) {
    let s = send(rt, t, now).await;
    let ticket = model_ticket(&s).expect("a model call");
    let s = reply(rt, ticket, text(&format!("re: {t}")), now + 1.0).await;
    assert!(s.commands.is_empty(), "{:?}", s.commands);
}

async fn reopen(store: &MemoryStorage, id: &str, seed: u64) -> AgentRuntime<MemoryStorage> {
    let rt = AgentRuntime::open(store.clone(), id, tools(), seed)
        .await
        .unwrap();
    rt.resume(ResumeStrategy::Manual, None, false, 1e9)
        .await
        .unwrap();
    rt
}

/// The user messages of the context, in order (their text).
fn user_texts(messages_json: &str) -> Vec<String> {
    let ms: Vec<Value> = serde_json::from_str(messages_json).unwrap();
    ms.iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"][0]["text"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Todos set before any safe-fork-point are lost by the next resume state: a
/// machine opened whole on a session without a safe-fork-point starts with no
/// marks, so the first safe-fork-point writes marks without the todo list, and
/// the resume from the tail that follows finds no todos.
#[test]
fn todos_set_before_the_first_message_survive_a_tail_resume() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let rt = AgentRuntime::create(store.clone(), meta("t"), tools(), 1, 10.0)
            .await
            .unwrap();
        rt.handle(
            Input::SetTodos {
                todos: json!([{ "id": "a", "title": "plan", "status": "pending" }]),
            },
            11.0,
        )
        .await
        .unwrap();
        rt.close().await.unwrap();
        // Reopened (whole: no resume state yet), then a turn.
        let mut rt = reopen(&store, "t", 2).await;
        turn(&mut rt, "hello", 20.0).await;
        rt.close().await.unwrap();
        // Reopened from the tail: the todo list is the whole session's.
        let mut rt = reopen(&store, "t", 3).await;
        let from_tail = !rt.machine().is_whole();
        let tail = rt.query(&q("todos")).await.unwrap();
        rt.ensure_whole().await.unwrap();
        let whole = rt.query(&q("todos")).await.unwrap();
        assert!(whole.contains("plan"), "{whole}");
        assert!(from_tail, "the resume read the tail");
        assert_eq!(tail, whole, "tail and whole disagree on todos");
        rt.close().await.unwrap();
    });
}

/// The same after a checkpoint restore to a point before any safe-fork-point.
#[test]
fn todos_survive_a_restore_to_before_the_first_message() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("r"), tools(), 1, 10.0)
            .await
            .unwrap();
        rt.handle(
            Input::SetTodos {
                todos: json!([{ "id": "a", "title": "plan", "status": "pending" }]),
            },
            11.0,
        )
        .await
        .unwrap();
        let cp = rt
            .handle(
                Input::Checkpoint {
                    args: json!({ "executionId": "e", "stepName": "s", "stepIndex": 0 }),
                },
                12.0,
            )
            .await
            .unwrap();
        let cp: Value = serde_json::from_str(cp.reply.value.as_deref().unwrap()).unwrap();
        turn(&mut rt, "first", 20.0).await;
        rt.restore(cp["id"].as_str().unwrap(), 30.0).await.unwrap();
        turn(&mut rt, "second", 40.0).await;
        rt.close().await.unwrap();
        let mut rt = reopen(&store, "r", 3).await;
        let from_tail = !rt.machine().is_whole();
        let tail = rt.query(&q("todos")).await.unwrap();
        rt.ensure_whole().await.unwrap();
        let whole = rt.query(&q("todos")).await.unwrap();
        assert!(whole.contains("plan"), "{whole}");
        assert!(from_tail, "the resume read the tail");
        assert_eq!(tail, whole, "tail and whole disagree on todos");
        rt.close().await.unwrap();
    });
}

/// Creates checkpoint `step` of execution `e` with `status`; returns its id.
async fn checkpoint_at<S: AgentStorage>(
    rt: &AgentRuntime<S>,
    step: u64,
    status: &str,
    now: f64,
) -> String {
    let args = json!({ "executionId": "e", "stepName": format!("s{step}"), "stepIndex": step, "status": status, "variables": { "step": step } });
    let s = rt.handle(Input::Checkpoint { args }, now).await.unwrap();
    let v: Value = serde_json::from_str(s.reply.value.as_deref().unwrap()).unwrap();
    v["id"].as_str().unwrap().to_string()
}

/// Checkpoints before the tail (one left off the path by a restore, many
/// close together, one far back) are answered by a resume from the tail
/// without loading the session, as a whole load answers them; a resume state
/// of version 1 (without checkpoint marks) is not read, and the first write
/// after it stores a fresh one.
#[test]
fn checkpoints_are_answered_from_the_tail() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("c"), tools(), 1, 10.0)
            .await
            .unwrap();
        let mut now = 11.0;
        turn(&mut rt, "start", 10.5).await;
        let first = checkpoint_at(&rt, 0, "success", now).await;
        turn(&mut rt, &"x".repeat(40 << 10), 12.0).await;
        checkpoint_at(&rt, 1, "failed", 13.0).await;
        turn(&mut rt, "to be left", 14.0).await;
        rt.restore(&first, 15.0).await.unwrap();
        for step in 2..12 {
            now += 10.0;
            turn(&mut rt, &format!("t{step}"), now).await;
            checkpoint_at(
                &rt,
                step,
                if step % 3 == 0 { "failed" } else { "success" },
                now + 2.0,
            )
            .await;
        }
        turn(&mut rt, "last", now + 20.0).await;
        rt.close().await.unwrap();

        let qs = [
            json!({ "kind": "checkpoints" }),
            json!({ "kind": "checkpoint", "id": first }),
            json!({ "kind": "lastSuccessful", "executionId": "e" }),
            json!({ "kind": "lastSuccessful", "executionId": "e", "beforeStep": 6 }),
        ];
        let qs: Vec<Query> = qs
            .into_iter()
            .map(|v| serde_json::from_value(v).unwrap())
            .collect();
        let mut rt = reopen(&store, "c", 2).await;
        assert!(!rt.machine().is_whole(), "the resume read the tail");
        let tail: Vec<String> = qs.iter().map(|q| rt.machine().query(q).unwrap()).collect();
        assert!(
            !rt.machine().is_whole(),
            "checkpoint queries need no whole load"
        );
        rt.ensure_whole().await.unwrap();
        let whole: Vec<String> = qs.iter().map(|q| rt.machine().query(q).unwrap()).collect();
        assert_eq!(tail, whole, "tail and whole disagree on checkpoints");
        let groups: Value = serde_json::from_str(&whole[0]).unwrap();
        assert_eq!(
            groups[0]["checkpoints"].as_array().unwrap().len(),
            12,
            "{groups}"
        );
        let last: Value = serde_json::from_str(&whole[3]).unwrap();
        assert_eq!(last["stepIndex"], 5);
        rt.close().await.unwrap();

        // A version-1 state (before checkpoint marks) is not read ...
        let lease = store.acquire("c").await.unwrap();
        let head = store.head(&lease).await.unwrap();
        let mut st: Value = serde_json::from_slice(head.state.as_deref().unwrap()).unwrap();
        assert_eq!(st["v"], 2);
        st["v"] = json!(1);
        st["marks"].as_object_mut().unwrap().remove("checkpoints");
        let batch = WriteBatch {
            session_at: head.session_len,
            state: Some(st.to_string().into_bytes()),
            ..WriteBatch::default()
        };
        store.write(&lease, &batch).await.unwrap();
        store.release(&lease).await.unwrap();
        let rt = reopen(&store, "c", 3).await;
        assert!(
            rt.with_machine(|m| m.is_whole()).unwrap(),
            "a version-1 state is not read"
        );
        rt.close().await.unwrap();
        // ... and the resume's write replaced it: the next resume reads the tail.
        let mut rt = reopen(&store, "c", 4).await;
        assert!(!rt.machine().is_whole(), "the state was written again");
        assert_eq!(rt.machine().query(&qs[0]).unwrap(), whole[0]);
        rt.close().await.unwrap();
    });
}

/// A message queued while the model ran, then an interrupt, then another
/// message: the queued one was sent first and must reach the model first.
/// `send` delivers the new message at once when the agent is idle and leaves
/// the older queued one for after the model's answer.
#[test]
fn a_queued_message_is_delivered_before_a_later_one_after_an_interrupt() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("q"), tools(), 1, 10.0)
            .await
            .unwrap();
        let s = send(&mut rt, "a", 11.0).await;
        let t1 = model_ticket(&s).unwrap();
        let s = send(&mut rt, "b", 12.0).await;
        assert!(s.commands.is_empty(), "queued while the model runs");
        rt.handle(Input::Interrupt { note: None }, 13.0)
            .await
            .unwrap();
        // The late answer is ignored.
        reply(&mut rt, t1, text("late"), 14.0).await;
        let s = send(&mut rt, "c", 15.0).await;
        let Some(Command::CallModel { request, .. }) = s.commands.first().cloned() else {
            panic!("a model call: {:?}", s.commands)
        };
        let seen = user_texts(&rt.machine().messages_json(Some(request.message_count)));
        assert_eq!(
            seen,
            ["a", "b", "c"],
            "the model sees the messages in the order sent"
        );
        rt.close().await.unwrap();
    });
}

/// The same after a crash resume that does not run on.
#[test]
fn a_queued_message_is_delivered_before_a_later_one_after_a_crash() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("qc"), tools(), 1, 10.0)
            .await
            .unwrap();
        let s = send(&mut rt, "a", 11.0).await;
        assert!(model_ticket(&s).is_some());
        send(&mut rt, "b", 12.0).await;
        drop(rt);
        store.crash();
        let mut rt = AgentRuntime::open(store.clone(), "qc", tools(), 2)
            .await
            .unwrap();
        rt.resume(ResumeStrategy::Crash, None, false, 20.0)
            .await
            .unwrap();
        let s = send(&mut rt, "c", 21.0).await;
        let Some(Command::CallModel { request, .. }) = s.commands.first().cloned() else {
            panic!("a model call: {:?}", s.commands)
        };
        let seen = user_texts(&rt.machine().messages_json(Some(request.message_count)));
        assert_eq!(
            seen,
            ["a", "b", "c"],
            "the model sees the messages in the order sent"
        );
        rt.close().await.unwrap();
    });
}

/// A store whose next `read_session` fails once when armed (a network store's
/// transient read error); everything else goes to the inner store.
#[derive(Debug, Clone)]
struct FlakyReads {
    inner: MemoryStorage,
    armed: Arc<std::sync::atomic::AtomicBool>,
}

impl AgentStorage for FlakyReads {
    async fn create(&self, id: &str, init: &WriteBatch) -> Result<Lease> {
        self.inner.create(id, init).await
    }
    async fn acquire(&self, id: &str) -> Result<Lease> {
        self.inner.acquire(id).await
    }
    async fn head(&self, lease: &Lease) -> Result<AgentHead> {
        self.inner.head(lease).await
    }
    async fn read_session(&self, id: &str, start: u64, end: u64) -> Result<Vec<u8>> {
        if self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            return Err(forkpoint_core::Error::new(
                ErrorCode::Io,
                "transient read error",
            ));
        }
        self.inner.read_session(id, start, end).await
    }
    async fn read_events(
        &self,
        id: &str,
        since: Option<u64>,
        limit: usize,
    ) -> Result<Vec<Arc<str>>> {
        self.inner.read_events(id, since, limit).await
    }
    async fn tail_events(&self, id: &str, count: usize) -> Result<Vec<Arc<str>>> {
        self.inner.tail_events(id, count).await
    }
    async fn write(&self, lease: &Lease, batch: &WriteBatch) -> Result<()> {
        self.inner.write(lease, batch).await
    }
    async fn release(&self, lease: &Lease) -> Result<()> {
        self.inner.release(lease).await
    }
    async fn list(&self) -> Result<Vec<Listed>> {
        self.inner.list().await
    }
    async fn exists(&self, id: &str) -> Result<bool> {
        self.inner.exists(id).await
    }
    async fn delete(&self, id: &str) -> Result<()> {
        self.inner.delete(id).await
    }
}

/// A restore whose re-read of the session fails after its `leaf` entry was
/// written: the machine still holds the old path while its writer appends on
/// the restored one, so what it goes on with is not what the store holds.
/// It must either refuse to go on (CLOSED) or agree with the store.
#[test]
fn a_restore_that_fails_after_moving_the_leaf_does_not_diverge() {
    pollster::block_on(async {
        let mem = MemoryStorage::new();
        let store = FlakyReads {
            inner: mem.clone(),
            armed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        };
        let mut rt = AgentRuntime::create(store.clone(), meta("f"), tools(), 1, 10.0)
            .await
            .unwrap();
        turn(&mut rt, "first", 11.0).await;
        let cp = rt
            .handle(
                Input::Checkpoint {
                    args: json!({ "executionId": "e", "stepName": "s", "stepIndex": 0 }),
                },
                12.0,
            )
            .await
            .unwrap();
        let cp: Value = serde_json::from_str(cp.reply.value.as_deref().unwrap()).unwrap();
        turn(&mut rt, "second", 20.0).await;
        store.armed.store(true, std::sync::atomic::Ordering::SeqCst);
        let e = rt
            .restore(cp["id"].as_str().unwrap(), 30.0)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Io);
        match rt
            .handle(
                Input::Send {
                    content: json!("third"),
                },
                40.0,
            )
            .await
        {
            Err(e) => assert!(
                matches!(e.code, ErrorCode::Closed | ErrorCode::LeaseLost),
                "{e}"
            ),
            Ok(s) => {
                let ticket = model_ticket(&s).unwrap();
                let seen = rt.machine().messages_json(None);
                reply(&mut rt, ticket, text("ok"), 41.0).await;
                let seen_after = rt.machine().messages_json(None);
                rt.close().await.unwrap();
                let mut fresh = reopen(&mem, "f", 5).await;
                fresh.ensure_whole().await.unwrap();
                let stored = fresh.machine().messages_json(None);
                assert_eq!(
                    user_texts(&seen_after),
                    user_texts(&stored),
                    "the machine went on with a context the store does not hold (it sent {seen})"
                );
            }
        }
    });
}

/// Drives commands with a fixed tool answer until none is left; returns how
/// many model calls were made (at most `max`).
async fn settle<S: AgentStorage>(
    rt: &mut AgentRuntime<S>,
    first: Vec<Command>,
    replies: &mut std::collections::VecDeque<Value>,
    max: usize,
) -> Result<usize> {
    let mut queue: std::collections::VecDeque<Command> = first.into();
    let mut calls = 0;
    let now = Cell::new(1000.0);
    let tick = || {
        now.set(now.get() + 1.0);
        now.get()
    };
    while let Some(c) = queue.pop_front() {
        match c {
            Command::CallModel { ticket, .. } => {
                calls += 1;
                if calls > max {
                    break;
                }
                let r = replies.pop_front().unwrap_or_else(|| text("done"));
                let s = rt
                    .handle(Input::ModelReply { ticket, reply: r }, tick())
                    .await?;
                queue.extend(s.commands);
            }
            Command::RunTool { ticket, .. } => {
                let s = rt
                    .handle(
                        Input::ToolDone {
                            ticket,
                            outcome: ToolOutcome::Value { value: "1".into() },
                        },
                        tick(),
                    )
                    .await?;
                queue.extend(s.commands);
            }
            _ => {}
        }
    }
    Ok(calls)
}

/// A fresh agent that sent "go" and got `r` as the model's answer; the
/// commands that followed are carried out (tools answer `1`, the model `done`).
async fn answered(
    id: &str,
    r: Value,
) -> (MemoryStorage, AgentRuntime<MemoryStorage>, Result<usize>) {
    let store = MemoryStorage::new();
    let mut rt = AgentRuntime::create(store.clone(), meta(id), tools(), 1, 10.0)
        .await
        .unwrap();
    let s = send(&mut rt, "go", 11.0).await;
    let ticket = model_ticket(&s).unwrap();
    let out = match rt
        .handle(Input::ModelReply { ticket, reply: r }, 12.0)
        .await
    {
        Ok(s) => {
            let mut replies = std::collections::VecDeque::new();
            settle(&mut rt, s.commands, &mut replies, 5).await
        }
        Err(e) => Err(e),
    };
    (store, rt, out)
}

fn messages_of(store: &MemoryStorage, id: &str) -> Vec<Value> {
    let (session, _, _) = store.raw(id).unwrap();
    let s = Session::from_bytes(session, &LoadOptions::default(), None).unwrap();
    let ctx: Value = serde_json::from_str(&s.context_json(None, false).unwrap()).unwrap();
    ctx["messages"].as_array().unwrap().clone()
}

/// The model's answer is stored as an assistant message whatever `role` the
/// provider's object carries: a `role: "user"` answer was stored as a user
/// turn (the transcript says the user wrote it) and the model was called again.
#[test]
fn a_reply_is_stored_as_the_assistant_s_whatever_its_role() {
    pollster::block_on(async {
        for (i, role) in ["user", "toolResult"].into_iter().enumerate() {
            let id = format!("role{i}");
            let r = json!({ "role": role, "toolCallId": "u", "content": [{ "type": "text", "text": "from the model" }] });
            let (store, rt, out) = answered(&id, r).await;
            out.unwrap();
            rt.close().await.unwrap();
            let ms = messages_of(&store, &id);
            let m = ms
                .iter()
                .find(|m| m.to_string().contains("from the model"))
                .unwrap();
            assert_eq!(m["role"], "assistant", "{m}");
            assert_eq!(
                ms.iter().filter(|m| m["role"] == "user").count(),
                1,
                "only the user's message is a user turn: {ms:?}"
            );
        }
    });
}

/// A provider that gives the content as a string (OpenAI Chat style): the
/// text is kept, not dropped for an empty answer.
#[test]
fn a_reply_whose_content_is_a_string_keeps_its_text() {
    pollster::block_on(async {
        let (store, mut rt, out) = answered("str", json!({ "content": "just text" })).await;
        out.unwrap();
        assert_eq!(rt.machine().last_text(), "just text");
        rt.close().await.unwrap();
        let ms = messages_of(&store, "str");
        assert!(ms[1].to_string().contains("just text"), "{}", ms[1]);
    });
}

/// Two calls of one answer with the same id: each call gets its own result
/// (the first result closed both, so the second never ran and never got one).
#[test]
fn every_call_of_an_answer_gets_a_result_even_with_a_repeated_id() {
    pollster::block_on(async {
        let r = calls(&[
            ("d", "echo", json!({ "n": 1 })),
            ("d", "echo", json!({ "n": 2 })),
        ]);
        let (store, rt, out) = answered("dup", r).await;
        out.unwrap();
        rt.close().await.unwrap();
        let ms = messages_of(&store, "dup");
        let call_ids: Vec<String> = ms
            .iter()
            .filter(|m| m["role"] == "assistant")
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| b["type"] == "toolCall")
            .map(|b| b["id"].as_str().unwrap().to_string())
            .collect();
        let result_ids: Vec<String> = ms
            .iter()
            .filter(|m| m["role"] == "toolResult")
            .map(|m| m["toolCallId"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(call_ids.len(), 2);
        assert_eq!(call_ids, result_ids, "one result per call, in call order");
    });
}

/// An answer the machine cannot store (a non-string tool name, a block that
/// is not an object, a non-string role) is a failed model call: the input
/// errors, and the machine does not stay WORKING at STREAMING_MODEL with no
/// `error` event (a resume then reports a model call that never ended).
#[test]
fn an_answer_that_cannot_be_stored_ends_the_model_call() {
    pollster::block_on(async {
        let bad = [
            json!({ "content": [{ "type": "toolCall", "id": "x", "name": 5, "arguments": {} }] }),
            json!({ "content": ["hello"] }),
            json!({ "content": [{ "type": "text", "text": "x", "id": 7 }, { "type": "toolCall", "id": "t", "name": "echo", "arguments": {} }] }),
        ];
        for (i, r) in bad.into_iter().enumerate() {
            let id = format!("bad{i}");
            let (store, mut rt, out) = answered(&id, r.clone()).await;
            assert!(out.is_err(), "{r}");
            let st: Value =
                serde_json::from_str(&rt.machine().query(&q("status")).unwrap()).unwrap();
            assert_eq!(st["state"], "READY", "{r}: {st}");
            assert_eq!(st["breakpoint"], "READY", "{r}: {st}");
            rt.close().await.unwrap();
            let (_, events, _) = store.raw(&id).unwrap();
            let events = String::from_utf8(events).unwrap();
            assert!(
                events.contains("\"type\":\"error\""),
                "{r}: an error event: {events}"
            );
            // The agent goes on.
            let mut rt = reopen(&store, &id, 4).await;
            assert_eq!(rt.machine().breakpoint(), Breakpoint::Ready);
            turn(&mut rt, "again", 50.0).await;
            rt.close().await.unwrap();
        }
    });
}

/// What `JSON.stringify` makes of a tool's error message (or a model's text)
/// holding a lone surrogate — `\ud83d`, from a stream cut inside an emoji —
/// is refused by the bindings' input parser (napi `NativeAgent.input` parses
/// with `agent::parse_json`). The `toolDone` (or `modelReply`) never reaches
/// the machine: the call stays EXECUTING, the agent stays running, and every
/// later message is queued and never delivered until an interrupt. The same
/// happens to a model answer nested deeper than 512 levels.
#[test]
fn a_tool_error_with_a_lone_surrogate_still_ends_the_call() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("ls"), tools(), 1, 10.0)
            .await
            .unwrap();
        let s = send(&mut rt, "go", 11.0).await;
        let ticket = model_ticket(&s).unwrap();
        let s = reply(&mut rt, ticket, calls(&[("c", "echo", json!({}))]), 12.0).await;
        let (ticket, _) = tool_ticket(&s).unwrap();
        // As the TS driver builds it: JSON.stringify({kind: 'toolDone', ticket, outcome}).
        let text = format!(
            r#"{{"kind":"toolDone","ticket":{ticket},"outcome":{{"kind":"error","message":"cut \ud83d"}}}}"#
        );
        let input =
            Input::from_json(&text).expect("the driver's toolDone is an input the machine takes");
        let s = rt.handle(input, 13.0).await.unwrap();
        // The call ended (the model is asked again) and the text kept what it could.
        assert!(
            matches!(s.commands.first(), Some(Command::CallModel { .. })),
            "{:?}",
            s.commands
        );
        let rec = rt.machine().core().record("c").unwrap().unwrap().clone();
        assert!(rec.state.is_terminal(), "{:?}", rec.state);
        assert!(rt.machine().messages_json(None).contains("cut \u{fffd}"));
        rt.close().await.unwrap();
    });
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Tail-resumed and whole-loaded machines agree, and the store stays sound,
/// over random runs: sends, answers with calls, tool results, decisions,
/// interrupts, todos, snapshots, checkpoints and restores, forks, closes and
/// crashes, each reopen resumed from the tail when it can.
#[test]
fn random_runs_tail_and_whole_agree() {
    pollster::block_on(async {
        let mut tails = 0;
        let mut reopens = 0;
        let mut usage_from_tail = 0;
        for seed in 1..=150u64 {
            let mut r = Rng(seed * 0x9E37_79B9 + 1);
            let store = MemoryStorage::new();
            let id = "rand";
            let mut rt = AgentRuntime::create(store.clone(), meta(id), tools(), seed, 10.0)
                .await
                .unwrap();
            let mut now = 100.0;
            let mut cmds: Vec<Command> = Vec::new();
            let mut cps: Vec<String> = Vec::new();
            let mut call_n = 0;
            let mut log: Vec<String> = Vec::new();
            for _ in 0..60 {
                now += 3.0;
                let op = r.below(14);
                log.push(format!("op{op}"));
                let label = format!("seed {seed}: {}", log.join(" "));
                let mut step: Option<Result<Step>> = None;
                match op {
                    0 | 1 => {
                        step = Some(
                            rt.handle(
                                Input::Send {
                                    content: json!(format!("m{now}")),
                                },
                                now,
                            )
                            .await,
                        )
                    }
                    2 | 3 => {
                        if let Some(i) = cmds
                            .iter()
                            .position(|c| matches!(c, Command::CallModel { .. }))
                        {
                            let Command::CallModel { ticket, .. } = cmds.remove(i) else {
                                unreachable!()
                            };
                            let ans = match r.below(3) {
                                0 => text("fine"),
                                _ => {
                                    let k = 1 + r.below(2);
                                    let cs: Vec<(String, &str, Value)> = (0..k)
                                        .map(|_| {
                                            call_n += 1;
                                            let name =
                                                if r.below(3) == 0 { "danger" } else { "echo" };
                                            (format!("c{call_n}"), name, json!({ "n": call_n }))
                                        })
                                        .collect();
                                    let refs: Vec<(&str, &str, Value)> = cs
                                        .iter()
                                        .map(|(a, b, c)| (a.as_str(), *b, c.clone()))
                                        .collect();
                                    calls(&refs)
                                }
                            };
                            step = Some(
                                rt.handle(Input::ModelReply { ticket, reply: ans }, now)
                                    .await,
                            );
                        }
                    }
                    4 | 5 => {
                        if let Some(i) = cmds
                            .iter()
                            .position(|c| matches!(c, Command::RunTool { .. }))
                        {
                            let Command::RunTool { ticket, .. } = cmds.remove(i) else {
                                unreachable!()
                            };
                            step = Some(
                                rt.handle(
                                    Input::ToolDone {
                                        ticket,
                                        outcome: ToolOutcome::Value {
                                            value: "{\"ok\":1}".into(),
                                        },
                                    },
                                    now,
                                )
                                .await,
                            );
                        }
                    }
                    6 => {
                        if let Some(p) = rt.machine().pending().first().cloned() {
                            step = Some(
                                rt.handle(
                                    Input::Decide {
                                        call_id: p,
                                        allow: r.below(2) == 0,
                                        note: None,
                                    },
                                    now,
                                )
                                .await,
                            );
                        }
                    }
                    7 => {
                        if r.below(3) == 0 {
                            step = Some(rt.handle(Input::Interrupt { note: None }, now).await);
                        } else {
                            let st = ["pending", "completed"][r.below(2) as usize];
                            step = Some(
                                rt.handle(
                                    Input::SetTodos { todos: json!([{ "id": "t", "title": format!("x{now}"), "status": st }]) },
                                    now,
                                )
                                .await,
                            );
                        }
                    }
                    8 => {
                        let s = rt
                            .handle(
                                Input::Checkpoint {
                                    args: json!({ "executionId": "e", "stepName": "s", "stepIndex": cps.len() }),
                                },
                                now,
                            )
                            .await;
                        if let Ok(s) = &s {
                            let c: Value =
                                serde_json::from_str(s.reply.value.as_deref().unwrap()).unwrap();
                            cps.push(c["id"].as_str().unwrap().to_string());
                        }
                        step = Some(s);
                    }
                    9 => {
                        if !cps.is_empty() && !rt.machine().is_running() {
                            let c = cps[r.below(cps.len() as u64) as usize].clone();
                            rt.restore(&c, now)
                                .await
                                .unwrap_or_else(|e| panic!("{label}: restore {e}"));
                            cmds.clear();
                        }
                    }
                    10 => match rt.fork(store.clone(), None, tools(), seed + 7, now).await {
                        Ok((f, _)) => {
                            let fid = f.lease().agent_id.clone();
                            f.close().await.unwrap();
                            let (s, _, _) = store.raw(&fid).unwrap();
                            Session::from_bytes(s, &LoadOptions::default(), None)
                                .unwrap_or_else(|e| panic!("{label}: fork loads: {e}"));
                            let mut f = AgentRuntime::open(store.clone(), &fid, tools(), 1)
                                .await
                                .unwrap();
                            f.resume(ResumeStrategy::Crash, None, false, now)
                                .await
                                .unwrap();
                            assert!(
                                f.machine().core().open_calls().unwrap().is_empty(),
                                "{label}: fork open call"
                            );
                            f.close().await.unwrap();
                        }
                        Err(e) => {
                            assert_eq!(e.code, ErrorCode::SnapshotNotFound, "{label}: fork {e}")
                        }
                    },
                    11 => {
                        step = Some(
                            rt.handle(
                                Input::ToolEvent {
                                    call_id: "c1".into(),
                                    event_type: "p".into(),
                                    data: Some(json!({ "n": 1 })),
                                },
                                now,
                            )
                            .await,
                        );
                    }
                    _ => {
                        // Close (or crash) and reopen.
                        let crash = r.below(2) == 0;
                        if crash {
                            drop(rt);
                            store.crash();
                        } else {
                            rt.close().await.unwrap();
                        }
                        cmds.clear();
                        let (session, _, _) = store.raw(id).unwrap();
                        Session::from_bytes(session, &LoadOptions::default(), None)
                            .unwrap_or_else(|e| panic!("{label}: strict load: {e}"));
                        rt = AgentRuntime::open(store.clone(), id, tools(), seed + now as u64)
                            .await
                            .unwrap();
                        let strategy = if r.below(2) == 0 {
                            ResumeStrategy::Crash
                        } else {
                            ResumeStrategy::Manual
                        };
                        let auto = r.below(4) == 0;
                        let (st, _) = rt
                            .resume(strategy, None, auto, now)
                            .await
                            .unwrap_or_else(|e| panic!("{label}: resume {e}"));
                        cmds.extend(st.commands);
                        reopens += 1;
                        let from_tail = !rt.machine().is_whole();
                        // Usage first: from the resume state when it has the
                        // totals (the history is not read), else loaded.
                        let qs = ["usage", "status", "todos", "openCalls", "checkpoints"];
                        let mut tail = Vec::new();
                        for k in qs {
                            tail.push(rt.query(&q(k)).await.unwrap());
                            if k == "usage" && from_tail && !rt.machine().is_whole() {
                                usage_from_tail += 1;
                            }
                        }
                        rt.ensure_whole().await.unwrap();
                        let mut whole = Vec::new();
                        for k in qs {
                            whole.push(rt.query(&q(k)).await.unwrap());
                        }
                        if from_tail {
                            tails += 1;
                        }
                        assert_eq!(
                            tail, whole,
                            "{label}: tail ({from_tail}) and whole disagree"
                        );
                        // Compare with a fresh whole load of the same store.
                        let (session, _, _) = store.raw(id).unwrap();
                        let s =
                            Session::from_bytes(session, &LoadOptions::default(), None).unwrap();
                        let mut core = forkpoint_core::agent::AgentCore::from_session(&s).unwrap();
                        let oc: Vec<String> = core
                            .open_calls()
                            .unwrap()
                            .into_iter()
                            .map(|c| c.0)
                            .collect();
                        let mine: Vec<String> = rt
                            .machine()
                            .core()
                            .open_calls()
                            .unwrap()
                            .into_iter()
                            .map(|c| c.0)
                            .collect();
                        assert_eq!(oc, mine, "{label}: open calls");
                        if strategy == ResumeStrategy::Crash {
                            assert!(oc.is_empty(), "{label}: open after a crash resume");
                        }
                        // A record that is not terminal belongs to an open call.
                        for rec in core.records().unwrap() {
                            assert!(
                                rec.state.is_terminal() || oc.contains(&rec.id),
                                "{label}: record {} {:?} without an open call",
                                rec.id,
                                rec.state
                            );
                        }
                    }
                }
                if let Some(s) = step {
                    match s {
                        Ok(s) => {
                            for c in &s.commands {
                                if let Command::RunTool { call_id, .. } = c {
                                    let rec = rt
                                        .machine()
                                        .core()
                                        .record(call_id)
                                        .unwrap()
                                        .unwrap()
                                        .clone();
                                    let runs = rec
                                        .audit
                                        .iter()
                                        .filter(|a| a.state == ToolCallState::Executing)
                                        .count();
                                    assert_eq!(
                                        runs, 1,
                                        "{label}: {call_id} run again: {:?}",
                                        rec.audit
                                    );
                                }
                            }
                            for c in s.commands {
                                match c {
                                    Command::Abort => cmds.clear(),
                                    c => cmds.push(c),
                                }
                            }
                        }
                        Err(e) => {
                            assert!(
                                matches!(
                                    e.code,
                                    ErrorCode::PermissionNotPending
                                        | ErrorCode::SnapshotNotFound
                                        | ErrorCode::InvalidInput
                                ),
                                "{label}: {e}"
                            );
                        }
                    }
                }
                assert!(
                    cmds.len() <= 1,
                    "{label}: two side effects at once: {cmds:?}"
                );
                // Seqs strictly increase in the store.
                let lines = store.read_events(id, None, usize::MAX).await.unwrap();
                let mut last = 0;
                for l in &lines {
                    let m = forkpoint_core::events::parse_event_line(l, 512).unwrap();
                    assert!(m.seq > last, "{label}: seq {} after {last}", m.seq);
                    last = m.seq;
                }
            }
            let _ = rt.close().await;
        }
        eprintln!(
            "{reopens} reopens, {tails} from the tail, {usage_from_tail} with the usage from the resume state"
        );
        assert!(tails > reopens / 3, "{tails} of {reopens}");
        assert!(usage_from_tail > tails / 2, "{usage_from_tail} of {tails}");
    });
}

/// Tool results, tool events and messages at every depth around the limit:
/// never a panic, the call always ends (with its result or why it could not
/// be stored), the session loads strictly and the agent reopens.
#[test]
fn deep_values_around_the_limit() {
    pollster::block_on(async {
        for depth in [500usize, 505, 508, 509, 510, 511, 512, 513] {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let id = format!("deep{depth}");
            let store = MemoryStorage::new();
            let mut rt = AgentRuntime::create(store.clone(), meta(&id), tools(), 1, 10.0)
                .await
                .unwrap();
            let s = send(&mut rt, "go", 11.0).await;
            let ticket = model_ticket(&s).unwrap();
            let s = reply(&mut rt, ticket, calls(&[("c", "echo", json!({}))]), 12.0).await;
            let (ticket, _) = tool_ticket(&s).unwrap();
            let deep_v: Value = {
                let mut de = serde_json::Deserializer::from_str(&deep);
                de.disable_recursion_limit();
                serde::Deserialize::deserialize(&mut de).unwrap()
            };
            let ev = rt
                .handle(
                    Input::ToolEvent {
                        call_id: "c".into(),
                        event_type: "deep".into(),
                        data: Some(deep_v),
                    },
                    12.5,
                )
                .await;
            if let Err(e) = &ev {
                assert!(
                    matches!(e.code, ErrorCode::InvalidInput | ErrorCode::LimitExceeded),
                    "{depth}: {e}"
                );
            }
            let s = rt
                .handle(
                    Input::ToolDone {
                        ticket,
                        outcome: ToolOutcome::Value {
                            value: deep.clone(),
                        },
                    },
                    13.0,
                )
                .await
                .unwrap_or_else(|e| panic!("{depth}: tool done: {e}"));
            let rec = rt.machine().core().record("c").unwrap().unwrap().clone();
            assert!(rec.state.is_terminal(), "{depth}: {:?}", rec.state);
            assert!(
                model_ticket(&s).is_some(),
                "{depth}: the model is asked next"
            );
            rt.close().await.unwrap();
            let (session, events, _) = store.raw(&id).unwrap();
            Session::from_bytes(session, &LoadOptions::default(), None)
                .unwrap_or_else(|e| panic!("{depth}: strict load: {e}"));
            for l in String::from_utf8(events).unwrap().lines() {
                forkpoint_core::events::parse_event_line(l, 512)
                    .unwrap_or_else(|e| panic!("{depth}: event: {e}"));
            }
            let rt = reopen(&store, &id, 2).await;
            rt.ensure_whole().await.unwrap();
            rt.close().await.unwrap();
        }
    });
}

/// A checkpoint whose state is nested deeper than serde_json's default limit
/// (128) is written and acknowledged, but never listed or found: its entry is
/// read back with the default recursion limit and silently skipped.
#[test]
fn a_deep_checkpoint_is_found_after_it_was_created() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("dc"), tools(), 1, 10.0)
            .await
            .unwrap();
        turn(&mut rt, "hi", 11.0).await;
        let depth = 200;
        let state: Value = {
            let t = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            let mut de = serde_json::Deserializer::from_str(&t);
            de.disable_recursion_limit();
            serde::Deserialize::deserialize(&mut de).unwrap()
        };
        let s = rt
            .handle(
                Input::Checkpoint {
                    args: json!({ "executionId": "e", "stepName": "s", "stepIndex": 0, "state": state }),
                },
                20.0,
            )
            .await
            .unwrap();
        let c: Value =
            forkpoint_core::agent::parse_json(s.reply.value.as_deref().unwrap(), "reply").unwrap();
        let id = c["id"].as_str().unwrap().to_string();
        let found = rt
            .query(&serde_json::from_value(json!({ "kind": "checkpoint", "id": id })).unwrap())
            .await;
        assert!(
            found.is_ok(),
            "the acknowledged checkpoint: {:?}",
            found.err()
        );
        rt.restore(&id, 30.0).await.unwrap();
        rt.close().await.unwrap();
    });
}

/// A fork copies a todo list holding a value nested deeper than 128 levels
/// (the list was accepted and stored; the fork re-read it with serde_json's
/// default recursion limit and failed with INTERNAL).
#[test]
fn a_fork_copies_a_deep_todo_list() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("dt"), tools(), 1, 10.0)
            .await
            .unwrap();
        turn(&mut rt, "hi", 11.0).await;
        let snap = rt
            .handle(
                Input::Snapshot {
                    label: Some("s".into()),
                },
                12.0,
            )
            .await
            .unwrap();
        assert!(snap.reply.value.is_some());
        let notes: Value = {
            let t = format!("{}1{}", "[".repeat(200), "]".repeat(200));
            let mut de = serde_json::Deserializer::from_str(&t);
            de.disable_recursion_limit();
            serde::Deserialize::deserialize(&mut de).unwrap()
        };
        rt.handle(
            Input::SetTodos {
                todos: json!([{ "id": "a", "title": "x", "status": "pending", "notes": notes }]),
            },
            13.0,
        )
        .await
        .unwrap();
        let (f, _) = rt
            .fork(store.clone(), Some("s"), tools(), 2, 14.0)
            .await
            .unwrap_or_else(|e| panic!("fork: {e}"));
        let todos = f.query(&q("todos")).await.unwrap();
        assert!(todos.contains("\"notes\""), "{todos}");
        f.close().await.unwrap();
        rt.close().await.unwrap();
    });
}

/// A writer whose lease was taken over stores nothing and stays closed
/// (LEASE_LOST every time after), and the new holder goes on undisturbed.
#[test]
fn a_lost_lease_closes_the_old_writer_for_good() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut a = AgentRuntime::create(store.clone(), meta("ll"), tools(), 1, 10.0)
            .await
            .unwrap();
        turn(&mut a, "one", 11.0).await;
        store.crash(); // the lock is gone (as if the holder had died)
        let mut b = reopen(&store, "ll", 2).await;
        let before = store.raw("ll").unwrap();
        for _ in 0..2 {
            let e = a
                .handle(
                    Input::Send {
                        content: json!("stale"),
                    },
                    20.0,
                )
                .await
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::LeaseLost, "{e}");
        }
        let e = a.restore("nope", 21.0).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::LeaseLost, "{e}");
        assert_eq!(
            store.raw("ll").unwrap(),
            before,
            "nothing stored by the old writer"
        );
        a.close().await.unwrap();
        turn(&mut b, "two", 30.0).await;
        b.close().await.unwrap();
        let b = reopen(&store, "ll", 3).await;
        drop(b);
    });
}

/// Carries out commands (model: the next scripted answer or text; tools: a
/// value; decisions: allow) until the agent rests.
async fn drive_all<S: AgentStorage>(
    rt: &mut AgentRuntime<S>,
    first: Vec<Command>,
    script: &mut std::collections::VecDeque<Value>,
    now: &mut f64,
    sent: &mut Vec<String>,
) -> Result<()> {
    let mut queue: std::collections::VecDeque<Command> = first.into();
    for _ in 0..100 {
        let Some(c) = queue.pop_front() else {
            let Some(p) = rt.machine().pending().first().cloned() else {
                return Ok(());
            };
            *now += 1.0;
            let s = rt
                .handle(
                    Input::Decide {
                        call_id: p,
                        allow: true,
                        note: None,
                    },
                    *now,
                )
                .await?;
            queue.extend(s.commands);
            continue;
        };
        *now += 1.0;
        let s = match c {
            Command::CallModel { ticket, .. } => {
                let r = script.pop_front().unwrap_or_else(|| text("ok"));
                rt.handle(Input::ModelReply { ticket, reply: r }, *now)
                    .await?
            }
            Command::RunTool { ticket, .. } => {
                rt.handle(
                    Input::ToolDone {
                        ticket,
                        outcome: ToolOutcome::Value { value: "7".into() },
                    },
                    *now,
                )
                .await?
            }
            _ => continue,
        };
        queue.extend(s.commands);
    }
    let _ = sent;
    panic!("the agent does not rest");
}

/// Crash points of a run with approvals, queued messages, todos and a restore:
/// for each operation failing, tearing or losing its acknowledgement, both
/// resume strategies; the tail resume agrees with a whole load on status,
/// todos and open calls, and messages reach the model in the order sent.
#[test]
fn crash_points_tail_whole_and_delivery_order() {
    use forkpoint_core::storage::{Fault, FaultPlan, FaultStorage};
    async fn run<S: AgentStorage>(store: S, sent: &mut Vec<String>) -> Result<()> {
        let mut now = 100.0;
        let mut script: std::collections::VecDeque<Value> = vec![
            calls(&[("c1", "echo", json!({})), ("c2", "danger", json!({}))]),
            text("after c1 c2"),
            text("after b"),
            calls(&[("c3", "echo", json!({}))]),
            text("after c3"),
        ]
        .into();
        let mut rt = AgentRuntime::create(store, meta("cp"), tools(), 1, 10.0).await?;
        let say = |rt_sent: &mut Vec<String>, t: &str| {
            rt_sent.push(t.to_string());
            json!(t)
        };
        now += 1.0;
        let s = rt
            .handle(
                Input::Send {
                    content: say(sent, "a"),
                },
                now,
            )
            .await?;
        // Answer: two calls; c1 runs, c2 waits for a decision.
        let mut q: std::collections::VecDeque<Command> = s.commands.into();
        while let Some(c) = q.pop_front() {
            now += 1.0;
            let s = match c {
                Command::CallModel { ticket, .. } => {
                    rt.handle(
                        Input::ModelReply {
                            ticket,
                            reply: script.pop_front().unwrap(),
                        },
                        now,
                    )
                    .await?
                }
                Command::RunTool { ticket, .. } => {
                    rt.handle(
                        Input::ToolDone {
                            ticket,
                            outcome: ToolOutcome::Value { value: "1".into() },
                        },
                        now,
                    )
                    .await?
                }
                _ => continue,
            };
            q.extend(s.commands);
        }
        now += 1.0;
        rt.handle(
            Input::Send {
                content: say(sent, "b"),
            },
            now,
        )
        .await?; // queued
        now += 1.0;
        rt.handle(
            Input::SetTodos {
                todos: json!([{ "id": "t", "title": "w", "status": "in_progress" }]),
            },
            now,
        )
        .await?;
        now += 1.0;
        let cp = rt
            .handle(
                Input::Checkpoint {
                    args: json!({ "executionId": "e", "stepName": "s", "stepIndex": 1 }),
                },
                now,
            )
            .await?;
        let cp: Value = serde_json::from_str(cp.reply.value.as_deref().unwrap()).unwrap();
        drive_all(&mut rt, Vec::new(), &mut script, &mut now, sent).await?;
        now += 1.0;
        let s = rt
            .handle(
                Input::Send {
                    content: say(sent, "c"),
                },
                now,
            )
            .await?;
        drive_all(&mut rt, s.commands, &mut script, &mut now, sent).await?;
        now += 1.0;
        rt.restore(cp["id"].as_str().unwrap(), now).await?;
        now += 1.0;
        let s = rt
            .handle(
                Input::Send {
                    content: say(sent, "d"),
                },
                now,
            )
            .await?;
        // The model call of d is left running: a crash stops it.
        assert!(
            model_ticket(&s).is_some()
                || !s.commands.is_empty()
                || rt.machine().pending().len() == 1
        );
        now += 1.0;
        rt.handle(
            Input::Send {
                content: say(sent, "e"),
            },
            now,
        )
        .await?; // queued while busy
        rt.close().await?;
        Ok(())
    }
    pollster::block_on(async {
        let counting = FaultStorage::counting(MemoryStorage::new());
        let mut sent = Vec::new();
        run(&counting, &mut sent).await.unwrap();
        let total = counting.ops();
        let mut tails = 0;
        for at in 1..=total {
            for fault in [Fault::Fail, Fault::Tear, Fault::LoseAck] {
                for strategy in [ResumeStrategy::Manual, ResumeStrategy::Crash] {
                    let label = format!("op {at} {fault:?} {strategy:?}");
                    let mem = MemoryStorage::new();
                    let store = FaultStorage::new(
                        mem.clone(),
                        FaultPlan {
                            at: Some(at),
                            fault,
                        },
                    );
                    let mut sent = Vec::new();
                    assert!(run(&store, &mut sent).await.is_err(), "{label}");
                    mem.crash();
                    if !mem.exists("cp").await.unwrap() {
                        continue;
                    }
                    let mut rt = AgentRuntime::open(mem.clone(), "cp", tools(), 5)
                        .await
                        .unwrap();
                    rt.resume(strategy, None, false, 9e9)
                        .await
                        .unwrap_or_else(|e| panic!("{label}: resume {e}"));
                    let from_tail = !rt.machine().is_whole();
                    tails += usize::from(from_tail);
                    let qs = ["status", "todos", "openCalls", "checkpoints"];
                    let mut tail = Vec::new();
                    for k in qs {
                        tail.push(rt.query(&q(k)).await.unwrap());
                    }
                    rt.ensure_whole().await.unwrap();
                    let mut whole = Vec::new();
                    for k in qs {
                        whole.push(rt.query(&q(k)).await.unwrap());
                    }
                    assert_eq!(
                        tail, whole,
                        "{label}: tail ({from_tail}) and whole disagree"
                    );
                    // The agent goes on; the model sees the user's messages in the order sent.
                    let mut now = 1e10;
                    let s = rt
                        .handle(
                            Input::Send {
                                content: json!("z"),
                            },
                            now,
                        )
                        .await
                        .unwrap_or_else(|e| panic!("{label}: send {e}"));
                    let mut script = std::collections::VecDeque::new();
                    drive_all(&mut rt, s.commands, &mut script, &mut now, &mut sent)
                        .await
                        .unwrap_or_else(|e| panic!("{label}: drive {e}"));
                    let seen = user_texts(&rt.machine().messages_json(None));
                    sent.push("z".into());
                    let order: Vec<&String> = seen.iter().collect();
                    let positions: Vec<usize> = order
                        .iter()
                        .map(|t| {
                            sent.iter()
                                .position(|s| s == *t)
                                .unwrap_or_else(|| panic!("{label}: {t} never sent"))
                        })
                        .collect();
                    assert!(
                        positions.windows(2).all(|w| w[0] < w[1]),
                        "{label}: delivered {seen:?}, sent {sent:?}"
                    );
                    assert!(
                        rt.machine().core().open_calls().unwrap().is_empty(),
                        "{label}: open call left"
                    );
                    rt.close().await.unwrap();
                    let (session, _, _) = mem.raw("cp").unwrap();
                    Session::from_bytes(session, &LoadOptions::default(), None)
                        .unwrap_or_else(|e| panic!("{label}: strict load: {e}"));
                }
            }
        }
        eprintln!("{total} operations, {tails} tail resumes");
    });
}

/// A resume state whose todo mark does not point at a todo entry (a state
/// file damaged or written by a buggy version) falls back to a whole load;
/// it made `open` fail with CORRUPTED_DATA.
#[test]
fn a_resume_state_with_a_bad_todo_mark_falls_back_to_a_whole_load() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("bs"), tools(), 1, 10.0)
            .await
            .unwrap();
        turn(&mut rt, "one", 11.0).await;
        rt.handle(
            Input::SetTodos {
                todos: json!([{ "id": "t", "title": "w", "status": "pending" }]),
            },
            12.0,
        )
        .await
        .unwrap();
        turn(&mut rt, "two", 13.0).await;
        rt.close().await.unwrap();
        // The state as written, with its todo mark moved one byte in.
        let lease = store.acquire("bs").await.unwrap();
        let head = store.head(&lease).await.unwrap();
        let mut st: Value = serde_json::from_slice(head.state.as_deref().unwrap()).unwrap();
        let t = st["marks"]["todos"].clone();
        assert!(t.is_array(), "a todo mark: {st}");
        let (off, len) = (t[0].as_u64().unwrap(), t[1].as_u64().unwrap());
        st["marks"]["todos"] = json!([off + 1, len - 1]);
        store
            .write(
                &lease,
                &WriteBatch {
                    session_at: head.session_len,
                    state: Some(serde_json::to_vec(&st).unwrap()),
                    ..WriteBatch::default()
                },
            )
            .await
            .unwrap();
        store.release(&lease).await.unwrap();
        let rt = AgentRuntime::open(store.clone(), "bs", tools(), 2)
            .await
            .unwrap_or_else(|e| panic!("open: {e}"));
        let todos = rt.query(&q("todos")).await.unwrap();
        assert!(todos.contains("\"w\""), "{todos}");
        rt.close().await.unwrap();
    });
}

/// A restore to a checkpoint taken while a call waited for a decision: the
/// agent waits for that decision again (PAUSED at AWAITING_APPROVAL, as a
/// resume of the same session says), not READY with a pending decision.
#[test]
fn a_restore_to_a_pending_decision_is_paused_as_a_resume_says() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("rp"), tools(), 1, 10.0)
            .await
            .unwrap();
        let s = send(&mut rt, "go", 11.0).await;
        let t = model_ticket(&s).unwrap();
        reply(&mut rt, t, calls(&[("c", "danger", json!({}))]), 12.0).await;
        assert_eq!(rt.machine().pending(), ["c".to_string()]);
        let cp = rt
            .handle(
                Input::Checkpoint {
                    args: json!({ "executionId": "e", "stepName": "s", "stepIndex": 0 }),
                },
                13.0,
            )
            .await
            .unwrap();
        let cp: Value = serde_json::from_str(cp.reply.value.as_deref().unwrap()).unwrap();
        let s = rt
            .handle(
                Input::Decide {
                    call_id: "c".into(),
                    allow: true,
                    note: None,
                },
                14.0,
            )
            .await
            .unwrap();
        let (tt, _) = tool_ticket(&s).unwrap();
        let s = rt
            .handle(
                Input::ToolDone {
                    ticket: tt,
                    outcome: ToolOutcome::Value { value: "1".into() },
                },
                15.0,
            )
            .await
            .unwrap();
        reply(&mut rt, model_ticket(&s).unwrap(), text("done"), 16.0).await;
        rt.restore(cp["id"].as_str().unwrap(), 20.0).await.unwrap();
        let live: Value = serde_json::from_str(&rt.query(&q("status")).await.unwrap()).unwrap();
        rt.close().await.unwrap();
        let rt = reopen(&store, "rp", 2).await;
        let resumed: Value = serde_json::from_str(&rt.query(&q("status")).await.unwrap()).unwrap();
        for k in ["state", "breakpoint", "pending"] {
            assert_eq!(live[k], resumed[k], "{k}: live {live} / resumed {resumed}");
        }
        assert_eq!(resumed["state"], "PAUSED");
        rt.close().await.unwrap();
    });
}

/// A fork of an agent resumed from the tail: one create, the todo list as it
/// is now, seqs continuing the parent's, a session that loads strictly and
/// opens; a create that fails leaves no fork.
#[test]
fn a_fork_of_a_tail_resumed_agent() {
    use forkpoint_core::storage::{Fault, FaultPlan, FaultStorage};
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut rt = AgentRuntime::create(store.clone(), meta("fp"), tools(), 1, 10.0)
            .await
            .unwrap();
        turn(&mut rt, "one", 11.0).await;
        rt.handle(
            Input::Snapshot {
                label: Some("s1".into()),
            },
            12.0,
        )
        .await
        .unwrap();
        rt.handle(
            Input::SetTodos {
                todos: json!([{ "id": "t", "title": "later", "status": "pending" }]),
            },
            13.0,
        )
        .await
        .unwrap();
        turn(&mut rt, "two", 14.0).await;
        rt.close().await.unwrap();
        let mut rt = reopen(&store, "fp", 2).await;
        assert!(!rt.machine().is_whole());
        let last = rt.machine().last_event().unwrap().seq;
        // A create that fails: no fork, and the parent goes on.
        let failing = FaultStorage::new(
            store.clone(),
            FaultPlan {
                at: Some(1),
                fault: Fault::Fail,
            },
        );
        assert!(
            rt.fork(&failing, Some("s1"), tools(), 3, 20.0)
                .await
                .is_err()
        );
        assert_eq!(store.list().await.unwrap().len(), 1);
        let (f, _) = rt
            .fork(store.clone(), Some("s1"), tools(), 3, 21.0)
            .await
            .unwrap();
        let fid = f.lease().agent_id.clone();
        assert!(f.query(&q("todos")).await.unwrap().contains("later"));
        f.close().await.unwrap();
        let (session, events, _) = store.raw(&fid).unwrap();
        let s = Session::from_bytes(session, &LoadOptions::default(), None).unwrap();
        assert!(!s.context_json(None, false).unwrap().contains("two"));
        let first = forkpoint_core::events::parse_event_line(
            String::from_utf8(events).unwrap().lines().next().unwrap(),
            512,
        )
        .unwrap();
        assert_eq!(first.seq, last + 1, "the fork's seqs continue the parent's");
        turn(&mut rt, "three", 30.0).await;
        rt.close().await.unwrap();
        let mut f = reopen(&store, &fid, 4).await;
        turn(&mut f, "in the fork", 40.0).await;
        f.close().await.unwrap();
    });
}

#[test]
fn inputs_with_lone_surrogates_are_read_with_replacement_characters() {
    let content = |text: &str| -> String {
        let input = Input::from_json(&format!(r#"{{"kind":"send","content":"{text}"}}"#)).unwrap();
        match input {
            Input::Send { content } => content.as_str().unwrap().to_string(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(content(r"a\ud83d"), "a\u{fffd}");
    assert_eq!(content(r"\udc00b"), "\u{fffd}b");
    assert_eq!(content(r"\ud83d\ude00"), "\u{1f600}", "a pair is kept");
    assert_eq!(
        content(r"\\ud83d"),
        r"\ud83d",
        "an escaped backslash is not an escape"
    );
    assert_eq!(content(r"\ud83d\ud83d\ude00"), "\u{fffd}\u{1f600}");
    assert_eq!(
        Input::from_json(r#"{"kind":"send","content":"x"#)
            .unwrap_err()
            .code,
        ErrorCode::InvalidInput
    );
}
