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
    let mut rt = AgentRuntime::open(store.clone(), id, tools(), seed)
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
        let mut rt = AgentRuntime::create(store.clone(), meta("t"), tools(), 1, 10.0)
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
            let (store, mut rt, out) = answered(&id, r).await;
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
        let (store, mut rt, out) = answered("dup", r).await;
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
#[ignore = "bug: an input JSON.stringify makes is refused, so the driver cannot end the tool call"]
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
        let input = forkpoint_core::agent::parse_json::<Input>(&text, "agent input")
            .expect("the driver's toolDone is an input the machine takes");
        rt.handle(input, 13.0).await.unwrap();
        assert!(!rt.machine().is_running());
        let rec = rt.machine().core().record("c").unwrap().unwrap().clone();
        assert!(rec.state.is_terminal(), "{:?}", rec.state);
        rt.close().await.unwrap();
    });
}
