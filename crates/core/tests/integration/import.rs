//! Importing Claude Code transcripts, Codex rollouts and older pi files
//! (`normalize::import`, FORMAT.md §15.7). The real Claude Code files are
//! `shared/fixtures/real/marot-spotter_*.jsonl`; Codex rollouts are written
//! here from the protocol's shapes.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use forkpoint_core::normalize::import::{
    ImportFormat, ImportSummary, detect, import_session, imported_session_id,
};
use forkpoint_core::{ErrorCode, LazyOptions, LoadOptions, Session};
use serde_json::{Value, json};

const NOW: &str = "2026-06-01T00:00:00.000Z";

fn real(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/real")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn load(text: &str) -> Session {
    Session::from_bytes(text.as_bytes().to_vec(), &LoadOptions::default(), None)
        .unwrap_or_else(|e| panic!("the import does not load: {e}"))
}

fn import(bytes: &[u8]) -> (String, ImportSummary) {
    import_session(bytes, ImportFormat::Auto, Some("imported-1"), NOW)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A lazy resume of the import builds the context a full load builds.
fn assert_lazy_agrees(text: &str, s: &Session) {
    let l = crate::common::lazy(text.as_bytes(), LazyOptions::default(), None).unwrap();
    assert_eq!(
        l.context_json(false).unwrap(),
        s.context_json(None, false).unwrap()
    );
}

fn values(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn jsonl(lines: &[Value]) -> String {
    lines.iter().map(|v| format!("{v}\n")).collect()
}

fn context(s: &Session, leaf: Option<&str>) -> Vec<Value> {
    let ctx: Value = serde_json::from_str(&s.context_json(leaf, false).unwrap()).unwrap();
    ctx["messages"].as_array().unwrap().clone()
}

/// The text of a message's content: a string, or its text blocks joined by newlines.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn is_results_only(line: &Value) -> bool {
    line["message"]["content"]
        .as_array()
        .is_some_and(|a| !a.is_empty() && a.iter().all(|b| b["type"] == "tool_result"))
}

/// A model of a Claude Code file, independent of the importer: assistant lines
/// merged by `message.id`, the uuid tree over the merged nodes.
struct CcModel {
    lines: Vec<Value>,
    /// Line index → the line index of its node (the first line of its response).
    node: Vec<usize>,
    /// Node (line index) → parent node.
    parent: HashMap<usize, Option<usize>>,
    children: HashMap<usize, Vec<usize>>,
    /// Node → the lines of its response, in file order.
    members: HashMap<usize, Vec<usize>>,
}

impl CcModel {
    fn new(bytes: &[u8]) -> CcModel {
        let lines = values(std::str::from_utf8(bytes).unwrap());
        let mut node: Vec<usize> = (0..lines.len()).collect();
        let mut first_of_msg: HashMap<String, usize> = HashMap::new();
        let mut members: HashMap<usize, Vec<usize>> = HashMap::new();
        for (i, l) in lines.iter().enumerate() {
            if l["type"] == "assistant"
                && l["isSidechain"] != true
                && let Some(id) = l["message"]["id"].as_str()
            {
                let first = *first_of_msg.entry(id.to_string()).or_insert(i);
                node[i] = first;
            }
            members.entry(node[i]).or_default().push(i);
        }
        let by_uuid: HashMap<&str, usize> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l["uuid"].as_str().map(|u| (u, node[i])))
            .collect();
        let mut parent = HashMap::new();
        let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
        for (i, l) in lines.iter().enumerate() {
            if node[i] != i || l["uuid"].as_str().is_none() {
                continue;
            }
            let p = l["parentUuid"]
                .as_str()
                .or(l["logicalParentUuid"].as_str())
                .and_then(|p| by_uuid.get(p).copied());
            parent.insert(i, p);
            if let Some(p) = p {
                children.entry(p).or_default().push(i);
            }
        }
        CcModel {
            lines,
            node,
            parent,
            children,
            members,
        }
    }

    fn kids(&self, n: usize) -> &[usize] {
        self.children.get(&n).map_or(&[], Vec::as_slice)
    }

    fn is_message(&self, n: usize) -> bool {
        let t = &self.lines[n]["type"];
        (t == "user" || t == "assistant") && self.lines[n]["isSidechain"] != true
    }

    fn has_message_below(&self, n: usize) -> bool {
        let mut stack = self.kids(n).to_vec();
        while let Some(c) = stack.pop() {
            if self.is_message(c) {
                return true;
            }
            stack.extend_from_slice(self.kids(c));
        }
        false
    }

    fn calls(&self, n: usize) -> HashSet<String> {
        self.members[&n]
            .iter()
            .flat_map(|&i| {
                self.lines[i]["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str().map(str::to_string))
            .collect()
    }

    /// For each assistant node with parallel results: the result nodes the
    /// importer must chain (dead ends, then the one the conversation continues from).
    fn parallel_chains(&self) -> HashMap<usize, Vec<usize>> {
        let mut out = HashMap::new();
        for (&m, _) in self
            .members
            .iter()
            .filter(|(m, _)| self.lines[**m]["type"] == "assistant")
        {
            let calls = self.calls(m);
            let results: Vec<usize> = self
                .kids(m)
                .iter()
                .copied()
                .filter(|&c| {
                    self.lines[c]["type"] == "user"
                        && is_results_only(&self.lines[c])
                        && self.lines[c]["message"]["content"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .all(|b| calls.contains(b["tool_use_id"].as_str().unwrap_or("")))
                })
                .collect();
            if results.len() < 2 {
                continue;
            }
            let main = results
                .iter()
                .rposition(|&r| self.has_message_below(r))
                .unwrap_or(results.len() - 1);
            let mut chain: Vec<usize> = results
                .iter()
                .enumerate()
                .filter(|&(k, &r)| k != main && !self.has_message_below(r))
                .map(|(_, &r)| r)
                .collect();
            if !chain.is_empty() {
                chain.push(results[main]);
                out.insert(m, chain);
            }
        }
        out
    }

    fn leaves(&self) -> usize {
        self.parent
            .keys()
            .filter(|n| self.kids(**n).is_empty())
            .count()
    }

    /// `(role, text)` of the user and assistant messages on the path to `leaf`
    /// (by the uuid tree): user lines without tool results, whole responses.
    fn texts_to(&self, leaf: usize) -> Vec<(String, String)> {
        let mut path = vec![leaf];
        while let Some(Some(p)) = self.parent.get(path.last().unwrap()) {
            path.push(*p);
        }
        path.reverse();
        let mut out = Vec::new();
        for n in path {
            let l = &self.lines[n];
            if !self.is_message(n) || l["isCompactSummary"] == true {
                continue;
            }
            if l["type"] == "user" {
                let c = &l["message"]["content"];
                let rest: Vec<Value> = match c {
                    Value::Array(a) => a
                        .iter()
                        .filter(|b| b["type"] != "tool_result")
                        .cloned()
                        .collect(),
                    _ => vec![],
                };
                if c.is_string() {
                    out.push(("user".into(), text_of(c)));
                } else if !rest.is_empty() {
                    out.push(("user".into(), text_of(&Value::Array(rest))));
                }
            } else {
                let blocks: Vec<Value> = self.members[&n]
                    .iter()
                    .flat_map(|&i| {
                        self.lines[i]["message"]["content"]
                            .as_array()
                            .cloned()
                            .unwrap_or_default()
                    })
                    .collect();
                out.push(("assistant".into(), text_of(&Value::Array(blocks))));
            }
        }
        out
    }
}

fn context_texts(msgs: &[Value]) -> Vec<(String, String)> {
    msgs.iter()
        .filter(|m| m["role"] == "user" || m["role"] == "assistant")
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                text_of(&m["content"]),
            )
        })
        .collect()
}

fn check_real_claude_code(name: &str) {
    let bytes = real(name);
    let model = CcModel::new(&bytes);
    let (text, summary) = import(&bytes);
    assert_eq!(summary.format, "claude-code");
    assert_eq!(summary.skipped_lines, 0);
    assert_eq!(
        (
            summary.orphans,
            summary.broken_cycles,
            summary.duplicate_ids
        ),
        (0, 0, 0)
    );
    let s = load(&text);
    let meta = s.metadata();
    assert_eq!(
        (meta.skipped_lines, meta.orphans, meta.broken_cycles),
        (0, 0, 0)
    );

    let out = values(&text);
    let header = &out[0];
    assert_eq!(header["type"], "session");
    assert_eq!(header["version"], 3);
    assert_eq!(header["id"], "imported-1");
    assert_eq!(header["importedFrom"]["format"], "claude-code");
    assert_eq!(
        header["importedFrom"]["sessionId"],
        model.lines[1]["sessionId"]
    );
    assert_eq!(header["cwd"], model.lines[1]["cwd"]);
    let entries = &out[1..];

    // Every line exactly once: merged responses count once per message.id.
    let nodes = model.members.len();
    assert_eq!(
        entries.len(),
        nodes,
        "{name}: one entry per line (responses merged)"
    );
    assert_eq!(summary.entries as usize, nodes);
    let mut represented = vec![0u32; model.lines.len()];
    let by_uuid: HashMap<&str, usize> = model
        .lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l["uuid"].as_str().map(|u| (u, i)))
        .collect();
    let mut derived = HashSet::new();
    for e in entries {
        match e["type"].as_str().unwrap() {
            "custom" => {
                let data = &e["data"];
                let i = model
                    .lines
                    .iter()
                    .position(|l| l == data)
                    .unwrap_or_else(|| panic!("custom data is not an input line: {data}"));
                assert_eq!(
                    e["customType"],
                    format!("claude-code.{}", data["type"].as_str().unwrap())
                );
                represented[i] += 1;
            }
            "message" => {
                let id = e["id"].as_str().unwrap();
                let base = id.split(':').next().unwrap();
                if id != base {
                    assert!(derived.insert(id.to_string()));
                    continue;
                }
                let i = by_uuid[base];
                for &m in &model.members[&model.node[i]] {
                    represented[m] += 1;
                }
            }
            other => panic!("unexpected entry type {other}"),
        }
    }
    assert!(
        represented.iter().all(|&c| c == 1),
        "{name}: lines represented {represented:?}"
    );

    // The tree: parallel tool results chained, every other branch point kept.
    let chains = model.parallel_chains();
    let chained: usize = chains.values().map(|c| c.len() - 1).sum();
    assert!(chained > 0, "{name} has parallel tool calls");
    assert_eq!(summary.rechained_results as usize, chained);
    let chained_leaves = chains
        .values()
        .flat_map(|c| c[..c.len() - 1].iter())
        .filter(|&&r| model.kids(r).is_empty())
        .count();
    assert_eq!(
        s.leaves().len(),
        model.leaves() - chained_leaves,
        "{name}: leaves"
    );
    assert_eq!(s.roots().len(), 1, "{name}: one root");
    let result_branch_points: HashSet<String> =
        s.branch_points().into_iter().map(|n| n.id).collect();
    let mut kept = 0;
    for (&n, kids) in &model.children {
        if kids.len() < 2 {
            continue;
        }
        let expected = match chains.get(&n) {
            Some(c) => kids.len() - c.len() + 1,
            None => kids.len(),
        };
        let id = model.lines[n]["uuid"].as_str().unwrap();
        assert!(
            s.children(id).unwrap().len() >= expected,
            "{name}: children of {id}"
        );
        if expected >= 2 {
            assert!(
                result_branch_points.contains(id),
                "{name}: branch point {id} lost"
            );
            kept += 1;
        }
    }
    assert!(kept > 0);

    // The context from the leaf: the conversation's text in order, every call answered.
    let leaf = s.leaf_id().unwrap().to_string();
    let last_uuid = model
        .lines
        .iter()
        .rev()
        .find_map(|l| l["uuid"].as_str())
        .unwrap();
    assert_eq!(leaf, last_uuid);
    let msgs = context(&s, None);
    assert_lazy_agrees(&text, &s);
    let leaf_node = model.node[by_uuid[last_uuid]];
    let expected = model.texts_to(leaf_node);
    assert!(expected.len() >= 4);
    assert_eq!(context_texts(&msgs), expected, "{name}: context text");
    let results: HashSet<&str> = msgs
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| m["toolCallId"].as_str().unwrap())
        .collect();
    let mut calls = 0;
    for m in msgs.iter().filter(|m| m["role"] == "assistant") {
        assert_eq!(m["api"], "anthropic-messages");
        assert!(m["model"].as_str().unwrap().starts_with("claude-"));
        assert!(m["usage"]["totalTokens"].as_u64().unwrap() > 0);
        assert!(m["timestamp"].as_i64().unwrap() > 1_700_000_000_000);
        for b in m["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "toolCall")
        {
            calls += 1;
            assert!(
                results.contains(b["id"].as_str().unwrap()),
                "{name}: call {} has no result",
                b["id"]
            );
            assert_eq!(m["stopReason"], "toolUse");
        }
    }
    assert!(calls > 0);
    for r in msgs.iter().filter(|m| m["role"] == "toolResult") {
        assert!(!r["toolName"].as_str().unwrap().is_empty());
    }
}

#[test]
fn claude_code_tool_heavy_real_file() {
    check_real_claude_code("marot-spotter_tool_heavy.jsonl");
}

#[test]
fn claude_code_subagent_real_file() {
    check_real_claude_code("marot-spotter_subagent.jsonl");
}

/// A Claude Code line.
fn cc(ty: &str, uuid: &str, parent: Option<&str>, ts: &str, rest: Value) -> Value {
    let mut v = json!({
        "parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/w",
        "sessionId": "cc-session", "version": "2.1.38", "type": ty, "uuid": uuid,
        "timestamp": format!("2026-02-10T21:{ts}.000Z"),
    });
    for (k, x) in rest.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

fn cc_user(uuid: &str, parent: Option<&str>, ts: &str, content: Value) -> Value {
    cc(
        "user",
        uuid,
        parent,
        ts,
        json!({"message": {"role": "user", "content": content}}),
    )
}

fn cc_assistant(uuid: &str, parent: &str, ts: &str, msg_id: &str, block: Value) -> Value {
    cc(
        "assistant",
        uuid,
        Some(parent),
        ts,
        json!({"requestId": "req_1", "message": {
            "model": "claude-opus-4-6", "id": msg_id, "type": "message", "role": "assistant",
            "content": [block], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000, "output_tokens": 7}
        }}),
    )
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

#[test]
fn claude_code_compaction_keeps_the_tree_connected() {
    let lines = vec![
        json!({"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"messageId": "u1", "trackedFileBackups": {}, "timestamp": "2026-02-10T21:00:00.000Z"}, "isSnapshotUpdate": false}),
        cc_user("u1", None, "00:01", json!("hello")),
        cc_assistant("a1", "u1", "00:02", "msg_1", text("hi there")),
        cc(
            "system",
            "b1",
            None,
            "05:00",
            json!({"subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": false,
                   "level": "info", "logicalParentUuid": "a1",
                   "compactMetadata": {"trigger": "manual", "preTokens": 51234}}),
        ),
        cc(
            "user",
            "s1",
            Some("b1"),
            "05:01",
            json!({"isCompactSummary": true, "isVisibleInTranscriptOnly": true,
                   "message": {"role": "user", "content": "This session is being continued. Summary: said hello."}}),
        ),
        cc_user("u2", Some("s1"), "05:02", json!([text("and now?")])),
        cc_assistant("a2", "u2", "05:03", "msg_2", text("now this")),
        json!({"type": "summary", "summary": "Greeting", "leafUuid": "a2"}),
    ];
    let (out, summary) = import(jsonl(&lines).as_bytes());
    assert_eq!(summary.entries, 8);
    assert_eq!(summary.messages, 4);
    assert_eq!(summary.custom_entries, 3);
    let s = load(&out);
    assert_eq!(s.roots().len(), 1);
    assert_eq!(s.leaves().len(), 1);
    assert_eq!(s.metadata().compactions, 1);
    let entries = values(&out);
    let c = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(c["id"], "b1");
    assert_eq!(c["parentId"], "a1");
    assert_eq!(
        c["summary"],
        "This session is being continued. Summary: said hello."
    );
    assert_eq!(c["tokensBefore"], 51234);
    assert_eq!(c["firstKeptEntryId"], "b1");
    assert_eq!(c["data"], lines[3]);
    let s1 = entries.iter().find(|e| e["id"] == "s1").unwrap();
    assert_eq!(s1["type"], "custom");
    assert_eq!(s1["customType"], "claude-code.user");
    // The snapshot line (no uuid) leads the chain; the summary line ends it.
    assert_eq!(
        entries[1]["customType"],
        "claude-code.file-history-snapshot"
    );
    assert_eq!(entries[2]["parentId"], entries[1]["id"]);
    assert_eq!(entries.last().unwrap()["parentId"], "a2");
    let msgs = context(&s, None);
    assert_lazy_agrees(&out, &s);
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[0]["role"], "compactionSummary");
    assert_eq!(msgs[0]["tokensBefore"], 51234);
    assert_eq!(text_of(&msgs[1]["content"]), "and now?");
    assert_eq!(text_of(&msgs[2]["content"]), "now this");
    // The pre-compaction history is still there, on the same path.
    let a1 = context(&s, Some("a1"));
    assert_eq!(
        context_texts(&a1),
        vec![
            ("user".into(), "hello".into()),
            ("assistant".into(), "hi there".into())
        ]
    );
    let usage = &a1[1]["usage"];
    assert_eq!(
        usage,
        &json!({"input": 3, "output": 7, "cacheRead": 2000, "cacheWrite": 100, "totalTokens": 2110,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}})
    );
    assert_eq!(a1[1]["stopReason"], "stop");
    assert_eq!(a1[1]["responseId"], "msg_1");
}

#[test]
fn claude_code_branch_gives_two_leaves() {
    let lines = vec![
        cc_user("u1", None, "00:01", json!("question")),
        cc_assistant("a1", "u1", "00:02", "msg_1", text("answer")),
        cc_user("u2", Some("a1"), "00:03", json!("first follow-up")),
        cc_assistant("a2", "u2", "00:04", "msg_2", text("first reply")),
        cc_user("u3", Some("a1"), "00:05", json!("edited follow-up")),
        cc_assistant("a3", "u3", "00:06", "msg_3", text("second reply")),
    ];
    let (out, summary) = import(jsonl(&lines).as_bytes());
    assert_eq!(summary.leaf_id.as_deref(), Some("a3"));
    let s = load(&out);
    let leaves: Vec<String> = s.leaves().into_iter().map(|n| n.id).collect();
    assert_eq!(leaves, vec!["a2", "a3"]);
    let bps: Vec<String> = s.branch_points().into_iter().map(|n| n.id).collect();
    assert_eq!(bps, vec!["a1"]);
    let texts = |leaf| context_texts(&context(&s, Some(leaf)));
    assert_eq!(texts("a2")[2].1, "first follow-up");
    assert_eq!(texts("a3")[2].1, "edited follow-up");
    assert_eq!(texts("a3").len(), 4);
}

#[test]
fn claude_code_parallel_results_are_chained() {
    let call = |id: &str| json!({"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": format!("/w/{id}")}});
    let result = |id: &str| json!([{"type": "tool_result", "tool_use_id": id, "content": format!("content of {id}")}]);
    let lines = vec![
        cc_user("u1", None, "00:01", json!("read both")),
        cc_assistant(
            "a1",
            "u1",
            "00:02",
            "msg_1",
            json!({"type": "thinking", "thinking": "two reads", "signature": "sig"}),
        ),
        cc_assistant("a2", "a1", "00:02", "msg_1", call("toolu_1")),
        cc_assistant("a3", "a2", "00:02", "msg_1", call("toolu_2")),
        cc(
            "progress",
            "p1",
            Some("a3"),
            "00:03",
            json!({"data": {"type": "hook_progress"}}),
        ),
        cc_user("r1", Some("a2"), "00:04", result("toolu_1")),
        cc_user("r2", Some("a3"), "00:05", result("toolu_2")),
        cc_assistant("a4", "r2", "00:06", "msg_2", text("both read")),
    ];
    let (out, summary) = import(jsonl(&lines).as_bytes());
    assert_eq!(summary.rechained_results, 1);
    assert_eq!(summary.entries, 6);
    let s = load(&out);
    let entries = values(&out);
    let r2 = entries.iter().find(|e| e["id"] == "r2").unwrap();
    assert_eq!(r2["parentId"], "r1");
    let r1 = entries.iter().find(|e| e["id"] == "r1").unwrap();
    assert_eq!(r1["parentId"], "a1");
    // The progress line stays a side branch of the response.
    assert_eq!(
        entries.iter().find(|e| e["id"] == "p1").unwrap()["parentId"],
        "a1"
    );
    let msgs = context(&s, None);
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "toolResult", "assistant"]
    );
    let blocks: Vec<&str> = msgs[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(blocks, ["thinking", "toolCall", "toolCall"]);
    assert_eq!(msgs[1]["content"][0]["thinkingSignature"], "sig");
    assert_eq!(msgs[1]["stopReason"], "toolUse");
    assert_eq!(msgs[2]["toolName"], "Read");
    assert_eq!(msgs[3]["toolCallId"], "toolu_2");
}

#[test]
fn claude_code_results_with_text_are_chained_entries() {
    let lines = vec![
        cc_user("u1", None, "00:01", json!("run it")),
        cc_assistant(
            "a1",
            "u1",
            "00:02",
            "msg_1",
            json!({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}),
        ),
        cc_user(
            "u2",
            Some("a1"),
            "00:03",
            json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b", "is_error": true}, text("[Request interrupted by user]")]),
        ),
        cc_user("u3", Some("u2"), "00:04", json!("try again")),
    ];
    let (out, summary) = import(jsonl(&lines).as_bytes());
    assert_eq!(summary.messages, 5);
    let entries = values(&out);
    let ids: Vec<&str> = entries[1..]
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["u1", "a1", "u2", "u2:1", "u3"]);
    assert_eq!(entries[4]["parentId"], "u2");
    assert_eq!(entries[5]["parentId"], "u2:1");
    let s = load(&out);
    let msgs = context(&s, None);
    assert_eq!(msgs[2]["role"], "toolResult");
    assert_eq!(msgs[2]["isError"], true);
    assert_eq!(msgs[2]["toolName"], "Bash");
    assert_eq!(
        text_of(&msgs[3]["content"]),
        "[Request interrupted by user]"
    );
}

#[test]
fn claude_code_damaged_trees_load() {
    // A parent that is not in the file, and a cycle.
    let lines = vec![
        cc_user("u1", Some("gone"), "00:01", json!("orphan")),
        cc_user("c1", Some("c2"), "00:02", json!("cycle one")),
        cc_user("c2", Some("c1"), "00:03", json!("cycle two")),
        cc_user("c2", Some("c1"), "00:04", json!("same uuid again")),
    ];
    let (out, summary) = import(jsonl(&lines).as_bytes());
    assert_eq!(
        (
            summary.orphans,
            summary.broken_cycles,
            summary.duplicate_ids
        ),
        (1, 1, 1)
    );
    assert_eq!(summary.entries, 4);
    let s = load(&out);
    assert_eq!(s.metadata().orphans, 1);
    let entries = values(&out);
    assert_eq!(entries[1]["parentId"], "gone");
    assert_eq!(entries[2]["parentId"], Value::Null);
    assert_eq!(entries[3]["parentId"], "c1");
    assert_eq!(entries[4]["id"], "c2:dup");
    assert_eq!(entries[4]["type"], "custom");

    let bad = format!("{}\nnot json\n", lines[0]);
    let e = import_session(bad.as_bytes(), ImportFormat::ClaudeCode, Some("x"), NOW).unwrap_err();
    assert_eq!(e.code, ErrorCode::CorruptedData);
    assert_eq!(e.line, Some(2));
    assert_eq!(e.offset, Some(lines[0].to_string().len() as u64 + 1));
    let e = import_session(
        b"{\"type\":\"user\"}\n\xff\n",
        ImportFormat::ClaudeCode,
        Some("x"),
        NOW,
    )
    .unwrap_err();
    assert_eq!((e.code, e.line), (ErrorCode::CorruptedData, Some(2)));
    let e = import_session(
        jsonl(&lines).as_bytes(),
        ImportFormat::ClaudeCode,
        Some(""),
        NOW,
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
}

fn codex_line(ts: &str, ty: &str, payload: Value) -> Value {
    json!({"timestamp": format!("2025-10-01T10:{ts}.000Z"), "type": ty, "payload": payload})
}

fn codex_rollout() -> Vec<Value> {
    vec![
        codex_line(
            "00:00",
            "session_meta",
            json!({
            "id": "0199a213-81c0-7800-8aa1-bbab2a035a53", "timestamp": "2025-10-01T10:00:00.000Z",
            "cwd": "/repo", "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": null,
            "source": "cli", "model_provider": "openai",
            "git": {"commit_hash": "abc123", "branch": "main", "repository_url": "git@example.com:me/repo.git"}}),
        ),
        codex_line(
            "00:00",
            "response_item",
            json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"}]}),
        ),
        codex_line(
            "00:01",
            "turn_context",
            json!({"cwd": "/repo", "approval_policy": "on-request",
            "sandbox_policy": {"mode": "workspace-write", "network_access": false}, "model": "gpt-5-codex",
            "effort": "medium", "summary": "auto"}),
        ),
        codex_line(
            "00:01",
            "response_item",
            json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "list the files"}]}),
        ),
        codex_line(
            "00:01",
            "event_msg",
            json!({"type": "user_message", "message": "list the files", "images": []}),
        ),
        codex_line(
            "00:02",
            "response_item",
            json!({"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "**Listing files**"}], "content": null,
            "encrypted_content": "gAAAAABo3Zx1c2VjcmV0LXJlYXNvbmluZw=="}),
        ),
        codex_line(
            "00:02",
            "event_msg",
            json!({"type": "agent_reasoning", "text": "**Listing files**"}),
        ),
        codex_line(
            "00:03",
            "response_item",
            json!({"type": "function_call", "name": "shell",
            "arguments": "{\"command\":[\"bash\",\"-lc\",\"ls\"],\"workdir\":\"/repo\"}", "call_id": "call_Xk1"}),
        ),
        codex_line(
            "00:03",
            "event_msg",
            json!({"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 50, "reasoning_output_tokens": 20, "total_tokens": 1050},
            "last_token_usage": {"input_tokens": 1000, "cached_input_tokens": 200, "output_tokens": 50, "reasoning_output_tokens": 20, "total_tokens": 1050},
            "model_context_window": 272000}, "rate_limits": null}),
        ),
        codex_line(
            "00:04",
            "response_item",
            json!({"type": "function_call_output", "call_id": "call_Xk1",
            "output": "{\"output\":\"a.txt\\nb.txt\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"}),
        ),
        codex_line(
            "00:05",
            "response_item",
            json!({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "There are two files: a.txt and b.txt."}]}),
        ),
        codex_line(
            "00:05",
            "event_msg",
            json!({"type": "agent_message", "message": "There are two files: a.txt and b.txt."}),
        ),
        codex_line(
            "00:05",
            "event_msg",
            json!({"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 2100, "cached_input_tokens": 1000, "output_tokens": 70, "reasoning_output_tokens": 20, "total_tokens": 2170},
            "last_token_usage": {"input_tokens": 1100, "cached_input_tokens": 800, "output_tokens": 20, "reasoning_output_tokens": 0, "total_tokens": 1120},
            "model_context_window": 272000}, "rate_limits": null}),
        ),
        codex_line(
            "00:06",
            "compacted",
            json!({"message": "The user asked for the files; there are two: a.txt and b.txt."}),
        ),
        codex_line(
            "00:07",
            "response_item",
            json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "thanks"}]}),
        ),
        codex_line(
            "00:08",
            "response_item",
            json!({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "You're welcome."}]}),
        ),
        codex_line(
            "00:08",
            "event_msg",
            json!({"type": "task_complete", "last_agent_message": "You're welcome."}),
        ),
    ]
}

#[test]
fn codex_rollout_imports() {
    let lines = codex_rollout();
    let (out, summary) = import(jsonl(&lines).as_bytes());
    assert_eq!(summary.format, "codex");
    // reasoning + function_call (with an event between them) become one message.
    assert_eq!(summary.entries as usize, lines.len() - 1);
    assert_eq!(summary.messages, 7);
    assert_eq!(summary.custom_entries, 8);
    let entries = values(&out);
    let h = &entries[0];
    assert_eq!(h["cwd"], "/repo");
    assert_eq!(h["timestamp"], "2025-10-01T10:00:00.000Z");
    assert_eq!(
        h["importedFrom"],
        json!({"format": "codex", "sessionId": "0199a213-81c0-7800-8aa1-bbab2a035a53"})
    );
    assert_eq!(entries[1]["id"], "00000001");
    assert_eq!(entries[1]["customType"], "codex.session_meta");
    assert_eq!(entries[1]["data"], lines[0]);
    for w in entries[1..].windows(2) {
        assert_eq!(w[1]["parentId"], w[0]["id"], "linear chain");
    }
    let c = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(c["id"], "0000000e");
    assert_eq!(
        c["summary"],
        "The user asked for the files; there are two: a.txt and b.txt."
    );
    assert_eq!(c["tokensBefore"], 1120);

    let s = load(&out);
    assert_eq!(s.leaves().len(), 1);
    assert_lazy_agrees(&out, &s);
    let msgs = context(&s, None);
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["compactionSummary", "user", "assistant"]);
    assert_eq!(text_of(&msgs[2]["content"]), "You're welcome.");

    // Before the compaction: the whole turn.
    let m = entries
        .iter()
        .find(|e| e["message"]["content"][0]["text"] == "There are two files: a.txt and b.txt.")
        .unwrap();
    let msgs = context(&s, Some(m["id"].as_str().unwrap()));
    let roles: Vec<&str> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "user", "assistant", "toolResult", "assistant"]
    );
    let a = &msgs[2];
    assert_eq!(a["api"], "openai-responses");
    assert_eq!(a["model"], "gpt-5-codex");
    assert_eq!(a["stopReason"], "toolUse");
    assert_eq!(a["content"][0]["type"], "thinking");
    assert_eq!(a["content"][0]["thinking"], "**Listing files**");
    let sig: Value =
        serde_json::from_str(a["content"][0]["thinkingSignature"].as_str().unwrap()).unwrap();
    assert_eq!(
        sig["encrypted_content"],
        "gAAAAABo3Zx1c2VjcmV0LXJlYXNvbmluZw=="
    );
    assert_eq!(a["content"][1]["type"], "toolCall");
    assert_eq!(a["content"][1]["id"], "call_Xk1");
    assert_eq!(a["content"][1]["arguments"]["command"][2], "ls");
    assert_eq!(a["usage"]["input"], 800);
    assert_eq!(a["usage"]["cacheRead"], 200);
    assert_eq!(a["usage"]["totalTokens"], 1050);
    assert_eq!(a["timestamp"], 1759312802000i64);
    assert_eq!(msgs[3]["toolName"], "shell");
    assert_eq!(msgs[3]["toolCallId"], "call_Xk1");
    assert_eq!(msgs[4]["usage"]["totalTokens"], 1120);
    assert_eq!(msgs[4]["stopReason"], "stop");
    // The group's entry sits where its first item was; the events follow it.
    let types: Vec<String> = entries[1..]
        .iter()
        .map(|e| {
            e["customType"]
                .as_str()
                .map_or_else(|| e["type"].as_str().unwrap().to_string(), str::to_string)
        })
        .collect();
    assert_eq!(
        types,
        [
            "codex.session_meta",
            "message",
            "codex.turn_context",
            "message",
            "codex.event_msg",
            "message",
            "codex.event_msg",
            "codex.event_msg",
            "message",
            "message",
            "codex.event_msg",
            "codex.event_msg",
            "compaction",
            "message",
            "message",
            "codex.event_msg"
        ]
    );
}

#[test]
fn codex_odd_items_stay_custom() {
    let lines = vec![
        codex_line(
            "00:00",
            "session_meta",
            json!({"id": "s", "timestamp": "2025-10-01T10:00:00.000Z", "cwd": "/r"}),
        ),
        codex_line(
            "00:01",
            "response_item",
            json!({"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<permissions instructions>"}]}),
        ),
        codex_line(
            "00:02",
            "response_item",
            json!({"type": "ghost_snapshot", "ghost_commit": {"id": "c"}}),
        ),
        codex_line(
            "00:03",
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "patch it"}]}),
        ),
        codex_line(
            "00:04",
            "response_item",
            json!({"type": "custom_tool_call", "status": "completed", "call_id": "call_P",
            "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch\n"}),
        ),
        codex_line(
            "00:05",
            "response_item",
            json!({"type": "custom_tool_call_output", "call_id": "call_P",
            "output": "Success. Updated the following files:\nM a.txt\n"}),
        ),
        codex_line(
            "00:06",
            "compacted",
            json!({"message": "", "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "patch it"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Summary: patched a.txt"}]}]}),
        ),
    ];
    let input = jsonl(&lines)
        + "{\"timestamp\":\"2025-10-01T10:00:07.000Z\",\"type\":\"something_new\",\"payload\":{\"x\":1.50}}\n";
    let (out, summary) =
        import_session(input.as_bytes(), ImportFormat::Codex, Some("c-1"), NOW).unwrap();
    assert_eq!(summary.entries, 8);
    let entries = values(&out);
    assert_eq!(entries[2]["customType"], "codex.response_item");
    assert_eq!(entries[3]["customType"], "codex.response_item");
    assert_eq!(entries[5]["message"]["role"], "assistant");
    assert_eq!(entries[6]["message"]["role"], "toolResult");
    assert_eq!(entries[6]["message"]["toolName"], "apply_patch");
    assert_eq!(entries[7]["summary"], "patch it\n\nSummary: patched a.txt");
    assert_eq!(entries[8]["customType"], "codex.something_new");
    assert!(out.contains("\"x\":1.50"), "numbers keep their spelling");
    load(&out);
}

#[test]
fn detect_formats() {
    assert_eq!(
        detect(&real("badlogic-pi-mono_large-session.jsonl")).unwrap(),
        ImportFormat::Pi
    );
    assert_eq!(
        detect(&real("mattpocock-sandcastle_resumed-session.jsonl")).unwrap(),
        ImportFormat::Pi
    );
    assert_eq!(
        detect(&real("marot-spotter_tool_heavy.jsonl")).unwrap(),
        ImportFormat::ClaudeCode
    );
    assert_eq!(
        detect(&real("marot-spotter_subagent.jsonl")).unwrap(),
        ImportFormat::ClaudeCode
    );
    assert_eq!(
        detect(jsonl(&codex_rollout()).as_bytes()).unwrap(),
        ImportFormat::Codex
    );
    let gz = forkpoint_core::gz::encode_member(&real("marot-spotter_tool_heavy.jsonl"));
    assert_eq!(detect(&gz).unwrap(), ImportFormat::ClaudeCode);
    let (from_gz, _) = import(&gz);
    assert_eq!(from_gz, import(&real("marot-spotter_tool_heavy.jsonl")).0);
    let e = import_session(
        &gz[..gz.len() - 9],
        ImportFormat::ClaudeCode,
        Some("x"),
        NOW,
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::CorruptedData);
    let summary_first = "{\"type\":\"summary\",\"summary\":\"T\",\"leafUuid\":\"x\"}\n";
    assert_eq!(
        detect(summary_first.as_bytes()).unwrap(),
        ImportFormat::ClaudeCode
    );
    for garbage in [
        &b"hello world\n"[..],
        b"",
        b"\n  \n",
        b"{\"a\":1}\n[1,2]\n",
        b"\x00\x01\x02",
    ] {
        let e = detect(garbage).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedFormat, "{garbage:?}");
        let e = import_session(garbage, ImportFormat::Auto, Some("x"), NOW).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedFormat);
    }
    assert_eq!(
        ImportFormat::parse("claude-code").unwrap(),
        ImportFormat::ClaudeCode
    );
    assert_eq!(ImportFormat::parse("auto").unwrap(), ImportFormat::Auto);
    assert_eq!(ImportFormat::parse("pi").unwrap(), ImportFormat::Pi);
    assert_eq!(ImportFormat::parse("codex").unwrap(), ImportFormat::Codex);
    assert_eq!(
        ImportFormat::parse("claude").unwrap_err().code,
        ErrorCode::InvalidInput
    );
}

#[test]
fn pi_v3_comes_back_byte_identical() {
    let bytes = real("mattpocock-sandcastle_resumed-session.jsonl");
    let (out, summary) = import(&bytes);
    assert_eq!(out.as_bytes(), &bytes[..]);
    assert_eq!(summary.format, "pi");
    let s = load(&out);
    assert_eq!(summary.entries as usize, s.len());
    assert_eq!(summary.messages, s.metadata().message_count);
    assert_eq!(summary.leaf_id.as_deref(), s.leaf_id());
}

#[test]
fn pi_v1_comes_back_as_v3() {
    let bytes = real("badlogic-pi-mono_large-session.jsonl");
    let original = Session::from_bytes(bytes.clone(), &LoadOptions::default(), None).unwrap();
    assert_eq!(original.header().version, 1);
    let (out, summary) = import_session(&bytes, ImportFormat::Pi, Some("ignored"), NOW).unwrap();
    let s = load(&out);
    assert_eq!(s.header().version, 3);
    assert_eq!(s.header().id, original.header().id);
    assert_eq!(summary.messages, original.metadata().message_count);
    assert_eq!(summary.messages, 914);
    assert_eq!(summary.entries as usize, original.len());
    assert_eq!(
        s.context_json(None, false).unwrap(),
        original.context_json(None, false).unwrap()
    );
    // Importing the result again changes nothing.
    let (again, _) = import(out.as_bytes());
    assert_eq!(again, out);
}

#[test]
fn a_torn_pi_tail_is_counted_and_a_cut_gzip_is_corrupted() {
    let mut bytes = real("mattpocock-sandcastle_resumed-session.jsonl");
    let whole = import_session(
        &bytes,
        ImportFormat::Auto,
        Some("x"),
        "2026-01-01T00:00:00.000Z",
    )
    .unwrap();
    assert_eq!(whole.1.skipped_lines, 0);
    bytes.extend_from_slice(b"{\"type\":\"message\",\"id\":\"zz");
    let (text, summary) = import_session(
        &bytes,
        ImportFormat::Auto,
        Some("x"),
        "2026-01-01T00:00:00.000Z",
    )
    .unwrap();
    assert_eq!(summary.skipped_lines, 1);
    assert_eq!(text, whole.0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &real("marot-spotter_tool_heavy.jsonl")).unwrap();
    let gz = gz.finish().unwrap();
    let cut = &gz[..gz.len() - 100];
    let e = import_session(
        cut,
        ImportFormat::Auto,
        Some("x"),
        "2026-01-01T00:00:00.000Z",
    )
    .unwrap_err();
    assert_eq!(e.code, ErrorCode::CorruptedData, "{}", e.message);
}

// ---------------------------------------------------------------- stable ids

fn header(text: &str) -> Value {
    values(text).remove(0)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).unwrap();
    gz.finish().unwrap()
}

#[test]
fn a_claude_code_import_without_an_id_takes_the_source_session_id() {
    let src = real("marot-spotter_tool_heavy.jsonl");
    let sid = "d6e0bada-1959-4eec-a9d2-0bfade768d8f";
    let (a, sa) = import_session(&src, ImportFormat::Auto, None, NOW).unwrap();
    assert_eq!(sa.session_id, sid);
    assert_eq!(header(&a)["id"], sid);
    assert_eq!(header(&a)["importedFrom"]["sessionId"], sid);
    // Again, at another time and gzipped: the same id and the same text.
    let (b, sb) = import_session(
        &gzip(&src),
        ImportFormat::ClaudeCode,
        None,
        "2030-01-01T00:00:00.000Z",
    )
    .unwrap();
    assert_eq!(sb.session_id, sid);
    assert_eq!(a, b);
    // An id asked for wins.
    let (c, sc) = import_session(&src, ImportFormat::Auto, Some("mine"), NOW).unwrap();
    assert_eq!(
        (header(&c)["id"].as_str(), sc.session_id.as_str()),
        (Some("mine"), "mine")
    );
    assert_eq!(header(&c)["importedFrom"]["sessionId"], sid);
}

#[test]
fn a_claude_code_subagent_transcript_is_named_by_its_agent() {
    let line = |uuid: &str, parent: Option<&str>, role: &str| {
        json!({"parentUuid": parent, "isSidechain": true, "agentId": "a1b2c3", "sessionId": "S-1",
        "type": role, "uuid": uuid, "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": role, "content": "hi"}})
    };
    let sub = jsonl(&[
        line("u1", None, "user"),
        line("u2", Some("u1"), "assistant"),
    ]);
    let (text, s) = import_session(sub.as_bytes(), ImportFormat::Auto, None, NOW).unwrap();
    assert_eq!(s.session_id, "S-1-agent-a1b2c3");
    assert_eq!(header(&text)["importedFrom"]["sessionId"], "S-1");
    // The main transcript of the same session keeps the plain id.
    let main = sub.replace("\"isSidechain\":true", "\"isSidechain\":false");
    assert_eq!(
        import_session(main.as_bytes(), ImportFormat::Auto, None, NOW)
            .unwrap()
            .1
            .session_id,
        "S-1"
    );
}

#[test]
fn a_codex_import_without_an_id_takes_the_rollout_id_else_a_hash() {
    let meta = codex_line(
        "00:00",
        "session_meta",
        json!({"id": "0199a1b2-c3d4-7e5f", "cwd": "/w"}),
    );
    let msg = codex_line(
        "00:01",
        "response_item",
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}),
    );
    let with = jsonl(&[meta, msg.clone()]);
    let (text, s) = import_session(with.as_bytes(), ImportFormat::Auto, None, NOW).unwrap();
    assert_eq!(s.session_id, "0199a1b2-c3d4-7e5f");
    assert_eq!(header(&text)["id"], "0199a1b2-c3d4-7e5f");
    // No session_meta: `codex-` and the FNV-1a hash of the bytes, the same each time.
    let without = jsonl(&[msg]);
    let id = import_session(without.as_bytes(), ImportFormat::Codex, None, NOW)
        .unwrap()
        .1
        .session_id;
    assert_eq!(
        id,
        imported_session_id(ImportFormat::Codex, None, without.as_bytes())
    );
    assert!(
        id.starts_with("codex-") && id.len() == "codex-".len() + 16,
        "{id}"
    );
    assert_eq!(
        import_session(without.as_bytes(), ImportFormat::Codex, None, NOW)
            .unwrap()
            .1
            .session_id,
        id
    );
    let other = without.replace("hi", "ho");
    assert_ne!(
        import_session(other.as_bytes(), ImportFormat::Codex, None, NOW)
            .unwrap()
            .1
            .session_id,
        id
    );
}

#[test]
fn derived_ids_are_fixed_functions_of_the_source() {
    // FNV-1a 64 test vectors (the published ones: "" and "a").
    assert_eq!(
        imported_session_id(ImportFormat::Codex, None, b""),
        "codex-cbf29ce484222325"
    );
    assert_eq!(
        imported_session_id(ImportFormat::ClaudeCode, None, b"a"),
        "claude-code-af63dc4c8601ec8c"
    );
    // A source id that is not a valid session id is hashed, never used as it is.
    assert_eq!(
        imported_session_id(ImportFormat::ClaudeCode, Some("a"), b"x"),
        "a"
    );
    assert_eq!(
        imported_session_id(ImportFormat::ClaudeCode, Some("../a"), b"x"),
        imported_session_id(ImportFormat::ClaudeCode, Some("../a"), b"y")
    );
    let odd = imported_session_id(ImportFormat::ClaudeCode, Some("../a"), b"x");
    assert!(
        odd.starts_with("claude-code-") && !odd.contains('/'),
        "{odd}"
    );
    assert_ne!(
        odd,
        imported_session_id(ImportFormat::ClaudeCode, Some("../b"), b"x")
    );
    // A pi file keeps its own id.
    let pi = b"{\"type\":\"session\",\"version\":3,\"id\":\"pi-own\",\"timestamp\":\"2026-01-01T00:00:00.000Z\"}\n";
    assert_eq!(
        import_session(pi, ImportFormat::Auto, None, NOW)
            .unwrap()
            .1
            .session_id,
        "pi-own"
    );
}

fn import_fixture(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/import")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Roles and texts of a context, for comparing whole conversations.
fn roles_texts(msgs: &[Value]) -> Vec<(String, String)> {
    msgs.iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_string(),
                text_of(&m["content"]),
            )
        })
        .collect()
}

#[test]
fn a_claude_code_subagent_transcript_imports_its_own_chain() {
    // A Task subagent's own file: every chain line has isSidechain: true.
    let bytes = import_fixture("claude-code-subagent.jsonl");
    let (text, summary) = import(&bytes);
    assert_eq!(summary.format, "claude-code");
    assert_eq!(
        (summary.entries, summary.messages, summary.custom_entries),
        (4, 4, 0)
    );
    assert_eq!((summary.orphans, summary.skipped_lines), (0, 0));
    let s = load(&text);
    assert_lazy_agrees(&text, &s);
    let ctx = context(&s, None);
    assert_eq!(
        roles_texts(&ctx),
        [
            (
                "user",
                "Find where the config file is loaded and report the function name."
            ),
            ("assistant", "I'll search for it."),
            ("toolResult", "src/config.rs:12: pub fn load_config()"),
            (
                "assistant",
                "The config is loaded by load_config in src/config.rs."
            ),
        ]
        .map(|(r, t)| (r.to_string(), t.to_string()))
    );
    // The two lines of one response are one message; its call pairs with the result.
    assert_eq!(ctx[1]["content"][1]["type"], "toolCall");
    assert_eq!(ctx[1]["content"][1]["id"], "toolu_01S");
    assert_eq!(ctx[2]["toolCallId"], "toolu_01S");
    assert_eq!(ctx[1]["model"], "claude-sonnet-4-5");
    assert_eq!(ctx[3]["usage"]["cacheRead"], 100);
    // Named by its agent, as before.
    let (_, s2) = import_session(&bytes, ImportFormat::Auto, None, NOW).unwrap();
    assert_eq!(
        s2.session_id,
        "5f0c2a1e-7d3b-4c1a-9e8f-0a1b2c3d4e5f-agent-a7c3e91"
    );

    // An older subagent file with a progress line between call and result and
    // a metadata line without isSidechain: the chain is the conversation, the
    // others stay custom entries.
    let bytes = import_fixture("claude-code-subagent-progress.jsonl");
    let (text, summary) = import(&bytes);
    assert_eq!(
        (summary.entries, summary.messages, summary.custom_entries),
        (6, 4, 2)
    );
    let s = load(&text);
    assert_lazy_agrees(&text, &s);
    let ctx = context(&s, None);
    assert_eq!(
        ctx.iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["user", "assistant", "toolResult", "assistant"]
    );
    assert_eq!(ctx[2]["isError"], true);
    assert_eq!(ctx[2]["toolCallId"], ctx[1]["content"][0]["id"]);
    assert_eq!(text_of(&ctx[3]["content"]), "One test fails: parse_empty.");

    // A main transcript that holds a few sidechain lines keeps them as custom
    // entries (its own chain is the conversation).
    let mixed = String::from_utf8(import_fixture("claude-code-subagent.jsonl"))
        .unwrap()
        .replacen("\"isSidechain\":true", "\"isSidechain\":false", 1);
    let (text, summary) = import(mixed.as_bytes());
    assert_eq!((summary.messages, summary.custom_entries), (1, 4));
    let ctx = context(&load(&text), None);
    assert_eq!(ctx.len(), 1);
    assert_eq!(ctx[0]["role"], "user");
}

#[test]
fn a_codex_rollout_with_user_turns_only_in_events_starts_with_the_user() {
    let bytes = import_fixture("codex-user-events-only.jsonl");
    let (text, summary) = import(&bytes);
    assert_eq!(summary.format, "codex");
    // Every line is one entry; the two user_message events became the user turns.
    assert_eq!(summary.entries, 13);
    assert_eq!(summary.messages, 6);
    let s = load(&text);
    assert_lazy_agrees(&text, &s);
    let ctx = context(&s, None);
    assert_eq!(
        ctx.iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect::<Vec<_>>(),
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(text_of(&ctx[0]["content"]), "What does main.rs print?");
    assert_eq!(ctx[2]["toolCallId"], "call_E1");
    assert_eq!(
        text_of(&ctx[4]["content"]),
        "And what is in this screenshot?"
    );
    let img = &ctx[4]["content"][1];
    assert_eq!(
        (img["type"].as_str(), img["mimeType"].as_str()),
        (Some("image"), Some("image/png"))
    );
    assert!(ctx[0]["timestamp"].as_u64().is_some());
    // The user message entry replaces the event line's custom entry.
    let events = values(&text)
        .into_iter()
        .filter(|e| e["customType"] == "codex.event_msg")
        .map(|e| {
            e["data"]["payload"]["type"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect::<Vec<_>>();
    assert!(!events.iter().any(|t| t == "user_message"), "{events:?}");

    // Both forms present (item then event, event then item): no duplicates.
    let bytes = import_fixture("codex-user-events-and-items.jsonl");
    let (text, summary) = import(&bytes);
    assert_eq!(summary.entries, 12);
    let s = load(&text);
    let users: Vec<String> = context(&s, None)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| text_of(&m["content"]))
        .collect();
    assert_eq!(users.len(), 3, "{users:?}");
    assert!(users[0].starts_with("<environment_context>"));
    assert_eq!(&users[1..], ["list the files", "thanks"]);
    let kept_events = values(&text)
        .iter()
        .filter(|e| e["data"]["payload"]["type"] == "user_message")
        .count();
    assert_eq!(kept_events, 2);
    // The rollout written in this file's own shapes still imports as before.
    let (_, before) = import(jsonl(&codex_rollout()).as_bytes());
    assert_eq!(before.messages, 7);
}
