//! One checkpoint model: a checkpoint is a `forkpoint.checkpoint` entry of its
//! session, whether an agent or the session store (`IndexedDbStore`) made it;
//! each lists and restores the other's. Checkpoints forkpoint-web 0.1.0 kept
//! beside their sessions move into them.

use std::cell::RefCell;
use std::rc::Rc;

use forkpoint_core::agent::AgentCore;
use forkpoint_core::agent::machine::{Command, Input, Query, ResumeStrategy, ToolSpec};
use forkpoint_core::agent::meta::AgentMeta;
use forkpoint_core::agent::runtime::AgentRuntime;
use forkpoint_core::storage::{AgentStorage, MemoryStorage as AgentMemory, WriteBatch};
use forkpoint_core::store::{
    CheckpointOptions, Commit, ImportOptions, MemoryStorage, Part, Snapshot, Storage, Store,
};
use forkpoint_core::{ErrorCode, LoadOptions, Result};
use serde_json::{Value, json};

use crate::common::{bytes, load};

fn meta(id: &str) -> AgentMeta {
    serde_json::from_value(json!({
        "agentId": id, "templateId": null, "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z", "lineage": [], "configVersion": "forkpoint-1",
        "model": { "provider": "scripted", "model": "s-1", "api": "scripted" },
        "tools": [], "permission": { "mode": "auto" }, "systemPrompt": "", "metadata": {}
    }))
    .unwrap()
}

fn tools() -> Vec<ToolSpec> {
    Vec::new()
}

/// A user turn answered with text.
async fn turn(rt: &AgentRuntime<AgentMemory>, t: &str, now: f64) {
    let s = rt
        .handle(Input::Send { content: json!(t) }, now)
        .await
        .unwrap();
    let ticket = s
        .commands
        .iter()
        .find_map(|c| match c {
            Command::CallModel { ticket, .. } => Some(*ticket),
            _ => None,
        })
        .expect("a model call");
    let reply = json!({ "content": [{ "type": "text", "text": format!("re: {t}") }], "stopReason": "stop" });
    rt.handle(Input::ModelReply { ticket, reply }, now + 1.0)
        .await
        .unwrap();
}

fn query(k: &str, extra: Value) -> Query {
    let mut q = json!({ "kind": k });
    q.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(q).unwrap()
}

fn store() -> Store<Rc<MemoryStorage>> {
    Store::new(Rc::new(MemoryStorage::new()), 7)
}

fn import_as(st: &Store<Rc<MemoryStorage>>, id: &str, text: Vec<u8>) {
    let o = ImportOptions {
        id: Some(id.into()),
        new_id: id.into(),
        now_ms: 1_780_000_000_000,
        ..Default::default()
    };
    pollster::block_on(st.import(text, &o)).unwrap();
}

/// The text of the user messages on a session's current path.
fn users(s: &forkpoint_core::Session) -> Vec<String> {
    let ctx: Value = serde_json::from_str(&s.context_json(None, false).unwrap()).unwrap();
    ctx["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| {
            let c = &m["content"];
            c.as_str().or(c[0]["text"].as_str()).unwrap().to_string()
        })
        .collect()
}

#[test]
fn an_agent_checkpoint_is_listed_restored_and_deleted_by_the_store() {
    pollster::block_on(async {
        let agents = AgentMemory::new();
        let rt = AgentRuntime::create(agents.clone(), meta("a"), tools(), 1, 10.0)
            .await
            .unwrap();
        turn(&rt, "one", 11.0).await;
        let s = rt
            .handle(
                Input::Checkpoint {
                    args: json!({ "executionId": "e", "stepName": "plan", "stepIndex": 0, "variables": { "v": 1 } }),
                },
                1_780_000_000_123.0,
            )
            .await
            .unwrap();
        let made: Value = serde_json::from_str(s.reply.value.as_deref().unwrap()).unwrap();
        turn(&rt, "two", 13.0).await;
        rt.close().await.unwrap();
        let text = agents.read_session("a", 0, u64::MAX).await.unwrap();

        let st = store();
        import_as(&st, "from-agent", text.clone());
        let list = st.checkpoints("from-agent", 20).await.unwrap();
        assert_eq!(list.len(), 1);
        let cp = &list[0];
        assert_eq!(cp.id, "ckpt-e-0");
        assert_eq!(
            (
                cp.execution_id.as_str(),
                cp.step_name.as_str(),
                cp.step_index
            ),
            ("e", "plan", 0)
        );
        assert_eq!(cp.entry_id.as_deref(), made["entryId"].as_str());
        assert_eq!(cp.variables, Some(json!({ "v": 1 })));
        assert_eq!(cp.created_at, "2026-05-28T20:26:40.123Z");
        assert_eq!((cp.label.as_ref(), cp.event_seq), (None, None));
        // Entries before the agent's checkpoint entry (the agent writes no count).
        let s = load(&text).unwrap();
        let at = (0..s.entries().len() as u32)
            .position(|i| s.entry_text(i).contains("\"forkpoint.checkpoint\""))
            .unwrap();
        assert_eq!(cp.entry_count, at as u64);

        let info = st.info("from-agent").await.unwrap();
        assert_eq!(
            users(
                &st.load("from-agent", &LoadOptions::default())
                    .await
                    .unwrap()
            ),
            ["one", "two"]
        );
        st.restore_checkpoint("from-agent", "ckpt-e-0", 21)
            .await
            .unwrap();
        let back = st.info("from-agent").await.unwrap();
        assert_eq!(back.leaf_id, cp.entry_id);
        assert_eq!(back.entry_count, info.entry_count + 1, "one leaf entry");
        assert_eq!(
            users(
                &st.load("from-agent", &LoadOptions::default())
                    .await
                    .unwrap()
            ),
            ["one"]
        );

        // A deletion is an entry the agent's model honours too.
        st.delete_checkpoint("from-agent", "ckpt-e-0", 22)
            .await
            .unwrap();
        assert!(st.checkpoints("from-agent", 23).await.unwrap().is_empty());
        assert_eq!(
            st.restore_checkpoint("from-agent", "ckpt-e-0", 23)
                .await
                .unwrap_err()
                .code,
            ErrorCode::NotFound
        );
        let after = st
            .load("from-agent", &LoadOptions::default())
            .await
            .unwrap();
        assert!(
            AgentCore::from_session(&after)
                .unwrap()
                .checkpoints()
                .is_empty()
        );
    });
}

#[test]
fn a_store_checkpoint_is_listed_and_restored_by_an_agent() {
    pollster::block_on(async {
        // An agent's conversation, kept in the session store.
        let agents = AgentMemory::new();
        let rt = AgentRuntime::create(agents.clone(), meta("a"), tools(), 1, 10.0)
            .await
            .unwrap();
        turn(&rt, "one", 11.0).await;
        rt.close().await.unwrap();
        let st = store();
        import_as(
            &st,
            "s",
            agents.read_session("a", 0, u64::MAX).await.unwrap(),
        );
        let o = CheckpointOptions {
            label: Some("before review".into()),
            execution_id: Some("wf".into()),
            step_name: Some("review".into()),
            step_index: Some(2),
            variables: Some(json!({ "k": "v" })),
            event_seq: Some(9),
            ..Default::default()
        };
        let cp = st.save_checkpoint("s", "unused", &o, 30).await.unwrap();
        assert_eq!(cp.id, "ckpt-wf-2", "named as an agent names it");
        assert_eq!(
            st.save_checkpoint("s", "unused", &o, 31)
                .await
                .unwrap_err()
                .code,
            ErrorCode::AlreadyExists
        );
        st.append(
            "s",
            r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"later"}],"timestamp":1}}"#,
            32,
        )
        .await
        .unwrap();

        // The same session as an agent's: it lists the checkpoint and restores it.
        let text = st.text("s").await.unwrap();
        let init = WriteBatch {
            session: text,
            meta: Some(meta("b").to_text().unwrap()),
            ..WriteBatch::default()
        };
        let lease = agents.create("b", &init).await.unwrap();
        agents.release(&lease).await.unwrap();
        let rt = AgentRuntime::open(agents.clone(), "b", tools(), 2)
            .await
            .unwrap();
        rt.resume(ResumeStrategy::Manual, None, false, 40.0)
            .await
            .unwrap();
        let listed: Value = serde_json::from_str(
            &rt.query(&query("checkpoint", json!({ "id": "ckpt-wf-2" })))
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(listed["executionId"], "wf");
        assert_eq!(listed["label"], "before review");
        assert_eq!(listed["eventSeq"], 9);
        assert_eq!(listed["entryId"].as_str(), cp.entry_id.as_deref());
        let last: Value = serde_json::from_str(
            &rt.query(&query("lastSuccessful", json!({ "executionId": "wf" })))
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(last["id"], "ckpt-wf-2");
        let (restored, _) = rt.restore("ckpt-wf-2", 41.0).await.unwrap();
        assert_eq!(restored.variables, Some(json!({ "k": "v" })));
        rt.close().await.unwrap();
        let after = load(&agents.read_session("b", 0, u64::MAX).await.unwrap()).unwrap();
        assert_eq!(after.metadata().leaf_id, cp.entry_id);
        assert_eq!(users(&after), ["one"], "\"later\" is off the path");
    });
}

/// A checkpoint record as forkpoint-web 0.1.0 kept it.
fn legacy(id: &str, session: &str, entry: Option<&str>, count: u64, at: &str) -> String {
    json!({ "id": id, "sessionId": session, "label": format!("{id} label"), "entryId": entry,
            "entryCount": count, "eventSeq": 3, "createdAt": at })
    .to_string()
}

#[test]
fn checkpoints_kept_by_0_1_0_move_into_their_session_once() {
    pollster::block_on(async {
        let shared = Rc::new(MemoryStorage::new());
        let a = Store::new(shared.clone(), 1);
        let b = Store::new(shared.clone(), 2);
        import_as(&a, "kept", bytes("branches.jsonl"));
        import_as(&a, "lazy", bytes("compactions.jsonl"));
        import_as(&a, "bad", bytes("compactions.jsonl"));
        let info = a.info("kept").await.unwrap();
        let leaf = info.leaf_id.clone().unwrap();
        shared.put_legacy_checkpoint(
            "kept",
            "cp-1",
            &legacy(
                "cp-1",
                "kept",
                Some(&leaf),
                info.entry_count,
                "2026-11-25T22:04:30.956Z",
            ),
        );
        shared.put_legacy_checkpoint(
            "kept",
            "cp-0",
            &legacy("cp-0", "kept", None, 0, "2026-11-25T22:04:29.000Z"),
        );
        shared.put_legacy_checkpoint(
            "lazy",
            "x",
            &legacy("x", "lazy", None, 5, "2026-11-25T22:04:29.000Z"),
        );
        shared.put_legacy_checkpoint("bad", "y", "{not json");

        // Opening a store moves them (two handles: once); a damaged one stays.
        assert_eq!(a.migrate_checkpoints(50).await.unwrap(), 2);
        assert_eq!(b.migrate_checkpoints(51).await.unwrap(), 0);
        assert_eq!(shared.legacy_checkpoints(None).await.unwrap().len(), 1);
        assert_eq!(
            b.info("kept").await.unwrap().entry_count,
            info.entry_count + 2,
            "one entry per checkpoint, written once"
        );
        let list = b.checkpoints("kept", 52).await.unwrap();
        let got: Vec<Value> = list
            .iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect();
        let want = |id: &str, entry: Option<&str>, count: u64, at: &str| {
            let mut v: Value = serde_json::from_str(&legacy(id, "kept", entry, count, at)).unwrap();
            let o = v.as_object_mut().unwrap();
            o.insert("executionId".into(), json!(id));
            o.insert("stepName".into(), json!(format!("{id} label")));
            o.insert("stepIndex".into(), json!(0));
            o.insert("status".into(), json!("success"));
            v
        };
        assert_eq!(
            got,
            [
                want("cp-0", None, 0, "2026-11-25T22:04:29.000Z"),
                want(
                    "cp-1",
                    Some(&leaf),
                    info.entry_count,
                    "2026-11-25T22:04:30.956Z"
                )
            ],
            "listed as 0.1.0 answered them, oldest first"
        );
        // Restorable: to the entry, and to before the first entry.
        b.move_leaf("kept", None, 53).await.unwrap();
        b.restore_checkpoint("kept", "cp-1", 54).await.unwrap();
        assert_eq!(
            b.info("kept").await.unwrap().leaf_id.as_deref(),
            Some(&*leaf)
        );
        b.restore_checkpoint("kept", "cp-0", 55).await.unwrap();
        assert_eq!(b.info("kept").await.unwrap().leaf_id, None);
        // The agent's model reads them too.
        let s = b.load("kept", &LoadOptions::default()).await.unwrap();
        let core = AgentCore::from_session(&s).unwrap();
        assert_eq!(core.checkpoints()[1].id, "cp-1");
        assert_eq!(core.checkpoints()[1].event_seq, Some(3));

        // One that was not moved at open is moved by its session's next checkpoint call.
        shared.put_legacy_checkpoint(
            "lazy",
            "x2",
            &legacy("x2", "lazy", None, 6, "2026-11-25T22:04:31.000Z"),
        );
        let ids: Vec<String> = a
            .checkpoints("lazy", 60)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, ["x", "x2"]);
        assert!(
            shared
                .legacy_checkpoints(Some("lazy"))
                .await
                .unwrap()
                .is_empty()
        );
        // A damaged one is reported, not dropped.
        assert_eq!(
            a.checkpoints("bad", 61).await.unwrap_err().code,
            ErrorCode::CorruptedData
        );
        assert_eq!(
            shared.legacy_checkpoints(Some("bad")).await.unwrap().len(),
            1
        );
        // Deleting the session removes it.
        a.delete("bad").await.unwrap();
        assert!(shared.legacy_checkpoints(None).await.unwrap().is_empty());
    });
}

#[test]
fn checkpoint_ids_are_unique_across_handles_and_free_again_once_deleted() {
    pollster::block_on(async {
        let shared = Rc::new(MemoryStorage::new());
        let a = Store::new(shared.clone(), 1);
        let b = Store::new(shared.clone(), 2);
        import_as(&a, "s", bytes("branches.jsonl"));
        let o = CheckpointOptions {
            id: Some("dup".into()),
            label: Some("one".into()),
            ..Default::default()
        };
        a.save_checkpoint("s", "u1", &o, 1).await.unwrap();
        assert_eq!(
            b.save_checkpoint("s", "u2", &o, 2).await.unwrap_err().code,
            ErrorCode::AlreadyExists
        );
        b.delete_checkpoint("s", "dup", 3).await.unwrap();
        assert_eq!(
            a.delete_checkpoint("s", "dup", 4).await.unwrap_err().code,
            ErrorCode::NotFound
        );
        let o2 = CheckpointOptions {
            label: Some("two".into()),
            ..o
        };
        a.save_checkpoint("s", "u3", &o2, 5).await.unwrap();
        let list = b.checkpoints("s", 6).await.unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].label.as_deref(), Some("two"));
        // Without an id or an execution: the id given for it.
        let c = a
            .save_checkpoint("s", "fresh-id", &CheckpointOptions::default(), 7)
            .await
            .unwrap();
        assert_eq!(
            (c.id.as_str(), c.execution_id.as_str()),
            ("fresh-id", "fresh-id")
        );
        assert_eq!(
            a.save_checkpoint(
                "s",
                "x",
                &CheckpointOptions {
                    id: Some("../x".into()),
                    ..Default::default()
                },
                8
            )
            .await
            .unwrap_err()
            .code,
            ErrorCode::InvalidId
        );
    });
}

/// A storage that runs `hook` once, right after its read number `at` (from
/// 0): another handle's change lands between two reads of this one.
struct Between {
    inner: Rc<MemoryStorage>,
    at: std::cell::Cell<u32>,
    hook: RefCell<Option<Box<dyn FnOnce()>>>,
}

impl Between {
    fn after<T>(&self, v: T) -> T {
        match self.at.get() {
            0 => {
                if let Some(h) = self.hook.borrow_mut().take() {
                    h();
                }
            }
            n => self.at.set(n - 1),
        }
        v
    }
}

impl Storage for Between {
    async fn session_records(&self) -> Result<Vec<(String, String)>> {
        let v = self.inner.session_records().await;
        self.after(v)
    }
    async fn session_record(&self, id: &str) -> Result<Option<String>> {
        let v = self.inner.session_record(id).await;
        self.after(v)
    }
    async fn snapshot(&self, id: &str, part: Part) -> Result<Option<Snapshot>> {
        let v = self.inner.snapshot(id, part).await;
        self.after(v)
    }
    async fn chunks(
        &self,
        id: &str,
        part: Part,
        from: u32,
        to: u32,
    ) -> Result<Option<(String, Vec<Vec<u8>>)>> {
        let v = self.inner.chunks(id, part, from, to).await;
        self.after(v)
    }
    async fn legacy_checkpoints(&self, id: Option<&str>) -> Result<Vec<(String, String)>> {
        let v = self.inner.legacy_checkpoints(id).await;
        self.after(v)
    }
    async fn commit(&self, commit: Commit) -> Result<()> {
        self.inner.commit(commit).await
    }
}

#[test]
fn a_move_by_another_handle_between_two_reads_is_seen_and_written_once() {
    // After whichever read of `b` the other handle's move lands, `b` lists
    // the checkpoint, and it is written once (a listing, then a save).
    for at in 0..6 {
        let shared = Rc::new(MemoryStorage::new());
        let a = Rc::new(Store::new(shared.clone(), 1));
        import_as(&a, "kept", bytes("branches.jsonl"));
        let info = pollster::block_on(a.info("kept")).unwrap();
        shared.put_legacy_checkpoint(
            "kept",
            "cp-1",
            &legacy(
                "cp-1",
                "kept",
                info.leaf_id.as_deref(),
                info.entry_count,
                "2026-11-25T22:04:30.956Z",
            ),
        );
        let other = a.clone();
        let b = Store::new(
            Between {
                inner: shared.clone(),
                at: std::cell::Cell::new(at),
                hook: RefCell::new(Some(Box::new(move || {
                    pollster::block_on(other.migrate_checkpoints(70)).unwrap();
                }))),
            },
            2,
        );
        let ids: Vec<String> = pollster::block_on(b.checkpoints("kept", 71))
            .unwrap()
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, ["cp-1"], "read {at}");
        let o = CheckpointOptions {
            id: Some("cp-2".into()),
            ..Default::default()
        };
        pollster::block_on(b.save_checkpoint("kept", "u", &o, 72)).unwrap();
        let s = pollster::block_on(a.load("kept", &LoadOptions::default())).unwrap();
        let entries: Vec<String> = (0..s.entries().len() as u32)
            .map(|i| s.entry_text(i))
            .filter(|t| t.contains("\"forkpoint.checkpoint\""))
            .map(|t| {
                serde_json::from_str::<Value>(t).unwrap()["data"]["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(entries, ["cp-1", "cp-2"], "written once (read {at})");
    }
}
