//! The agent machine over storages: a scripted run, and crash-point
//! enumeration on the fault-injecting store (every operation of the run fails,
//! tears or loses its acknowledgement in turn; resume must keep everything
//! acknowledged).

use std::collections::{BTreeMap, VecDeque};

use forkpoint_core::agent::machine::{
    Command, Input, Query, ResumeStrategy, ToolOutcome, ToolSpec,
};
use forkpoint_core::agent::meta::AgentMeta;
use forkpoint_core::agent::runtime::{AgentRuntime, Step};
use forkpoint_core::agent::{Breakpoint, ToolCallState};
use forkpoint_core::events::parse_event_line;
use forkpoint_core::storage::{AgentStorage, Fault, FaultPlan, FaultStorage, MemoryStorage};
use forkpoint_core::{ErrorCode, LoadOptions, Result, Session};
use serde_json::{Value, json};

fn rv(v: Value) -> Value {
    v
}

const ID: &str = "bot";

/// Crash resumes that read only the tail (the rest fell back to a whole load).
static TAIL_RESUMES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn meta(id: &str) -> AgentMeta {
    serde_json::from_value(json!({
        "agentId": id, "templateId": null, "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z", "lineage": [], "configVersion": "forkpoint-1",
        "model": { "provider": "scripted", "model": "s-1", "api": "scripted" },
        "tools": ["echo", "danger", "boom"], "permission": { "mode": "auto" },
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
    vec![t("echo", false), t("danger", true), t("boom", false)]
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

/// What the run was told is durable.
#[derive(Default, Debug)]
struct Acked {
    /// seq → line.
    events: BTreeMap<u64, String>,
    queue_ids: Vec<String>,
    /// Calls whose result was acknowledged.
    results: Vec<String>,
    forks: Vec<String>,
}

impl Acked {
    fn step(&mut self, s: &Step) {
        for l in &s.events {
            let m = parse_event_line(l, 512).unwrap();
            self.events.insert(m.seq, l.to_string());
        }
    }
}

struct Run<'a, S: AgentStorage> {
    rt: AgentRuntime<S>,
    replies: VecDeque<Value>,
    acked: &'a mut Acked,
    now: f64,
    /// Interrupt instead of running the next tool.
    interrupt_next_tool: bool,
    model_calls: usize,
}

impl<S: AgentStorage> Run<'_, S> {
    fn tick(&mut self) -> f64 {
        self.now += 7.0;
        self.now
    }

    async fn input(&mut self, input: Input) -> Result<Step> {
        let now = self.tick();
        let s = self.rt.handle(input, now).await?;
        self.acked.step(&s);
        Ok(s)
    }

    /// Carries out commands until none is left.
    async fn drive(&mut self, first: Vec<Command>) -> Result<()> {
        let mut queue: VecDeque<Command> = first.into();
        while let Some(c) = queue.pop_front() {
            match c {
                Command::CallModel { ticket, request } => {
                    self.model_calls += 1;
                    let msgs: Vec<Value> = serde_json::from_str(
                        &self.rt.machine().messages_json(Some(request.message_count)),
                    )
                    .unwrap();
                    assert!(!msgs.is_empty());
                    assert_eq!(request.system.as_deref(), Some("be brief"));
                    let reply = self
                        .replies
                        .pop_front()
                        .unwrap_or_else(|| text("(out of script)"));
                    let s = self
                        .input(Input::ModelReply {
                            ticket,
                            reply: rv(reply),
                        })
                        .await?;
                    queue.extend(s.commands);
                }
                Command::RunTool {
                    ticket,
                    call_id,
                    name,
                    input,
                } => {
                    if self.interrupt_next_tool {
                        self.interrupt_next_tool = false;
                        let s = self
                            .input(Input::Interrupt {
                                note: Some("stop".into()),
                            })
                            .await?;
                        assert!(matches!(s.commands.first(), Some(Command::Abort)));
                        // The tool's late answer is ignored.
                        let late = self
                            .input(Input::ToolDone {
                                ticket,
                                outcome: ToolOutcome::Value {
                                    value: json!("late").to_string(),
                                },
                            })
                            .await?;
                        assert!(late.commands.is_empty() && late.events.is_empty());
                        continue;
                    }
                    let ev = self
                        .input(Input::ToolEvent {
                            call_id: call_id.clone(),
                            event_type: "progress".into(),
                            data: Some(rv(json!({ "pct": 50 }))),
                        })
                        .await?;
                    assert!(ev.reply.bookmark.is_some());
                    let outcome = match name.as_str() {
                        "boom" => ToolOutcome::Error {
                            message: "it blew up".into(),
                        },
                        _ => ToolOutcome::Value {
                            value:
                                json!({ "echo": serde_json::from_str::<Value>(&input).unwrap() })
                                    .to_string(),
                        },
                    };
                    let s = self.input(Input::ToolDone { ticket, outcome }).await?;
                    self.acked.results.push(call_id);
                    queue.extend(s.commands);
                }
                Command::Abort => {}
                Command::Persist(_) => unreachable!("the runtime persists"),
            }
        }
        Ok(())
    }

    async fn send(&mut self, t: &str) -> Result<()> {
        let s = self
            .input(Input::Send {
                content: rv(json!(t)),
            })
            .await?;
        let q: String = serde_json::from_str(s.reply.value.as_deref().unwrap()).unwrap();
        self.acked.queue_ids.push(q);
        self.drive(s.commands).await
    }
}

/// The scripted run: about twenty steps with tools, an approval, a denial, a
/// failing tool, todos, a checkpoint and its restore, a snapshot and a fork, a
/// message queued while busy, and an interrupt.
async fn scenario<S: AgentStorage + Clone>(store: S, acked: &mut Acked) -> Result<()> {
    let rt = AgentRuntime::create(store.clone(), meta(ID), tools(), 7, 1_000.0).await?;
    let mut run = Run {
        rt,
        replies: VecDeque::from(vec![
            text("hi"),
            calls(&[
                ("c1", "echo", json!({ "a": 1 })),
                ("c2", "echo", json!({ "a": 2 })),
            ]),
            text("echoed twice"),
            calls(&[("c3", "danger", json!({ "rm": "-rf" }))]),
            text("did the dangerous thing"),
            text("and then that"),
            calls(&[("c4", "boom", json!({}))]),
            text("it failed"),
            calls(&[
                ("c5", "danger", json!({ "again": true })),
                ("", "echo", json!({ "minted": true })),
            ]),
            text("after the denial"),
            text("restored"),
            calls(&[("c6", "echo", json!({ "slow": true }))]),
            text("after the interrupt"),
        ]),
        acked,
        now: 1_000.0,
        interrupt_next_tool: false,
        model_calls: 0,
    };
    run.acked.events.clear();
    run.send("hello").await?;
    run.send("echo twice").await?;
    run.input(Input::SetTodos {
        todos: rv(json!([{ "id": "t1", "title": "ship", "status": "in_progress" }])),
    })
    .await?;
    let cp = run
        .input(Input::Checkpoint {
            args: rv(json!({ "executionId": "e1", "stepName": "mid", "stepIndex": 1 })),
        })
        .await?;
    let cp: Value = serde_json::from_str(cp.reply.value.as_deref().unwrap()).unwrap();
    run.send("do the dangerous thing").await?;
    assert_eq!(run.rt.machine().pending(), ["c3".to_string()]);
    // Sent while waiting: queued, delivered after the decision's turn.
    run.send("and then this").await?;
    let s = run
        .input(Input::Decide {
            call_id: "c3".into(),
            allow: true,
            note: None,
        })
        .await?;
    run.drive(s.commands).await?;
    let snap = run
        .input(Input::Snapshot {
            label: Some("before-boom".into()),
        })
        .await?;
    assert_eq!(snap.reply.value.as_deref(), Some("\"before-boom\""));
    let now = run.tick();
    let (fork, _) = run
        .rt
        .fork(store.clone(), Some("before-boom"), tools(), 9, now)
        .await?;
    run.acked.forks.push(fork.lease().agent_id.clone());
    fork.close().await?;
    run.send("now fail").await?;
    run.send("deny it").await?;
    let pending = run.rt.machine().pending().to_vec();
    assert_eq!(pending.len(), 1);
    let s = run
        .input(Input::Decide {
            call_id: pending[0].clone(),
            allow: false,
            note: Some("no".into()),
        })
        .await?;
    run.drive(s.commands).await?;
    let now = run.tick();
    let (_, s) = run.rt.restore(cp["id"].as_str().unwrap(), now).await?;
    run.acked.step(&s);
    run.send("after restore").await?;
    run.interrupt_next_tool = true;
    run.send("slow one").await?;
    run.send("last").await?;
    run.rt.close().await?;
    Ok(())
}

/// The checks after a crash: everything acknowledged is there, no call is
/// left open, seqs increase, the session loads strictly, and the agent goes on.
async fn open_resume<S: AgentStorage>(
    store: S,
    id: &str,
    seed: u64,
    strategy: ResumeStrategy,
    now: f64,
) -> Result<(
    AgentRuntime<S>,
    Step,
    forkpoint_core::agent::machine::Opened,
)> {
    let rt = AgentRuntime::open(store, id, tools(), seed).await?;
    let (step, opened) = rt.resume(strategy, None, false, now).await?;
    Ok((rt, step, opened))
}

async fn check_after_crash(store: MemoryStorage, acked: &Acked, label: &str) {
    store.crash();
    if !store.exists(ID).await.unwrap() {
        assert!(
            acked.events.is_empty() && acked.queue_ids.is_empty(),
            "{label}: acknowledged but no agent"
        );
        return;
    }
    let (mut rt, _, _) = open_resume(store.clone(), ID, 3, ResumeStrategy::Crash, 9e12)
        .await
        .unwrap_or_else(|e| panic!("{label}: resume failed: {e}"));
    assert!(
        rt.machine().core().open_calls().unwrap().is_empty(),
        "{label}: a call without a result"
    );
    // A resume from the tail knows what a whole load knows.
    let q = |k: &str| serde_json::from_value::<Query>(json!({ "kind": k })).unwrap();
    let tail = (
        rt.machine().query(&q("status")).unwrap(),
        rt.machine().query(&q("todos")).unwrap(),
        rt.machine().query(&q("checkpoints")).unwrap(),
    );
    let from_tail = !rt.machine().is_whole();
    rt.ensure_whole().await.unwrap();
    let whole = (
        rt.machine().query(&q("status")).unwrap(),
        rt.machine().query(&q("todos")).unwrap(),
        rt.machine().query(&q("checkpoints")).unwrap(),
    );
    assert_eq!(tail, whole, "{label}: tail and whole disagree");
    if from_tail {
        TAIL_RESUMES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let lines = store.read_events(ID, None, usize::MAX).await.unwrap();
    let mut last = 0;
    let mut by_seq = BTreeMap::new();
    for l in &lines {
        let m = parse_event_line(l, 512).unwrap();
        assert!(m.seq > last, "{label}: seq {} after {last}", m.seq);
        last = m.seq;
        by_seq.insert(m.seq, l.to_string());
    }
    for (seq, line) in &acked.events {
        assert_eq!(
            by_seq.get(seq),
            Some(line),
            "{label}: acknowledged event {seq} lost or changed"
        );
    }
    let (session, _, _) = store.raw(ID).unwrap();
    let stored = String::from_utf8(session.clone()).unwrap();
    Session::from_bytes(session, &LoadOptions::default(), None)
        .unwrap_or_else(|e| panic!("{label}: strict load: {e}"));
    for q in &acked.queue_ids {
        assert!(
            stored.contains(&format!("\"queueId\":\"{q}\"")),
            "{label}: acknowledged message {q} lost"
        );
    }
    for c in &acked.results {
        assert!(
            stored.contains(&format!("\"toolCallId\":\"{c}\"")),
            "{label}: acknowledged result of {c} lost"
        );
    }
    for f in &acked.forks {
        let (fr, _, _) = open_resume(store.clone(), f, 4, ResumeStrategy::Crash, 9e12)
            .await
            .unwrap_or_else(|e| panic!("{label}: fork {f} does not open: {e}"));
        fr.close().await.unwrap();
    }
    // The agent goes on.
    let s = rt
        .handle(
            Input::Send {
                content: rv(json!("still there?")),
            },
            9.1e12,
        )
        .await
        .unwrap();
    let mut cmds: VecDeque<Command> = s.commands.into();
    let mut turns = 0;
    while let Some(c) = cmds.pop_front() {
        turns += 1;
        assert!(turns < 50, "{label}: the agent does not settle");
        match c {
            Command::CallModel { ticket, .. } => {
                let s = rt
                    .handle(
                        Input::ModelReply {
                            ticket,
                            reply: rv(text("yes")),
                        },
                        9.2e12,
                    )
                    .await
                    .unwrap();
                cmds.extend(s.commands);
            }
            Command::RunTool { ticket, .. } => {
                let s = rt
                    .handle(
                        Input::ToolDone {
                            ticket,
                            outcome: ToolOutcome::Value { value: "1".into() },
                        },
                        9.2e12,
                    )
                    .await
                    .unwrap();
                cmds.extend(s.commands);
            }
            _ => {}
        }
    }
    assert!(
        rt.machine().pending().is_empty()
            || rt.machine().breakpoint() == Breakpoint::AwaitingApproval
    );
    rt.close().await.unwrap();
}

#[test]
fn scripted_run_on_memory() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut acked = Acked::default();
        scenario(store.clone(), &mut acked).await.unwrap();
        // Everything acknowledged is in the store, in order.
        let lines = store.read_events(ID, None, usize::MAX).await.unwrap();
        assert_eq!(
            lines.len(),
            acked.events.len() + 1,
            "only agent_created is not counted by the run"
        );
        let (session, _, meta) = store.raw(ID).unwrap();
        let meta: AgentMeta = AgentMeta::parse(&meta, ID).unwrap();
        assert_eq!(meta.tools, ["echo", "danger", "boom"]);
        let s = Session::from_bytes(session.clone(), &LoadOptions::default(), None).unwrap();
        let text = String::from_utf8(session).unwrap();
        for c in ["c1", "c2", "c3", "c4", "c5", "c6"] {
            assert!(
                text.contains(&format!("\"toolCallId\":\"{c}\"")),
                "result of {c}"
            );
        }
        assert!(text.contains("Denied by the user: no."));
        assert!(text.contains("Error: it blew up"));
        assert!(text.contains("\"forkpoint.checkpoint\""));
        assert!(s.entries().len() > 40);
        // The minted call id.
        assert!(text.contains("\"id\":\"call-"));
        // The fork: its own agent, lineage and todos.
        let forks: Vec<String> = acked.forks.clone();
        assert_eq!(forks.len(), 1);
        let (fs, fe, fm) = store.raw(&forks[0]).unwrap();
        let fm = AgentMeta::parse(&fm, &forks[0]).unwrap();
        assert_eq!(fm.lineage, [ID]);
        assert_eq!(fm.forked_from.as_ref().unwrap().snapshot, "before-boom");
        let ft = String::from_utf8(fs).unwrap();
        assert!(ft.contains("\"forkpoint.todos\""));
        assert!(
            !ft.contains("\"toolCallId\":\"c4\""),
            "the fork ends at its snapshot: {ft}"
        );
        let fe = String::from_utf8(fe).unwrap();
        assert!(fe.contains("\"agent_forked\""));
        // Reopened: nothing open, READY.
        let (mut rt, _, opened) = open_resume(store.clone(), ID, 1, ResumeStrategy::Manual, 5e12)
            .await
            .unwrap();
        assert_eq!(opened.breakpoint, Breakpoint::Ready);
        assert!(rt.machine().core().open_calls().unwrap().is_empty());
        // Resumed from the tail; its counts and todos are those of the whole session.
        assert!(!rt.machine().is_whole(), "the resume read only the tail");
        let q = |k: &str| serde_json::from_value::<Query>(json!({ "kind": k })).unwrap();
        let tail_status: Value =
            serde_json::from_str(&rt.machine().query(&q("status")).unwrap()).unwrap();
        let tail_todos = rt.machine().query(&q("todos")).unwrap();
        rt.ensure_whole().await.unwrap();
        let whole_status: Value =
            serde_json::from_str(&rt.machine().query(&q("status")).unwrap()).unwrap();
        for k in [
            "stepCount",
            "messageCount",
            "lastSfpIndex",
            "pending",
            "breakpoint",
        ] {
            assert_eq!(tail_status[k], whole_status[k], "{k}");
        }
        assert_eq!(tail_todos, rt.machine().query(&q("todos")).unwrap());
        assert!(tail_todos.contains("ship"));
        let recs = rt.machine().core().records().unwrap();
        assert!(
            recs.iter()
                .any(|r| r.id == "c6" && r.state == ToolCallState::Sealed)
        );
        assert!(
            !recs.iter().any(|r| r.id == "c5"),
            "c5 is on the branch the restore left"
        );
        // A second opener gets AGENT_LOCKED.
        let e = open_resume(store.clone(), ID, 1, ResumeStrategy::Manual, 5e12)
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::AgentLocked);
        rt.close().await.unwrap();
    });
}

#[test]
fn crash_points_are_all_recovered() {
    pollster::block_on(async {
        let counting = FaultStorage::counting(MemoryStorage::new());
        let mut acked = Acked::default();
        scenario(&counting, &mut acked).await.unwrap();
        let total = counting.ops();
        assert!(total >= 40, "the run performs {total} storage operations");
        let mut covered = 0;
        for at in 1..=total {
            for fault in [Fault::Fail, Fault::Tear, Fault::LoseAck] {
                let mem = MemoryStorage::new();
                let store = FaultStorage::new(
                    mem.clone(),
                    FaultPlan {
                        at: Some(at),
                        fault,
                    },
                );
                let mut acked = Acked::default();
                let r = scenario(&store, &mut acked).await;
                assert!(
                    r.is_err() && store.fired(),
                    "op {at} {fault:?}: the run did not fail"
                );
                check_after_crash(mem, &acked, &format!("op {at} {fault:?}")).await;
                covered += 1;
            }
        }
        let tails = TAIL_RESUMES.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "crash points covered: {covered} ({total} operations × 3 faults); {tails} resumed from the tail"
        );
        assert!(
            tails > covered / 2,
            "most crash resumes read only the tail ({tails} of {covered})"
        );
    });
}

#[test]
fn every_event_is_a_typed_agent_event() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut acked = Acked::default();
        scenario(store.clone(), &mut acked).await.unwrap();
        let mut ids = vec![ID.to_string()];
        ids.extend(acked.forks.clone());
        let mut kinds = std::collections::BTreeSet::new();
        for id in ids {
            for l in store.read_events(&id, None, usize::MAX).await.unwrap() {
                let e = forkpoint_core::agent_events::AgentEvent::from_json(&l)
                    .unwrap_or_else(|e| panic!("{l}: {e}"));
                kinds.insert(e.kind());
            }
        }
        assert!(kinds.len() >= 18, "{kinds:?}");
    });
}

#[test]
fn an_input_the_schema_refuses_is_an_error_the_model_sees() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let mut m = meta("strict-bot");
        m.tools = vec!["strict".into()];
        let strict = vec![ToolSpec {
            name: "strict".into(),
            description: "needs a path".into(),
            input_schema: json!({ "type": "object", "required": ["path"], "properties": { "path": { "type": "string" } } }),
            requires_approval: false,
        }];
        let mut rt = AgentRuntime::create(store.clone(), m, strict, 1, 1.0)
            .await
            .unwrap();
        let s = rt
            .handle(
                Input::Send {
                    content: json!("go"),
                },
                2.0,
            )
            .await
            .unwrap();
        let Some(Command::CallModel { ticket, .. }) = s.commands.first().cloned() else {
            panic!("no model call")
        };
        let s = rt
            .handle(
                Input::ModelReply {
                    ticket,
                    reply: calls(&[("bad", "strict", json!({ "path": 5 }))]),
                },
                3.0,
            )
            .await
            .unwrap();
        // The tool is not run: the model is asked again, with the error.
        let Some(Command::CallModel { request, .. }) = s.commands.first().cloned() else {
            panic!("expected a model call, got {:?}", s.commands)
        };
        let messages = rt.machine().messages_json(Some(request.message_count));
        assert!(
            messages.contains(
                "invalid input for tool 'strict': input.path: expected string, got number"
            ),
            "{messages}"
        );
        let rec = rt.machine().core().record("bad").unwrap().unwrap().clone();
        assert_eq!(rec.state, ToolCallState::Failed);
        rt.close().await.unwrap();
    });
}

#[test]
fn streamed_pieces_are_events_durable_as_they_come() {
    use forkpoint_core::agent::machine::{DeltaKind, ModelDelta};
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let rt = AgentRuntime::create(store.clone(), meta("streamer"), tools(), 1, 1.0)
            .await
            .unwrap();
        let s = rt
            .handle(
                Input::Send {
                    content: json!("go"),
                },
                2.0,
            )
            .await
            .unwrap();
        let Some(Command::CallModel { ticket, .. }) = s.commands.first().cloned() else {
            panic!("no model call")
        };
        let piece = |index, kind, text: &str| ModelDelta {
            index,
            kind,
            text: text.into(),
        };
        let kinds = |lines: &[std::sync::Arc<str>]| -> Vec<String> {
            lines
                .iter()
                .map(|l| parse_event_line(l, 512).unwrap().kind.to_string())
                .collect()
        };
        let s = rt
            .handle(
                Input::ModelDeltas {
                    ticket,
                    deltas: vec![
                        piece(0, DeltaKind::Thinking, "hmm"),
                        piece(1, DeltaKind::Text, "Hel"),
                    ],
                },
                3.0,
            )
            .await
            .unwrap();
        assert_eq!(
            kinds(&s.events),
            [
                "think_chunk_start",
                "think_chunk",
                "text_chunk_start",
                "text_chunk"
            ]
        );
        // Durable as it returns: in the store already.
        let stored = store
            .read_events("streamer", None, usize::MAX)
            .await
            .unwrap();
        assert!(stored.iter().any(|l| l.contains("\"delta\":\"Hel\"")));
        let s = rt
            .handle(
                Input::ModelDeltas {
                    ticket,
                    deltas: vec![piece(1, DeltaKind::Text, "lo")],
                },
                4.0,
            )
            .await
            .unwrap();
        assert_eq!(kinds(&s.events), ["text_chunk"]);
        let reply = json!({ "content": [{ "type": "thinking", "thinking": "hmm" }, { "type": "text", "text": "Hello" }] });
        let s = rt
            .handle(Input::ModelReply { ticket, reply }, 5.0)
            .await
            .unwrap();
        let k = kinds(&s.events);
        assert_eq!(&k[..2], ["think_chunk_end", "text_chunk_end"], "{k:?}");
        assert!(
            !k.contains(&"text_chunk".to_string()),
            "a streamed block is not sent again"
        );
        assert!(s.events[1].contains("\"text\":\"Hello\""));
        // Pieces of a call that is over are dropped.
        let late = rt
            .handle(
                Input::ModelDeltas {
                    ticket,
                    deltas: vec![piece(0, DeltaKind::Text, "late")],
                },
                6.0,
            )
            .await
            .unwrap();
        assert!(late.events.is_empty());
        rt.close().await.unwrap();
    });
}

/// An Anthropic stream of `text` (in `n` pieces) ending with `message_stop`.
fn anthropic_stream(text: &str, n: usize) -> String {
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut s = ev(
        "message_start",
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1,"cache_read_input_tokens":100}}}),
    );
    s += &ev(
        "content_block_start",
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    );
    let chars: Vec<char> = text.chars().collect();
    for part in chars.chunks(chars.len().div_ceil(n).max(1)) {
        let t: String = part.iter().collect();
        s += &ev(
            "content_block_delta",
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":t}}),
        );
    }
    s += &ev(
        "content_block_stop",
        json!({"type":"content_block_stop","index":0}),
    );
    s += &ev(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":40}}),
    );
    s + &ev("message_stop", json!({"type":"message_stop"}))
}

#[test]
fn a_wire_stream_is_decoded_by_the_machine_and_a_crash_mid_stream_is_reported() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let rt = AgentRuntime::create(store.clone(), meta("wire"), tools(), 1, 1.0)
            .await
            .unwrap();
        let s = rt
            .handle(
                Input::Send {
                    content: json!("go"),
                },
                2.0,
            )
            .await
            .unwrap();
        let Some(Command::CallModel { ticket, .. }) = s.commands.first().cloned() else {
            panic!("no model call")
        };
        let open = Input::from_json(
            &json!({"kind": "modelStream", "ticket": ticket, "api": "anthropic", "model": "claude-sonnet-4-5", "options": {"maxTokens": 100}})
                .to_string(),
        )
        .unwrap();
        let s = rt.handle(open, 3.0).await.unwrap();
        let req: Value = serde_json::from_str(s.reply.value.as_deref().unwrap()).unwrap();
        assert_eq!(req["path"], "/v1/messages");
        let text = rt
            .with_machine(|m| m.take_request_body())
            .unwrap()
            .expect("the body")
            .into_text();
        assert_eq!(req["bodyLength"], text.len());
        let body: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(body["stream"], true);
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["system"], "be brief");
        assert_eq!(body["messages"][0]["content"][0]["text"], "go");
        let text = "Hello from a stream, in pieces.";
        let bytes = anthropic_stream(text, 6).into_bytes();
        // Fed in odd splits: the first 60% now, the rest after a "crash".
        let cut = bytes.len() * 6 / 10;
        for part in bytes[..cut].chunks(37) {
            let s = rt.stream_bytes(ticket, part, 4.0).await.unwrap();
            assert!(s.reply.value.is_none(), "no failure");
        }
        let streamed: String = store
            .read_events("wire", None, usize::MAX)
            .await
            .unwrap()
            .iter()
            .filter_map(|l| {
                let v: Value = serde_json::from_str(l).ok()?;
                (v["type"] == "text_chunk").then(|| v["delta"].as_str().unwrap().to_string())
            })
            .collect();
        assert!(
            !streamed.is_empty() && text.starts_with(&streamed),
            "{streamed:?}"
        );
        // The process dies: the next open reads what streamed from the log.
        drop(rt);
        store.crash();
        let (rt, step, opened) = open_resume(store.clone(), "wire", 2, ResumeStrategy::Crash, 5.0)
            .await
            .unwrap();
        assert_eq!(opened.breakpoint, Breakpoint::StreamingModel);
        let partial = step
            .events
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| v["type"] == "model_partial")
            .expect("model_partial on resume");
        assert_eq!(partial["reason"], "crashed");
        assert_eq!(partial["content"][0]["text"], streamed.as_str());
        // The call is made again; this time the whole stream arrives.
        let s = rt.handle(Input::Run, 6.0).await.unwrap();
        let Some(Command::CallModel { ticket, .. }) = s.commands.first().cloned() else {
            panic!("the call is made again")
        };
        let open = Input::from_json(
            &json!({"kind": "modelStream", "ticket": ticket, "api": "anthropic", "model": "claude-sonnet-4-5"}).to_string(),
        )
        .unwrap();
        rt.handle(open, 7.0).await.unwrap();
        for part in bytes.chunks(101) {
            rt.stream_bytes(ticket, part, 8.0).await.unwrap();
        }
        let end =
            Input::from_json(&json!({"kind": "modelStreamEnd", "ticket": ticket}).to_string())
                .unwrap();
        let s = rt.handle(end, 9.0).await.unwrap();
        assert!(s.reply.value.is_none());
        let msgs: Value =
            serde_json::from_str(&rt.query(&Query::Messages { up_to: None }).await.unwrap())
                .unwrap();
        let answers: Vec<&Value> = msgs
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .collect();
        assert_eq!(answers.len(), 1, "only the whole answer is stored");
        assert_eq!(answers[0]["content"][0]["text"], text);
        assert_eq!(answers[0]["api"], "anthropic-messages");
        assert_eq!(answers[0]["usage"]["cacheRead"], 100);
        assert!(answers[0]["usage"]["cost"]["total"].as_f64().unwrap() > 0.0);
    });
}

#[test]
fn a_stream_that_breaks_after_its_last_event_is_stored_whole() {
    pollster::block_on(async {
        let store = MemoryStorage::new();
        let rt = AgentRuntime::create(store.clone(), meta("drop-end"), tools(), 1, 1.0)
            .await
            .unwrap();
        let s = rt
            .handle(
                Input::Send {
                    content: json!("go"),
                },
                2.0,
            )
            .await
            .unwrap();
        let Some(Command::CallModel { ticket, .. }) = s.commands.first().cloned() else {
            panic!("no model call")
        };
        let open = Input::from_json(
            &json!({"kind": "modelStream", "ticket": ticket, "api": "anthropic", "model": "claude-sonnet-4-5"}).to_string(),
        )
        .unwrap();
        rt.handle(open, 3.0).await.unwrap();
        let text = "All of it arrived.";
        rt.stream_bytes(ticket, anthropic_stream(text, 3).as_bytes(), 4.0)
            .await
            .unwrap();
        // message_stop was read; then the connection reset before the body's end.
        let end = Input::from_json(
            &json!({"kind": "modelStreamEnd", "ticket": ticket, "error": "the stream broke: terminated"}).to_string(),
        )
        .unwrap();
        let s = rt.handle(end, 5.0).await.unwrap();
        assert!(s.reply.value.is_none(), "{:?}", s.reply.value);
        let msgs: Value =
            serde_json::from_str(&rt.query(&Query::Messages { up_to: None }).await.unwrap())
                .unwrap();
        let answer = msgs
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "assistant")
            .expect("the answer is stored");
        assert_eq!(answer["content"][0]["text"], text);
    });
}

/// Anthropic stream text whose last event is an error event (`overloaded_error`
/// after some text): the pieces and the error arrive in one read.
fn anthropic_stream_then_error(text: &str, error_type: &str) -> String {
    let full = anthropic_stream(text, 2);
    let cut = full.find("event: content_block_stop").unwrap();
    let err = json!({"type": "error", "error": {"type": error_type, "message": "slow down"}});
    format!("{}event: error\ndata: {err}\n\n", &full[..cut])
}

#[test]
fn an_error_event_then_a_broken_connection_keeps_the_providers_code() {
    pollster::block_on(async {
        for (error_type, code) in [
            ("rate_limit_error", "PROVIDER_RATE_LIMITED"),
            ("invalid_request_error", "PROVIDER_BAD_REQUEST"),
        ] {
            let store = MemoryStorage::new();
            let rt = AgentRuntime::create(store.clone(), meta("err-break"), tools(), 1, 1.0)
                .await
                .unwrap();
            let s = rt
                .handle(
                    Input::Send {
                        content: json!("go"),
                    },
                    2.0,
                )
                .await
                .unwrap();
            let Some(Command::CallModel { ticket, .. }) = s.commands.first().cloned() else {
                panic!("no model call")
            };
            let open = Input::from_json(
                &json!({"kind": "modelStream", "ticket": ticket, "api": "anthropic", "model": "claude-sonnet-4-5"}).to_string(),
            )
            .unwrap();
            rt.handle(open, 3.0).await.unwrap();
            // Text and the error event in one read: the text is given out, the
            // error held for the next read, which never comes.
            let s = rt
                .stream_bytes(
                    ticket,
                    anthropic_stream_then_error("partly", error_type).as_bytes(),
                    4.0,
                )
                .await
                .unwrap();
            assert!(s.reply.value.is_none(), "{:?}", s.reply.value);
            let end = Input::from_json(
                &json!({"kind": "modelStreamEnd", "ticket": ticket, "error": "the stream broke: terminated"}).to_string(),
            )
            .unwrap();
            let s = rt.handle(end, 5.0).await.unwrap();
            let v: Value =
                serde_json::from_str(s.reply.value.as_deref().expect("a verdict")).unwrap();
            assert_eq!(v["code"], code, "{v}");
            assert_eq!(v["retry"], false, "text had streamed: {v}");
            let failed = store
                .read_events("err-break", None, usize::MAX)
                .await
                .unwrap()
                .iter()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|e| e.to_string().contains(code))
                .count();
            assert!(failed > 0, "the provider's code is recorded");
        }
    });
}

const WIRE_ID: &str = "wire-crash";

/// An Anthropic stream: some text, then (with `call`) a tool_use block
/// `c1 echo {"a":1}` whose arguments come in pieces.
fn anthropic_tool_stream(text: &str, call: bool) -> String {
    let full = anthropic_stream(text, 4);
    if !call {
        return full;
    }
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let cut = full.find("event: message_delta").unwrap();
    let mut s = full[..cut].to_string();
    s += &ev(
        "content_block_start",
        json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"c1","name":"echo","input":{}}}),
    );
    for part in ["{\"a\"", ":", "1}"] {
        s += &ev(
            "content_block_delta",
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":part}}),
        );
    }
    s += &ev(
        "content_block_stop",
        json!({"type":"content_block_stop","index":1}),
    );
    s += &ev(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}),
    );
    s + &ev("message_stop", json!({"type":"message_stop"}))
}

/// Carries out commands with streamed model calls (the bytes through
/// `stream_bytes`, in small reads, each one durable when it returns): the
/// model calls `c1` until the session holds that call, then answers "done".
/// `runs` counts the tool's runs.
async fn drive_streamed<S: AgentStorage>(
    rt: &mut AgentRuntime<S>,
    first: Vec<Command>,
    acked: &mut Acked,
    runs: &mut Vec<String>,
    now: &mut f64,
) -> Result<()> {
    let mut queue: VecDeque<Command> = first.into();
    let mut turns = 0;
    while let Some(c) = queue.pop_front() {
        turns += 1;
        assert!(turns < 50, "the agent does not settle");
        *now += 1.0;
        match c {
            Command::CallModel { ticket, .. } => {
                let open = Input::from_json(
                    &json!({"kind": "modelStream", "ticket": ticket, "api": "anthropic", "model": "claude-sonnet-4-5"}).to_string(),
                )
                .unwrap();
                let s = rt.handle(open, *now).await?;
                acked.step(&s);
                let has_call = rt.machine().messages_json(None).contains("\"id\":\"c1\"");
                let body = if has_call {
                    anthropic_tool_stream("All done now.", false)
                } else {
                    anthropic_tool_stream("Let me echo that.", true)
                };
                for part in body.as_bytes().chunks(90) {
                    *now += 1.0;
                    let s = rt.stream_bytes(ticket, part, *now).await?;
                    assert!(s.reply.value.is_none(), "{:?}", s.reply.value);
                    acked.step(&s);
                }
                let end = Input::from_json(
                    &json!({"kind": "modelStreamEnd", "ticket": ticket}).to_string(),
                )
                .unwrap();
                let s = rt.handle(end, *now).await?;
                assert!(s.reply.value.is_none(), "{:?}", s.reply.value);
                acked.step(&s);
                queue.extend(s.commands);
            }
            Command::RunTool {
                ticket, call_id, ..
            } => {
                runs.push(call_id.clone());
                let s = rt
                    .handle(
                        Input::ToolDone {
                            ticket,
                            outcome: ToolOutcome::Value { value: "1".into() },
                        },
                        *now,
                    )
                    .await?;
                acked.step(&s);
                acked.results.push(call_id);
                queue.extend(s.commands);
            }
            _ => {}
        }
    }
    Ok(())
}

async fn streamed_scenario<S: AgentStorage + Clone>(
    store: S,
    acked: &mut Acked,
    runs: &mut Vec<String>,
) -> Result<()> {
    let mut rt = AgentRuntime::create(store.clone(), meta(WIRE_ID), tools(), 7, 1_000.0).await?;
    let mut now = 1_000.0;
    let s = rt
        .handle(
            Input::Send {
                content: json!("echo it"),
            },
            now,
        )
        .await?;
    acked.step(&s);
    let q: String = serde_json::from_str(s.reply.value.as_deref().unwrap()).unwrap();
    acked.queue_ids.push(q);
    drive_streamed(&mut rt, s.commands, acked, runs, &mut now).await?;
    rt.close().await?;
    Ok(())
}

/// A streamed model call (its bytes through `stream_bytes`) crashed at every
/// storage operation, with every fault, then resumed and driven to the end:
/// no acknowledged event is lost, the tool call is stored and run at most once
/// with exactly one result, and a crash mid-stream is recorded as
/// `model_partial {reason: "crashed"}` holding what had streamed.
#[test]
fn streamed_call_crash_points_are_all_recovered() {
    pollster::block_on(async {
        let counting = FaultStorage::counting(MemoryStorage::new());
        let (mut acked, mut runs) = (Acked::default(), Vec::new());
        streamed_scenario(&counting, &mut acked, &mut runs)
            .await
            .unwrap();
        assert_eq!(runs, ["c1"]);
        let total = counting.ops();
        assert!(total >= 10, "the run performs {total} storage operations");
        let mut partials = 0;
        for at in 1..=total {
            for fault in [Fault::Fail, Fault::Tear, Fault::LoseAck] {
                let label = format!("op {at} {fault:?}");
                let mem = MemoryStorage::new();
                let store = FaultStorage::new(
                    mem.clone(),
                    FaultPlan {
                        at: Some(at),
                        fault,
                    },
                );
                let (mut acked, mut runs) = (Acked::default(), Vec::new());
                let r = streamed_scenario(&store, &mut acked, &mut runs).await;
                assert!(r.is_err() && store.fired(), "{label}: the run did not fail");
                mem.crash();
                if !mem.exists(WIRE_ID).await.unwrap() {
                    assert!(
                        acked.events.is_empty(),
                        "{label}: acknowledged but no agent"
                    );
                    continue;
                }
                // What the log holds of the call that was streaming.
                let lines = mem.read_events(WIRE_ID, None, usize::MAX).await.unwrap();
                let mut by_seq = BTreeMap::new();
                for l in &lines {
                    by_seq.insert(parse_event_line(l, 512).unwrap().seq, l.to_string());
                }
                for (seq, line) in &acked.events {
                    assert_eq!(
                        by_seq.get(seq),
                        Some(line),
                        "{label}: acknowledged event {seq} lost or changed"
                    );
                }
                let log: Vec<Value> = lines
                    .iter()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
                let (mut rt, step, opened) =
                    open_resume(mem.clone(), WIRE_ID, 3, ResumeStrategy::Crash, 9e12)
                        .await
                        .unwrap_or_else(|e| panic!("{label}: resume failed: {e}"));
                assert!(
                    rt.machine().core().open_calls().unwrap().is_empty(),
                    "{label}: a call without a result"
                );
                rt.ensure_whole().await.unwrap();
                let stored_answers = rt
                    .machine()
                    .messages_json(None)
                    .matches("\"role\":\"assistant\"")
                    .count() as u64;
                // Text pieces of the step whose answer was never stored.
                let open_step = stored_answers + 1;
                let streamed: String = log
                    .iter()
                    .filter(|v| v["type"] == "text_chunk" && v["step"].as_u64() == Some(open_step))
                    .map(|v| v["delta"].as_str().unwrap().to_string())
                    .collect();
                let partial = step
                    .events
                    .iter()
                    .map(|l| serde_json::from_str::<Value>(l).unwrap())
                    .find(|v| v["type"] == "model_partial");
                // A block whose start is durable counts as streamed, even empty.
                let started = log.iter().any(|v| {
                    v["step"].as_u64() == Some(open_step)
                        && v["type"]
                            .as_str()
                            .is_some_and(|t| t.ends_with("_chunk_start"))
                });
                if !streamed.is_empty() {
                    assert_eq!(opened.breakpoint, Breakpoint::StreamingModel, "{label}");
                }
                match partial {
                    Some(p) => {
                        assert!(
                            started,
                            "{label}: model_partial without a streamed block: {p}"
                        );
                        assert_eq!(p["reason"], "crashed", "{label}");
                        assert_eq!(p["step"].as_u64(), Some(open_step), "{label}");
                        assert_eq!(p["content"][0]["text"], streamed.as_str(), "{label}");
                        partials += 1;
                    }
                    None => assert!(
                        opened.breakpoint != Breakpoint::StreamingModel || !started,
                        "{label}: a crash mid-stream without model_partial"
                    ),
                }
                // The agent goes on to the end.
                let mut now = 9.1e12;
                drive_streamed(&mut rt, step.commands, &mut acked, &mut runs, &mut now)
                    .await
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                let s = rt.handle(Input::Run, now).await.unwrap();
                drive_streamed(&mut rt, s.commands, &mut acked, &mut runs, &mut now)
                    .await
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                let s = rt
                    .handle(
                        Input::Send {
                            content: json!("still there?"),
                        },
                        now,
                    )
                    .await
                    .unwrap();
                drive_streamed(&mut rt, s.commands, &mut acked, &mut runs, &mut now)
                    .await
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                let msgs: Vec<Value> =
                    serde_json::from_str(&rt.machine().messages_json(None)).unwrap();
                let calls = msgs
                    .iter()
                    .filter(|m| m["role"] == "assistant")
                    .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                    .filter(|b| b["type"] == "toolCall" && b["id"] == "c1")
                    .count();
                let results = msgs
                    .iter()
                    .filter(|m| m["role"] == "toolResult" && m["toolCallId"] == "c1")
                    .count();
                assert!(calls <= 1, "{label}: the call is stored {calls} times");
                assert_eq!(
                    results, calls,
                    "{label}: {results} results for {calls} calls"
                );
                assert!(
                    runs.len() <= 1,
                    "{label}: the tool ran {} times",
                    runs.len()
                );
                for c in &acked.results {
                    assert!(
                        msgs.iter()
                            .any(|m| m["role"] == "toolResult" && m["toolCallId"] == *c),
                        "{label}: acknowledged result of {c} lost"
                    );
                }
                assert!(
                    msgs.last().is_some_and(|m| m["role"] == "assistant"),
                    "{label}: the run ends with an answer"
                );
                rt.close().await.unwrap();
            }
        }
        eprintln!(
            "streamed crash points: {total} operations × 3 faults; {partials} crashes mid-stream"
        );
        assert!(partials > 0, "some crashes fell mid-stream");
    });
}
