//! The agent's state over a session: records, safe-fork-points, sealing,
//! snapshots and checkpoints.

use forkpoint_core::agent::{AgentCore, ToolCallState};
use forkpoint_core::{LoadOptions, Session};
use serde_json::{Value, json};

/// A session from entries given as JSON values (ids e1, e2, … chained).
fn session(entries: &[Value]) -> Session {
    let mut text = String::from(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
    );
    text.push('\n');
    for (i, e) in entries.iter().enumerate() {
        let mut e = e.clone();
        let o = e.as_object_mut().unwrap();
        o.insert("id".into(), json!(format!("e{}", i + 1)));
        o.insert(
            "parentId".into(),
            if i == 0 {
                Value::Null
            } else {
                json!(format!("e{i}"))
            },
        );
        o.insert("timestamp".into(), json!("2026-01-01T00:00:01.000Z"));
        // Numbers as written (serde_json would print 1.10 as 1.1).
        text.push_str(&e.to_string().replace("\"<1.10>\"", "1.10"));
        text.push('\n');
    }
    Session::from_bytes(text.into_bytes(), &LoadOptions::default(), None).unwrap()
}

fn user(t: &str) -> Value {
    json!({"type":"message","message":{"role":"user","content":[{"type":"text","text":t}],"timestamp":1}})
}
fn assistant(calls: &[&str]) -> Value {
    let mut content = vec![json!({"type":"text","text":"ok"})];
    for c in calls {
        content.push(json!({"type":"toolCall","id":c,"name":"echo","arguments":{"x":"<1.10>"}}));
    }
    json!({"type":"message","message":{"role":"assistant","content":content,"api":"a","provider":"p","model":"m",
      "usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
      "stopReason":"toolUse","timestamp":1}})
}
fn result(c: &str) -> Value {
    json!({"type":"message","message":{"role":"toolResult","toolCallId":c,"toolName":"echo","content":[{"type":"text","text":"r"}],"isError":false,"timestamp":1}})
}
fn record(c: &str, state: &str) -> Value {
    json!({"type":"custom","customType":"forkpoint.toolcall","data":{"id":c,"name":"echo","state":state,"at":5,"input":{"x":"<1.10>"}}})
}

#[test]
fn safe_fork_points_follow_open_calls() {
    let s = session(&[
        user("a"),
        assistant(&["c1", "c2"]),
        result("c1"),
        result("c2"),
        assistant(&[]),
        user("b"),
        assistant(&["c3"]),
    ]);
    let core = AgentCore::from_session(&s).unwrap();
    // user(0), results complete at 3, text answer 4, user 5; the open call at 6 is not safe.
    assert_eq!(core.last_sfp(), Some((5, "e6")));
    assert_eq!(core.message_count(), 7);
    assert_eq!(core.snapshot("sfp:3").unwrap().entry_id, "e4");
    assert_eq!(core.snapshot("sfp-4").unwrap().entry_id, "e5");
    assert!(
        core.snapshot("sfp:2").is_err(),
        "c2 is still open after message 2"
    );
    assert_eq!(
        core.snapshot("nope").unwrap_err().code.as_str(),
        "SNAPSHOT_NOT_FOUND"
    );
}

#[test]
fn seal_covers_records_and_the_transcript_in_call_order() {
    let s = session(&[
        user("a"),
        assistant(&["p", "ar", "ap", "ex", "none", "done", "fin"]),
        record("p", "PENDING"),
        record("ar", "PENDING"),
        record("ar", "APPROVAL_REQUIRED"),
        record("ap", "APPROVED"),
        record("ex", "EXECUTING"),
        record("done", "EXECUTING"),
        record("done", "COMPLETED"),
        result("done"),
        // Terminal, but its result message never reached the file.
        record("fin", "EXECUTING"),
        json!({"type":"custom","customType":"forkpoint.toolcall","data":{"id":"fin","name":"echo","state":"COMPLETED","at":6,"result":"all good","isError":false}}),
    ]);
    let mut core = AgentCore::from_session(&s).unwrap();
    let open: Vec<String> = core
        .open_calls()
        .unwrap()
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(open, ["p", "ar", "ap", "ex", "none", "fin"]);
    let (entries, sealed) = core.seal(9.0, None, None).unwrap();
    assert_eq!(
        entries.len(),
        11,
        "a result and a record per sealed call, a result for the restored one"
    );
    // The restored call: its message from the record, no new record.
    let fin = sealed.last().unwrap();
    assert_eq!(
        (fin.id.as_str(), fin.prior_state),
        ("fin", ToolCallState::Completed)
    );
    assert_eq!(fin.message["content"][0]["text"], "all good");
    assert_eq!(fin.message["isError"], false);
    let sealed = &sealed[..5];
    let prior: Vec<(String, ToolCallState, bool)> = sealed
        .iter()
        .map(|c| (c.id.clone(), c.prior_state, c.recorded))
        .collect();
    assert_eq!(
        prior,
        [
            ("p".into(), ToolCallState::Pending, true),
            ("ar".into(), ToolCallState::ApprovalRequired, true),
            ("ap".into(), ToolCallState::Approved, true),
            ("ex".into(), ToolCallState::Executing, true),
            ("none".into(), ToolCallState::Pending, false),
        ]
    );
    assert!(sealed[3].note.contains("during execution"));
    assert!(sealed[4].note.contains("without a result or a record"));
    // Taking the entries in closes every call, and the last result is a safe point.
    for (k, e) in entries.iter().enumerate() {
        core.observe(e, &format!("n{k}")).unwrap();
    }
    assert!(core.open_calls().unwrap().is_empty());
    assert_eq!(core.last_sfp().unwrap().1, "n10");
    let r = core.record("ex").unwrap().unwrap();
    assert_eq!(r.state, ToolCallState::Sealed);
    let states: Vec<ToolCallState> = r.audit.iter().map(|a| a.state).collect();
    assert_eq!(states, [ToolCallState::Executing, ToolCallState::Sealed]);
    // Records fold in the order of their first entry; raw JSON kept (1.10 stays 1.10).
    let ids: Vec<String> = core
        .records()
        .unwrap()
        .iter()
        .map(|r| r.id.clone())
        .collect();
    assert_eq!(ids, ["p", "ar", "ap", "ex", "done", "fin", "none"]);
    assert_eq!(
        core.record("p").unwrap().unwrap().input.get(),
        r#"{"x":1.10}"#
    );
}

#[test]
fn checkpoints_group_by_exact_execution_and_snapshots_by_label() {
    let mut core = AgentCore::from_session(&session(&[user("a"), assistant(&[])])).unwrap();
    let mut leaf = "e2".to_string();
    for (e, i, status) in [
        ("exec-1", 0, "success"),
        ("exec-1", 1, "failed"),
        ("exec-12", 0, "success"),
        ("exec-1", 2, "success"),
    ] {
        let (entry, c) = core
            .checkpoint_entry(&json!({"executionId": e, "stepName": "s", "stepIndex": i, "status": status, "variables": {"i": i}}), 1.0)
            .unwrap();
        assert_eq!(
            c.entry_id, leaf,
            "a checkpoint is taken at the current leaf"
        );
        leaf = format!("ck{e}{i}");
        core.observe(&entry, &leaf).unwrap();
    }
    let groups: Vec<(String, Vec<u64>)> = core
        .checkpoints_by_execution()
        .into_iter()
        .map(|(e, c)| (e, c.iter().map(|c| c.step_index).collect()))
        .collect();
    assert_eq!(
        groups,
        [
            ("exec-1".into(), vec![0, 1, 2]),
            ("exec-12".into(), vec![0])
        ]
    );
    assert_eq!(
        core.last_successful("exec-1", None).unwrap().id,
        "ckpt-exec-1-2"
    );
    assert_eq!(
        core.last_successful("exec-1", Some(2)).unwrap().id,
        "ckpt-exec-1-0"
    );
    assert!(core.last_successful("exec-1", Some(0)).is_none());
    assert!(
        core.checkpoint_entry(&json!({"stepName": "s", "stepIndex": 0}), 1.0)
            .is_err()
    );
    let (entry, id) = core.snapshot_entry(Some("before"), 2.0).unwrap();
    assert_eq!(id, "before");
    core.observe(&entry, "snap1").unwrap();
    assert_eq!(core.snapshot("before").unwrap().entry_id, "e2");
    assert!(core.snapshot_entry(Some(""), 2.0).is_err());
}
