//! Streamed answers of the four providers (written from the documented
//! skeletons in shared/research/streaming.md): the pieces and the final
//! message do not depend on how the bytes are split or which line ends are
//! used; the pieces add up to the final blocks; the final message is what the
//! same answer unstreamed decodes to; errors, malformed and cut-short streams
//! give the right codes; random bytes never panic.

use forkpoint_core::ErrorCode;
use forkpoint_core::normalize::{J, Provider};
use forkpoint_core::provider::{
    Pricing, Rates, StreamDecoder, StreamPiece, decode_response, decode_response_text,
};
use serde_json::{Value, json};

/// An event stream: `event:` (unless empty) and `data:` lines, blank line after each.
fn sse(events: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (name, data) in events {
        if !name.is_empty() {
            s.push_str("event: ");
            s.push_str(name);
            s.push('\n');
        }
        for line in data.split('\n') {
            s.push_str("data: ");
            s.push_str(line);
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

/// Anthropic events named by their type.
fn anthropic_sse(datas: &[&str]) -> String {
    let evs: Vec<(String, &str)> = datas
        .iter()
        .map(|d| {
            let v: Value = serde_json::from_str(d).unwrap_or(Value::Null);
            (v["type"].as_str().unwrap_or("").to_string(), *d)
        })
        .collect();
    let refs: Vec<(&str, &str)> = evs.iter().map(|(a, b)| (a.as_str(), *b)).collect();
    sse(&refs)
}

fn data_only(datas: &[&str]) -> String {
    let evs: Vec<(&str, &str)> = datas.iter().map(|d| ("", *d)).collect();
    sse(&evs)
}

const A_START: &str = r#"{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1,"cache_read_input_tokens":3,"cache_creation_input_tokens":7}}}"#;

fn anthropic_stream() -> String {
    anthropic_sse(&[
        A_START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"count: 1.10 \u00e9 \ud83d"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"\ude00 done."}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAh"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"Ik+/=="}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"The answer "}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"is \"42\"."}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"count","input":{}}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"n\""}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":": 1.10"}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":", \"big\": 12345678901234567890123"}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"}"}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_02","name":"search","input":{}}}"#,
        r#"{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"q\": \"caf\\u00e9\"}"}}"#,
        r#"{"type":"content_block_stop","index":3}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}"#,
        r#"{"type":"message_stop"}"#,
    ])
}

const A_RESPONSE: &str = r#"{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"thinking","thinking":"Let me count: 1.10 \u00e9 \ud83d\ude00 done.","signature":"EqQBCgIYAhIk+/=="},{"type":"text","text":"The answer is \"42\"."},{"type":"tool_use","id":"toolu_01","name":"count","input":{"n":1.10,"big":12345678901234567890123}},{"type":"tool_use","id":"toolu_02","name":"search","input":{"q":"caf\u00e9"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":40,"cache_read_input_tokens":3,"cache_creation_input_tokens":7}}"#;

fn openai_stream() -> String {
    let c = |delta: &str, finish: &str| {
        format!(
            r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini-2025-04-14","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
        )
    };
    let chunks = [
        c(r#"{"role":"assistant","content":"","reasoning_content":"Think "}"#, "null"),
        c(r#"{"reasoning_content":"hard."}"#, "null"),
        c(r#"{"content":"Hello"}"#, "null"),
        c(r#"{"content":" world \u00e9"}"#, "null"),
        c(
            r#"{"tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"count","arguments":""}}]}"#,
            "null",
        ),
        c(
            r#"{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"search","arguments":"{\"q\":"}}]}"#,
            "null",
        ),
        c(r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"n\": 4"}}]}"#, "null"),
        c(r#"{"tool_calls":[{"index":1,"function":{"arguments":"\"x\"}"}}]}"#, "null"),
        c(r#"{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}"#, "null"),
        c("{}", r#""tool_calls""#),
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1-mini-2025-04-14","choices":[],"usage":{"prompt_tokens":25,"completion_tokens":40,"total_tokens":65,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":10}}}"#.to_string(),
        "[DONE]".to_string(),
    ];
    let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
    data_only(&refs)
}

const O_RESPONSE: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1-mini-2025-04-14","choices":[{"index":0,"message":{"role":"assistant","content":"Hello world \u00e9","reasoning_content":"Think hard.","tool_calls":[{"id":"call_A","type":"function","function":{"name":"count","arguments":"{\"n\": 41}"}},{"id":"call_B","type":"function","function":{"name":"search","arguments":"{\"q\":\"x\"}"}}],"refusal":null,"annotations":[]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":25,"completion_tokens":40,"total_tokens":65,"prompt_tokens_details":{"cached_tokens":5},"completion_tokens_details":{"reasoning_tokens":10}}}"#;

const R_ITEMS: [&str; 3] = [
    r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"First thought."},{"type":"summary_text","text":"Second."}],"encrypted_content":"gAAAAB-enc=="}"#,
    r#"{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there.","annotations":[]}]}"#,
    r#"{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"count","arguments":"{\"n\":41}"}"#,
];

const R_USAGE: &str = r#"{"input_tokens":25,"input_tokens_details":{"cached_tokens":5},"output_tokens":40,"output_tokens_details":{"reasoning_tokens":12},"total_tokens":65}"#;

fn responses_response() -> String {
    format!(
        r#"{{"id":"resp_1","object":"response","status":"completed","model":"gpt-5-2025-08-07","output":[{}],"usage":{R_USAGE}}}"#,
        R_ITEMS.join(",")
    )
}

/// The Responses stream; `done_items: false` leaves out the output_item.done events.
fn responses_stream(done_items: bool) -> String {
    let mut evs: Vec<String> = vec![
        r#"{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5-2025-08-07","output":[]}}"#.into(),
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#.into(),
        r#"{"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}"#.into(),
        r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"First "}"#.into(),
        r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"thought."}"#.into(),
        r#"{"type":"response.reasoning_summary_part.added","item_id":"rs_1","output_index":0,"summary_index":1,"part":{"type":"summary_text","text":""}}"#.into(),
        r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":1,"delta":"Second."}"#.into(),
    ];
    if done_items {
        evs.push(format!(
            r#"{{"type":"response.output_item.done","output_index":0,"item":{}}}"#,
            R_ITEMS[0]
        ));
    }
    evs.extend([
        r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#.to_string(),
        r#"{"type":"response.content_part.added","item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}"#.into(),
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"Hi "}"#.into(),
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":1,"content_index":0,"delta":"there."}"#.into(),
        r#"{"type":"response.output_text.done","item_id":"msg_1","output_index":1,"content_index":0,"text":"Hi there."}"#.into(),
        r#"{"type":"response.content_part.done","item_id":"msg_1","output_index":1,"content_index":0,"part":{"type":"output_text","text":"Hi there.","annotations":[]}}"#.into(),
    ]);
    if done_items {
        evs.push(format!(
            r#"{{"type":"response.output_item.done","output_index":1,"item":{}}}"#,
            R_ITEMS[1]
        ));
    }
    evs.extend([
        r#"{"type":"response.output_item.added","output_index":2,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"count","arguments":""}}"#.to_string(),
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":"{\"n\""}"#.into(),
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":2,"delta":":41}"}"#.into(),
        r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":2,"arguments":"{\"n\":41}"}"#.into(),
    ]);
    if done_items {
        evs.push(format!(
            r#"{{"type":"response.output_item.done","output_index":2,"item":{}}}"#,
            R_ITEMS[2]
        ));
    }
    evs.push(format!(
        r#"{{"type":"response.completed","response":{}}}"#,
        responses_response()
    ));
    // sequence numbers, as the API sends them
    let evs: Vec<String> = evs
        .iter()
        .enumerate()
        .map(|(i, e)| {
            e.replacen(
                "{\"type\":",
                &format!("{{\"sequence_number\":{i},\"type\":"),
                1,
            )
        })
        .collect();
    let named: Vec<(String, &str)> = evs
        .iter()
        .map(|d| {
            let v: Value = serde_json::from_str(d).unwrap();
            (v["type"].as_str().unwrap().to_string(), d.as_str())
        })
        .collect();
    let refs: Vec<(&str, &str)> = named.iter().map(|(a, b)| (a.as_str(), *b)).collect();
    sse(&refs)
}

fn google_stream() -> String {
    let c = |parts: &str, extra: &str| {
        format!(
            r#"{{"candidates":[{{"content":{{"parts":{parts},"role":"model"}}{extra},"index":0}}],"usageMetadata":{{"promptTokenCount":25,"totalTokenCount":25}},"modelVersion":"gemini-2.5-flash","responseId":"r1"}}"#
        )
    };
    let chunks = [
        c(r#"[{"text":"Plan ","thought":true}]"#, ""),
        c(r#"[{"text":"it.","thought":true}]"#, ""),
        c(r#"[{"text":"Hello "}]"#, ""),
        c(r#"[{"text":"world"}]"#, ""),
        c(r#"[{"text":"","thoughtSignature":"c2lnMQ=="}]"#, ""),
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"count","args":{"n":41}},"thoughtSignature":"c2lnMg=="},{"functionCall":{"name":"search","args":{"q":"x"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":25,"candidatesTokenCount":40,"thoughtsTokenCount":12,"cachedContentTokenCount":5,"totalTokenCount":77},"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#.to_string(),
    ];
    let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
    data_only(&refs)
}

const G_RESPONSE: &str = r#"{"candidates":[{"content":{"parts":[{"text":"Plan it.","thought":true},{"text":"Hello world","thoughtSignature":"c2lnMQ=="},{"functionCall":{"name":"count","args":{"n":41}},"thoughtSignature":"c2lnMg=="},{"functionCall":{"name":"search","args":{"q":"x"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":25,"candidatesTokenCount":40,"thoughtsTokenCount":12,"cachedContentTokenCount":5,"totalTokenCount":77},"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#;

struct Case {
    api: Provider,
    provider: &'static str,
    model: &'static str,
    stream: String,
    response: String,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            api: Provider::Anthropic,
            provider: "anthropic",
            model: "claude-sonnet-4-5",
            stream: anthropic_stream(),
            response: A_RESPONSE.into(),
        },
        Case {
            api: Provider::OpenAi,
            provider: "openai",
            model: "gpt-4.1-mini",
            stream: openai_stream(),
            response: O_RESPONSE.into(),
        },
        Case {
            api: Provider::Responses,
            provider: "openai",
            model: "gpt-5",
            stream: responses_stream(true),
            response: responses_response(),
        },
        Case {
            api: Provider::Google,
            provider: "google",
            model: "gemini-2.5-flash",
            stream: google_stream(),
            response: G_RESPONSE.into(),
        },
    ]
}

/// Feeds `chunks` and finishes: the pieces and the message's exact JSON.
fn run(api: Provider, provider: &str, model: &str, chunks: &[&[u8]]) -> (Vec<StreamPiece>, String) {
    let mut d = StreamDecoder::new(api, provider, model);
    let mut pieces = Vec::new();
    for c in chunks {
        pieces.extend(d.push(c).unwrap_or_else(|e| panic!("{}: {e}", api.name())));
    }
    let text = d
        .finish_json()
        .unwrap_or_else(|e| panic!("{}: {e}", api.name()));
    (pieces, text)
}

/// The pieces of each index add up to the final block.
fn check_pieces(pieces: &[StreamPiece], msg: &Value) {
    let content = msg["content"].as_array().expect("content");
    let mut text: Vec<String> = vec![String::new(); content.len()];
    let mut calls: Vec<Option<(String, String)>> = vec![None; content.len()];
    for p in pieces {
        match p {
            StreamPiece::Text { index, text: t } | StreamPiece::Thinking { index, text: t } => {
                text[*index].push_str(t)
            }
            StreamPiece::ToolCall { index, id, name } => {
                assert!(calls[*index].is_none(), "call {index} started twice");
                calls[*index] = Some((id.clone(), name.clone()));
            }
            StreamPiece::ToolArgs { index, text: t } => text[*index].push_str(t),
            StreamPiece::Usage(u) => assert!(u["totalTokens"].is_u64()),
        }
    }
    for (i, b) in content.iter().enumerate() {
        match b["type"].as_str().unwrap() {
            "text" => assert_eq!(text[i], b["text"].as_str().unwrap(), "block {i}"),
            "thinking" => assert_eq!(text[i], b["thinking"].as_str().unwrap(), "block {i}"),
            "toolCall" => {
                let (id, name) = calls[i].clone().expect("a ToolCall piece");
                assert_eq!(id, b["id"].as_str().unwrap());
                assert_eq!(name, b["name"].as_str().unwrap());
                let args: Value = serde_json::from_str(&text[i]).expect("args are JSON");
                assert_eq!(args, b["arguments"], "block {i}");
            }
            other => panic!("unexpected block {other}"),
        }
    }
}

#[test]
fn streams_decode_to_the_unstreamed_message() {
    for c in cases() {
        let (pieces, text) = run(c.api, c.provider, c.model, &[c.stream.as_bytes()]);
        let msg: Value = serde_json::from_str(&text).unwrap();
        check_pieces(&pieces, &msg);
        let unstreamed =
            decode_response_text(c.api, c.provider, c.model, &c.response, None).unwrap();
        assert_eq!(text, unstreamed.text(), "{}", c.api.name());
        assert_eq!(
            msg,
            decode_response(c.api, c.provider, c.model, &c.response).unwrap(),
            "{}",
            c.api.name()
        );
        assert_eq!(msg["role"], "assistant");
        assert_eq!(msg["api"], c.api.api());
        assert_eq!(msg["provider"], c.provider);
        assert_eq!(msg["stopReason"], "toolUse", "{}", c.api.name());
        assert!(pieces.iter().any(|p| matches!(p, StreamPiece::Usage(_))));
    }
}

#[test]
fn anthropic_message_in_detail() {
    let (pieces, text) = run(
        Provider::Anthropic,
        "anthropic",
        "claude",
        &[anthropic_stream().as_bytes()],
    );
    let m: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(m["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(m["responseId"], "msg_01");
    let c = &m["content"];
    assert_eq!(c[0]["type"], "thinking");
    assert_eq!(c[0]["thinking"], "Let me count: 1.10 é 😀 done.");
    assert_eq!(c[0]["thinkingSignature"], "EqQBCgIYAhIk+/==");
    assert_eq!(
        c[1],
        json!({"type": "text", "text": "The answer is \"42\"."})
    );
    assert_eq!(c[2]["id"], "toolu_01");
    assert_eq!(c[3]["arguments"], json!({"q": "café"}));
    // The exact text keeps 1.10 and the 23-digit integer (and the escapes).
    assert!(
        text.contains(r#""arguments":{"n":1.10,"big":12345678901234567890123}"#),
        "{text}"
    );
    assert!(text.contains(r#"caf\u00e9"#));
    // The emoji split across two deltas arrives whole in the pieces too.
    assert!(
        pieces
            .iter()
            .any(|p| matches!(p, StreamPiece::Thinking { text, .. } if text == "\u{1F600} done."))
    );
    // usage: Anthropic's input excludes the cache; total is the sum; Sonnet 4.5 prices.
    let u = &m["usage"];
    assert_eq!(
        (
            u["input"].as_u64(),
            u["output"].as_u64(),
            u["cacheRead"].as_u64(),
            u["cacheWrite"].as_u64(),
            u["totalTokens"].as_u64()
        ),
        (Some(25), Some(40), Some(3), Some(7), Some(75))
    );
    let cost = u["cost"]["total"].as_f64().unwrap();
    let want = (25.0 * 3.0 + 40.0 * 15.0 + 3.0 * 0.3 + 7.0 * 3.75) / 1e6;
    assert!((cost - want).abs() < 1e-12, "{cost} {want}");
    // the first usage piece is message_start's, the last message_delta's
    let usages: Vec<&Value> = pieces
        .iter()
        .filter_map(|p| match p {
            StreamPiece::Usage(u) => Some(u),
            _ => None,
        })
        .collect();
    assert_eq!(usages.len(), 2);
    assert_eq!(usages[0]["output"], 1);
    assert_eq!(usages[1]["output"], 40);
}

#[test]
fn openai_responses_google_in_detail() {
    let (_, t) = run(
        Provider::OpenAi,
        "openai",
        "x",
        &[openai_stream().as_bytes()],
    );
    let m: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(
        m["content"][0],
        json!({"type": "thinking", "thinking": "Think hard.", "thinkingSignature": "reasoning_content"})
    );
    assert_eq!(
        m["content"][1],
        json!({"type": "text", "text": "Hello world é"})
    );
    assert_eq!(m["content"][2]["arguments"], json!({"n": 41}));
    assert_eq!(m["content"][2]["argumentsRaw"], "{\"n\": 41}");
    assert_eq!(m["content"][3]["id"], "call_B");
    assert_eq!(m["content"][3]["arguments"], json!({"q": "x"}));
    assert_eq!(m["usage"]["input"], 20);
    assert_eq!(m["usage"]["cacheRead"], 5);
    assert_eq!(m["usage"]["reasoning"], 10);
    assert_eq!(m["model"], "gpt-4.1-mini-2025-04-14");
    let cost = m["usage"]["cost"]["total"].as_f64().unwrap();
    assert!((cost - (20.0 * 0.4 + 40.0 * 1.6 + 5.0 * 0.1) / 1e6).abs() < 1e-12);

    let (_, t) = run(
        Provider::Responses,
        "openai",
        "x",
        &[responses_stream(true).as_bytes()],
    );
    let m: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(m["content"][0]["thinking"], "First thought.\n\nSecond.");
    let item: Value =
        serde_json::from_str(m["content"][0]["thinkingSignature"].as_str().unwrap()).unwrap();
    assert_eq!(item["encrypted_content"], "gAAAAB-enc==");
    assert_eq!(m["content"][1]["text"], "Hi there.");
    assert_eq!(m["content"][1]["textSignature"], r#"{"v":1,"id":"msg_1"}"#);
    assert_eq!(m["content"][2]["id"], "call_1|fc_1");
    assert_eq!(m["usage"]["input"], 20);
    assert_eq!(m["usage"]["reasoning"], 12);
    assert_eq!(m["responseId"], "resp_1");

    // Without output_item.done events the message is assembled from the deltas.
    let (pieces, t) = run(
        Provider::Responses,
        "openai",
        "x",
        &[responses_stream(false).as_bytes()],
    );
    let m: Value = serde_json::from_str(&t).unwrap();
    check_pieces(&pieces, &m);
    assert_eq!(m["content"][0]["thinking"], "First thought.\n\nSecond.");
    assert_eq!(m["content"][1]["text"], "Hi there.");
    assert_eq!(m["content"][2]["arguments"], json!({"n": 41}));

    let (_, t) = run(
        Provider::Google,
        "google",
        "x",
        &[google_stream().as_bytes()],
    );
    let m: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(
        m["content"][0],
        json!({"type": "thinking", "thinking": "Plan it."})
    );
    assert_eq!(
        m["content"][1],
        json!({"type": "text", "text": "Hello world", "textSignature": "c2lnMQ=="})
    );
    assert_eq!(m["content"][2]["id"], "gcall_0_0");
    assert_eq!(m["content"][2]["thoughtSignature"], "c2lnMg==");
    assert_eq!(m["content"][3]["name"], "search");
    assert_eq!(
        (
            m["usage"]["input"].as_u64(),
            m["usage"]["output"].as_u64(),
            m["usage"]["cacheRead"].as_u64(),
            m["usage"]["reasoning"].as_u64()
        ),
        (Some(20), Some(52), Some(5), Some(12))
    );
    assert_eq!(m["responseId"], "r1");
}

/// The pieces of feeding `chunks` (no finish), and whether the stream was complete.
fn pieces_of(c: &Case, chunks: &[&[u8]]) -> (Vec<StreamPiece>, bool) {
    let mut d = StreamDecoder::new(c.api, c.provider, c.model);
    let mut pieces = Vec::new();
    for ch in chunks {
        pieces.extend(
            d.push(ch)
                .unwrap_or_else(|e| panic!("{}: {e}", c.api.name())),
        );
    }
    (pieces, d.complete())
}

#[test]
fn every_split_and_line_end_gives_the_same_result() {
    for c in cases() {
        let b = c.stream.as_bytes();
        let want = run(c.api, c.provider, c.model, &[b]);
        let want_pieces = (want.0.clone(), true);
        // every split: the same pieces; every 16th: the same message too
        for k in 0..=b.len() {
            assert!(
                pieces_of(&c, &[&b[..k], &b[k..]]) == want_pieces,
                "{} split at byte {k}",
                c.api.name()
            );
            if k % 16 == 0 {
                assert!(
                    run(c.api, c.provider, c.model, &[&b[..k], &b[k..]]) == want,
                    "{} split at {k}",
                    c.api.name()
                );
            }
        }
        let bytes: Vec<&[u8]> = b.chunks(1).collect();
        assert!(
            run(c.api, c.provider, c.model, &bytes) == want,
            "{} byte by byte",
            c.api.name()
        );
        for (i, size) in [3usize, 7, 64, 1000].into_iter().enumerate() {
            let parts: Vec<&[u8]> = b.chunks(size + i).collect();
            assert!(run(c.api, c.provider, c.model, &parts) == want);
        }
        // JSON over several data: lines, with comments and ignored fields between them
        let multi: String = c
            .stream
            .lines()
            .map(
                |l| match l.strip_prefix("data: ").and_then(|d| J::parse(d).ok()) {
                    Some(j) => {
                        let lines: Vec<String> =
                            j.pretty().lines().map(|x| format!("data:{x}\n")).collect();
                        format!(": keep-alive\nid: 1\n{}", lines.join("retry: 5\n"))
                    }
                    None => format!("{l}\n"),
                },
            )
            .collect();
        assert!(run(c.api, c.provider, c.model, &[multi.as_bytes()]) == want);
        for end in ["\r\n", "\r"] {
            let other = format!("\u{feff}{}", multi.replace('\n', end));
            let ob = other.as_bytes();
            assert!(
                run(c.api, c.provider, c.model, &[ob]) == want,
                "{} {end:?}",
                c.api.name()
            );
            // splits after every CR (between CR and LF), inside the BOM, every 61st byte
            let at_cr = (1..ob.len()).filter(|&k| ob[k - 1] == b'\r');
            for k in (0..=ob.len()).step_by(61).chain(0..8).chain(at_cr) {
                let got = pieces_of(&c, &[&ob[..k], &ob[k..]]);
                assert!(got == want_pieces, "{} {end:?} split at {k}", c.api.name());
            }
        }
    }
}

fn err_of(api: Provider, chunks: &[&str]) -> forkpoint_core::Error {
    let mut d = StreamDecoder::new(api, api.vendor(), "m");
    for c in chunks {
        if let Err(e) = d.push(c.as_bytes()) {
            return e;
        }
    }
    d.finish().expect_err("an error")
}

#[test]
fn mid_stream_errors_have_their_codes() {
    let a = anthropic_sse(&[
        A_START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ]);
    // One push: the pieces come first, the error with the next call.
    let mut d = StreamDecoder::new(Provider::Anthropic, "anthropic", "m");
    let pieces = d.push(a.as_bytes()).unwrap();
    assert!(
        pieces
            .iter()
            .any(|p| matches!(p, StreamPiece::Text { text, .. } if text == "Hi"))
    );
    assert!(d.delivered());
    let e = d.finish().unwrap_err();
    assert_eq!(e.code, ErrorCode::ProviderUnavailable);
    assert!(
        e.message.contains("Overloaded") && e.message.contains("event 4"),
        "{e}"
    );
    assert_eq!(d.push(b"data: {}\n\n").unwrap_err(), e);
    // Usage and a block with nothing to show deliver nothing: a retry is safe.
    let mut d = StreamDecoder::new(Provider::Anthropic, "anthropic", "m");
    let s = anthropic_sse(&[
        A_START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"ENC"}}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
    ]);
    assert_eq!(d.push(s.as_bytes()).unwrap().len(), 1);
    assert!(!d.delivered());

    for (api, data, code) in [
        (
            Provider::Anthropic,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            ErrorCode::ProviderRateLimited,
        ),
        (
            Provider::Anthropic,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#,
            ErrorCode::ProviderBadRequest,
        ),
        (
            Provider::Anthropic,
            r#"{"type":"error","error":{"type":"authentication_error","message":"key"}}"#,
            ErrorCode::ProviderAuth,
        ),
        (
            Provider::OpenAi,
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
            ErrorCode::ProviderRateLimited,
        ),
        (
            Provider::OpenAi,
            r#"{"error":{"message":"The server had an error","type":"server_error"}}"#,
            ErrorCode::ProviderUnavailable,
        ),
        (
            Provider::Responses,
            r#"{"type":"error","code":"invalid_prompt","message":"bad prompt"}"#,
            ErrorCode::ProviderBadRequest,
        ),
        (
            Provider::Responses,
            r#"{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}}"#,
            ErrorCode::ProviderUnavailable,
        ),
        (
            Provider::Responses,
            r#"{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow"}}}"#,
            ErrorCode::ProviderRateLimited,
        ),
        (
            Provider::Google,
            r#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#,
            ErrorCode::ProviderRateLimited,
        ),
        (
            Provider::Google,
            r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#,
            ErrorCode::ProviderUnavailable,
        ),
    ] {
        let e = err_of(api, &[&data_only(&[data])]);
        assert_eq!(e.code, code, "{}: {e}", api.name());
        assert!(!e.message.is_empty());
    }
}

#[test]
fn broken_streams_are_protocol_errors() {
    let p = ErrorCode::ProviderProtocol;
    let text_start =
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
    // bad JSON in a data line: the event number is in the message
    let e = err_of(
        Provider::Anthropic,
        &[
            &anthropic_sse(&[A_START]),
            "event: content_block_start\ndata: {\"type\":\n\n",
        ],
    );
    assert_eq!(e.code, p);
    assert!(e.message.contains("event 2"), "{e}");
    // a delta for a block never started
    let e = err_of(
        Provider::Anthropic,
        &[&anthropic_sse(&[
            A_START,
            r#"{"type":"content_block_delta","index":5,"delta":{"type":"text_delta","text":"x"}}"#,
        ])],
    );
    assert!(e.code == p && e.message.contains("never started"), "{e}");
    // a text delta for a tool block
    let e = err_of(
        Provider::Anthropic,
        &[&anthropic_sse(&[
            A_START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
        ])],
    );
    assert_eq!(e.code, p, "{e}");
    // early ends, for each format
    let e = err_of(
        Provider::Anthropic,
        &[&anthropic_sse(&[A_START, text_start])],
    );
    assert!(e.code == p && e.message.contains("message_stop"), "{e}");
    let s = openai_stream();
    let cut = &s[..s.find("tool_calls\"}").unwrap()];
    let e = err_of(Provider::OpenAi, &[cut]);
    assert!(e.code == p && e.message.contains("finish_reason"), "{e}");
    assert!(e.message.contains("cut off"), "{e}");
    let s = responses_stream(true);
    let e = err_of(
        Provider::Responses,
        &[&s[..s.find("event: response.completed").unwrap()]],
    );
    assert!(
        e.code == p && e.message.contains("response.completed"),
        "{e}"
    );
    let s = google_stream();
    let e = err_of(Provider::Google, &[&s[..s.rfind("data: ").unwrap()]]);
    assert!(e.code == p && e.message.contains("finishReason"), "{e}");
    // Responses: a delta for an item never added; events out of order
    let e = err_of(
        Provider::Responses,
        &[&data_only(&[
            r#"{"type":"response.output_text.delta","output_index":3,"content_index":0,"delta":"x"}"#,
        ])],
    );
    assert!(e.code == p && e.message.contains("never added"), "{e}");
    let e = err_of(
        Provider::Responses,
        &[&data_only(&[
            r#"{"type":"response.created","sequence_number":5,"response":{}}"#,
            r#"{"type":"response.in_progress","sequence_number":5,"response":{}}"#,
        ])],
    );
    assert!(e.code == p && e.message.contains("sequence_number"), "{e}");
    // bad JSON split inside a character, then bytes that are not UTF-8
    let e = err_of(Provider::Google, &["data: {\"a\":\"\u{e9}", "\n\n"]);
    assert!(e.code == p && e.message.contains("not JSON"), "{e}");
    let mut d = StreamDecoder::new(Provider::Google, "google", "m");
    assert_eq!(d.push(b"data: \xc3\x28\n\n").unwrap_err().code, p);
}

#[test]
fn tool_arguments_that_are_not_json() {
    let events = |stop: &str| {
        anthropic_sse(&[
            A_START,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_9","name":"write","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"text\": \"unfinish"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            &format!(
                r#"{{"type":"message_delta","delta":{{"stop_reason":"{stop}"}},"usage":{{"output_tokens":9}}}}"#
            ),
            r#"{"type":"message_stop"}"#,
        ])
    };
    let e = err_of(Provider::Anthropic, &[&events("tool_use")]);
    assert!(
        e.code == ErrorCode::ProviderProtocol
            && e.message.contains("not JSON")
            && e.message.contains("event 4"),
        "{e}"
    );
    // cut by max_tokens: the call is kept with its text
    let (_, t) = run(
        Provider::Anthropic,
        "anthropic",
        "m",
        &[events("max_tokens").as_bytes()],
    );
    let m: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(m["stopReason"], "length");
    assert_eq!(m["content"][0]["arguments"], json!({}));
    assert_eq!(m["content"][0]["argumentsRaw"], "{\"text\": \"unfinish");
    // an aborted stream: what came so far, the call's text kept
    let s = events("tool_use");
    let mut d = StreamDecoder::new(Provider::Anthropic, "anthropic", "m");
    d.push(&s.as_bytes()[..s.find("event: content_block_stop").unwrap()])
        .unwrap();
    assert!(d.finish().is_err());
    let m = d.finish_partial("aborted", None).unwrap();
    assert_eq!(m["stopReason"], "aborted");
    assert_eq!(m["content"][0]["argumentsRaw"], "{\"text\": \"unfinish");
    assert_eq!(
        d.finish_partial("stop", None).unwrap_err().code,
        ErrorCode::InvalidInput
    );
    // OpenAI arguments are text by design: kept as the model wrote them
    let s = data_only(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"not json"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    let (_, t) = run(Provider::OpenAi, "openai", "m", &[s.as_bytes()]);
    let m: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(m["content"][0]["argumentsRaw"], "not json");
}

#[test]
fn stop_reasons_names_and_odd_shapes() {
    // OpenAI: [DONE] may be missing after finish_reason; content_filter is an error
    let s = data_only(&[
        r#"{"id":"c1","model":"m2","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
        r#"{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}"#,
    ]);
    let (_, t) = run(Provider::OpenAi, "azure", "m", &[s.as_bytes()]);
    let m: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(m["stopReason"], "error");
    assert!(
        m["errorMessage"]
            .as_str()
            .unwrap()
            .contains("content_filter")
    );
    assert_eq!(
        (m["provider"].as_str(), m["model"].as_str()),
        (Some("azure"), Some("m2"))
    );
    // a tool call before any text keeps its place (first appearance)
    let s = data_only(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"after"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]);
    let (pieces, t) = run(Provider::OpenAi, "openai", "m", &[s.as_bytes()]);
    let m: Value = serde_json::from_str(&t).unwrap();
    check_pieces(&pieces, &m);
    assert_eq!(m["content"][0]["type"], "toolCall");
    assert_eq!(m["content"][1]["text"], "after");
    // Responses incomplete → length
    let s = data_only(&[
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"m","type":"message","role":"assistant","content":[]}}"#,
        r#"{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"cut"}"#,
        r#"{"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":1,"output_tokens":2}}}"#,
    ]);
    let (_, t) = run(Provider::Responses, "openai", "m", &[s.as_bytes()]);
    let m: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(m["stopReason"], "length");
    assert_eq!(m["content"][0]["text"], "cut");
    // Gemini: a blocked prompt; a safety stop
    let s = data_only(&[
        r#"{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":4}}"#,
    ]);
    let (_, t) = run(Provider::Google, "google", "m", &[s.as_bytes()]);
    let m: Value = serde_json::from_str(&t).unwrap();
    assert_eq!(m["stopReason"], "error");
    assert_eq!(m["content"], json!([]));
    let s = data_only(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"MAX_TOKENS"}]}"#,
    ]);
    let (_, t) = run(Provider::Google, "google", "m", &[s.as_bytes()]);
    assert_eq!(
        serde_json::from_str::<Value>(&t).unwrap()["stopReason"],
        "length"
    );
    // renamed tools come back with their own names; explicit prices
    let mut d = StreamDecoder::new(Provider::Anthropic, "anthropic", "unknown-model");
    d.set_name_map(vec![("my_tool".into(), "my.tool".into())]);
    d.set_pricing(Some(Pricing {
        rates: Rates {
            input: 1.0,
            output: 2.0,
            cache_read: 0.0,
            cache_write: 0.0,
        },
        long_prompt: None,
    }));
    let s = anthropic_sse(&[
        r#"{"type":"message_start","message":{"id":"m","model":"","usage":{"input_tokens":1000000,"output_tokens":0}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"my_tool","input":{}}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":500000}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    let pieces = d.push(s.as_bytes()).unwrap();
    assert!(
        pieces
            .iter()
            .any(|p| matches!(p, StreamPiece::ToolCall { name, .. } if name == "my.tool"))
    );
    let m = d.finish().unwrap();
    assert_eq!(m["content"][0]["name"], "my.tool");
    assert_eq!(m["content"][0]["arguments"], json!({}));
    assert_eq!(m["model"], "unknown-model");
    assert_eq!(m["usage"]["cost"]["total"], 2.0);
    assert_eq!(d.finish().unwrap(), m);
    // events after message_stop are not read
    assert!(d.push(b"data: not json\n\n").unwrap().is_empty());
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn random_bytes_and_mutations_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let alphabet: &[u8] = b"data: event:{}[]\"\\,:0123456789abcdeftypeindexdelta\r\n\n\n\xff\xc3";
    for c in cases() {
        let base = c.stream.as_bytes();
        for round in 0..600 {
            let mut bytes: Vec<u8> = if round % 3 == 0 {
                (0..rng.below(400))
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect()
            } else {
                base.to_vec()
            };
            for _ in 0..1 + rng.below(6) {
                if bytes.is_empty() {
                    break;
                }
                let at = rng.below(bytes.len());
                match rng.below(4) {
                    0 => bytes[at] = alphabet[rng.below(alphabet.len())],
                    1 => {
                        bytes.remove(at);
                    }
                    2 => bytes.insert(at, alphabet[rng.below(alphabet.len())]),
                    _ => bytes.truncate(at),
                }
            }
            let mut d = StreamDecoder::new(c.api, c.provider, c.model);
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let n = 1 + rng.below(rest.len().min(200));
                let _ = d.push(&rest[..n]);
                rest = &rest[n..];
            }
            let _ = d.finish();
            let _ = d.finish_partial("error", Some("x"));
        }
    }
}

#[test]
fn a_burst_of_ten_thousand_chunks() {
    let mut s = String::with_capacity(1 << 21);
    for i in 0..10_000 {
        s.push_str(&format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{i} \"}},\"finish_reason\":null}}]}}\n\n"
        ));
    }
    s.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    let started = std::time::Instant::now();
    let mut d = StreamDecoder::new(Provider::OpenAi, "openai", "gpt-4o");
    let mut n = 0;
    for chunk in s.as_bytes().chunks(1400) {
        n += d.push(chunk).unwrap().len();
    }
    let m = d.finish().unwrap();
    let took = started.elapsed();
    assert_eq!(n, 10_000);
    let text = m["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("w0 w1 ") && text.ends_with("w9999 "));
    assert_eq!(m["stopReason"], "stop");
    eprintln!("10,000 chunks ({} KiB): {took:?}", s.len() >> 10);
}

#[test]
fn a_gemini_error_written_as_bare_json_mid_stream_is_that_error() {
    // Gemini ends a failing stream with its google.rpc.Status JSON,
    // pretty-printed and outside the SSE framing.
    let first = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Half an\"}],\"role\":\"model\"},\"index\":0}]}\r\n\r\n";
    let bare = "{\n  \"error\": {\n    \"code\": 503,\n    \"message\": \"The model is overloaded. Please try again later.\",\n    \"status\": \"UNAVAILABLE\"\n  }\n}\n";
    let mut d = StreamDecoder::new(Provider::Google, "google", "gemini-2.5-flash");
    let pieces = d.push(first.as_bytes()).unwrap();
    assert_eq!(pieces.len(), 1);
    assert!(d.push(bare.as_bytes()).unwrap().is_empty());
    let e = d.finish().unwrap_err();
    assert_eq!(e.code, ErrorCode::ProviderUnavailable, "{e:?}");
    assert!(e.message.contains("overloaded"), "{}", e.message);
    // Bare text that is no error still reads as an early end.
    let mut d = StreamDecoder::new(Provider::Google, "google", "gemini-2.5-flash");
    d.push(first.as_bytes()).unwrap();
    d.push(b"{\"not\": \"an error\"}\n").unwrap();
    assert_eq!(d.finish().unwrap_err().code, ErrorCode::ProviderProtocol);
}

/// The index of each piece is its block's index in the final message, also
/// when blocks without streamed text (server tool use, its result, redacted
/// thinking, an empty text) come before.
fn pieces_land_on_their_blocks(api: Provider, model: &str, body: &str) {
    let (pieces, text) = run(api, "p", model, &[body.as_bytes()]);
    let msg: Value = serde_json::from_str(&text).unwrap();
    let content = msg["content"].as_array().unwrap();
    for p in &pieces {
        let Some(i) = p.index() else { continue };
        let b = content
            .get(i)
            .unwrap_or_else(|| panic!("piece {p:?} past the {} blocks: {text}", content.len()));
        let want = match p {
            StreamPiece::Text { .. } => "text",
            StreamPiece::Thinking { .. } => "thinking",
            _ => "toolCall",
        };
        assert_eq!(b["type"], want, "piece {p:?} lands on {b}");
    }
}

#[test]
fn anthropic_piece_indices_with_server_tools_and_redacted_thinking() {
    let body = anthropic_sse(&[
        A_START,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{}}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[]}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"Found it."}}"#,
        r#"{"type":"content_block_stop","index":3}"#,
        r#"{"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_9","name":"count","input":{}}}"#,
        r#"{"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{\"n\":1}"}}"#,
        r#"{"type":"content_block_stop","index":4}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
        r#"{"type":"message_stop"}"#,
    ]);
    pieces_land_on_their_blocks(Provider::Anthropic, "claude-sonnet-4-5", &body);
}

#[test]
fn openai_piece_indices_with_an_empty_content_then_a_call() {
    let body = data_only(&[
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"think "}}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"reasoning_content":"more"}}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"count","arguments":"{\"n\":1}"}}]}}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"content":" there"}}]}"#,
        r#"{"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]);
    pieces_land_on_their_blocks(Provider::OpenAi, "gpt-4o", &body);
}

/// The same events with the members the decoder's shortcut for text deltas
/// looks for written with an escape (`"t\u0079pe"` is `"type"`): the shortcut
/// refuses them, so the general reader decodes them.
fn without_shortcut(stream: &str) -> String {
    stream
        .replace(
            r#""type":"content_block_delta""#,
            r#""t\u0079pe":"content_block_delta""#,
        )
        .replace(r#""choices":"#, r#""ch\u006fices":"#)
}

#[test]
fn the_text_delta_shortcut_changes_nothing() {
    // Whole streams: the same pieces and the same message, in any split.
    for c in cases() {
        let general = without_shortcut(&c.stream);
        if c.api == Provider::Anthropic || c.api == Provider::OpenAi {
            assert_ne!(
                general,
                c.stream,
                "{}: the rewrite must apply",
                c.api.name()
            );
        }
        for size in [1, 7, 64, usize::MAX] {
            let split = |s: &str| -> Vec<Vec<u8>> {
                s.as_bytes()
                    .chunks(size.min(s.len()))
                    .map(<[u8]>::to_vec)
                    .collect()
            };
            let (a, b) = (split(&c.stream), split(&general));
            let a: Vec<&[u8]> = a.iter().map(Vec::as_slice).collect();
            let b: Vec<&[u8]> = b.iter().map(Vec::as_slice).collect();
            assert_eq!(
                run(c.api, c.provider, c.model, &a),
                run(c.api, c.provider, c.model, &b),
                "{} split {size}",
                c.api.name()
            );
        }
    }
    // A long text, escapes and a surrogate pair split over two deltas.
    let mut datas = vec![
        A_START.to_string(),
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#
            .into(),
    ];
    for i in 0..300 {
        datas.push(format!(
            r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"w{i}\n\t\\ \"q\" \u00e9 "}}}}"#
        ));
    }
    datas.push(
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud83d"}}"#
            .into(),
    );
    datas.push(
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ude00"}}"#
            .into(),
    );
    datas.push(r#"{"type":"content_block_stop","index":0}"#.into());
    datas.push(r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#.into());
    datas.push(r#"{"type":"message_stop"}"#.into());
    let refs: Vec<&str> = datas.iter().map(String::as_str).collect();
    let fast = anthropic_sse(&refs);
    let general = without_shortcut(&fast);
    let (pieces, text) = run(Provider::Anthropic, "anthropic", "m", &[fast.as_bytes()]);
    assert_eq!(
        pieces.len(),
        301 + 2,
        "one piece per delta (the pair comes as one) and usage twice"
    );
    assert_eq!(
        (pieces, text),
        run(Provider::Anthropic, "anthropic", "m", &[general.as_bytes()])
    );
}

#[test]
fn the_text_delta_shortcut_fails_as_the_general_reader_does() {
    let start =
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
    let think = r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#;
    let delta =
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#;
    let stop = r#"{"type":"content_block_stop","index":0}"#;
    for events in [
        vec![A_START, delta],              // never started
        vec![A_START, start, stop, delta], // after its stop
        vec![A_START, think, delta],       // a text delta for a thinking block
    ] {
        let fast = anthropic_sse(&events);
        let a = err_of(Provider::Anthropic, &[&fast]);
        let b = err_of(Provider::Anthropic, &[&without_shortcut(&fast)]);
        assert_eq!(a.code, ErrorCode::ProviderProtocol);
        assert_eq!(a.to_string(), b.to_string());
    }
}

/// A call seed numbers the made-up ids of a Gemini answer without call ids,
/// in the pieces and in the message alike; without it they are `gcall_0_<n>`.
#[test]
fn a_call_seed_numbers_made_up_gemini_call_ids() {
    for (seed, want) in [
        (None, ["gcall_0_0", "gcall_0_1"]),
        (Some(7), ["gcall_7_0", "gcall_7_1"]),
    ] {
        let mut d = StreamDecoder::new(Provider::Google, "google", "x");
        if let Some(s) = seed {
            d.set_call_seed(s);
        }
        let pieces = d.push(google_stream().as_bytes()).unwrap();
        let m: Value = serde_json::from_str(&d.finish_json().unwrap()).unwrap();
        check_pieces(&pieces, &m);
        let ids: Vec<&str> = m["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "toolCall")
            .map(|b| b["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, want, "seed {seed:?}");
        assert!(m["content"][2]["syntheticId"].as_bool().unwrap());
    }
    // A call with its own id keeps it.
    let body = data_only(&[
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"id":"own","name":"count","args":{}}}],"role":"model"},"finishReason":"STOP","index":0}]}"#,
    ]);
    let mut d = StreamDecoder::new(Provider::Google, "google", "x");
    d.set_call_seed(3);
    d.push(body.as_bytes()).unwrap();
    let m = d.finish().unwrap();
    assert_eq!(m["content"][0]["id"], "own");
}

/// An error event read with pieces before it is held for the next push; when
/// the body breaks instead, `failure()` still gives the provider's own error
/// (and Gemini's bare error JSON outside the framing is one too).
#[test]
fn failure_gives_the_streams_own_error_after_a_break() {
    let ev = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let body = ev(
        "message_start",
        json!({"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":1,"output_tokens":1}}}),
    ) + &ev(
        "content_block_start",
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
    ) + &ev(
        "content_block_delta",
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"par"}}),
    ) + &ev(
        "error",
        json!({"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}),
    );
    let mut d = StreamDecoder::new(Provider::Anthropic, "anthropic", "x");
    assert!(d.failure().is_none());
    let pieces = d.push(body.as_bytes()).unwrap();
    assert!(
        pieces
            .iter()
            .any(|p| matches!(p, StreamPiece::Text { text, .. } if text == "par")),
        "the text is given out first: {pieces:?}"
    );
    let e = d.failure().expect("the error event");
    assert_eq!(e.code, ErrorCode::ProviderRateLimited);
    assert_eq!(
        d.push(b"").unwrap_err().code,
        ErrorCode::ProviderRateLimited
    );

    // A stream that only stopped has no failure of its own.
    let mut d = StreamDecoder::new(Provider::Anthropic, "anthropic", "x");
    d.push(&body.as_bytes()[..body.find("event: error").unwrap()])
        .unwrap();
    assert!(d.failure().is_none());

    let g = data_only(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"index":0}]}"#,
    ]) + r#"{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}"#
        + "\n";
    let mut d = StreamDecoder::new(Provider::Google, "google", "x");
    d.push(g.as_bytes()).unwrap();
    assert_eq!(
        d.failure().expect("stray error").code,
        ErrorCode::ProviderBadRequest
    );
}

/// OpenAI Responses reasoning text (open-weight models): a reasoning item
/// whose `content` is `[{type: "reasoning_text", text}]`, streamed with
/// `response.reasoning_text.delta` / `.done`. It streams as thinking, is the
/// stored thinking, and goes back to Responses unchanged.
#[test]
fn responses_reasoning_text_streams_as_thinking_and_round_trips() {
    const RS: &str = r#"{"id":"rs_9","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"Need n+1. Then done."}]}"#;
    const MSG: &str = r#"{"id":"msg_9","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"42","annotations":[]}]}"#;
    let stream = |done_items: bool| {
        let mut evs: Vec<String> = vec![
            r#"{"type":"response.created","response":{"id":"resp_9","status":"in_progress","model":"gpt-oss-120b","output":[]}}"#.into(),
            r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_9","type":"reasoning","summary":[]}}"#.into(),
            r#"{"type":"response.content_part.added","item_id":"rs_9","output_index":0,"content_index":0,"part":{"type":"reasoning_text","text":""}}"#.into(),
            r#"{"type":"response.reasoning_text.delta","item_id":"rs_9","output_index":0,"content_index":0,"delta":"Need n+1. "}"#.into(),
            r#"{"type":"response.reasoning_text.delta","item_id":"rs_9","output_index":0,"content_index":0,"delta":"Then done."}"#.into(),
            r#"{"type":"response.reasoning_text.done","item_id":"rs_9","output_index":0,"content_index":0,"text":"Need n+1. Then done."}"#.into(),
        ];
        if done_items {
            evs.push(format!(
                r#"{{"type":"response.output_item.done","output_index":0,"item":{RS}}}"#
            ));
        }
        evs.extend([
            r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"msg_9","type":"message","status":"in_progress","role":"assistant","content":[]}}"#.to_string(),
            r#"{"type":"response.output_text.delta","item_id":"msg_9","output_index":1,"content_index":0,"delta":"42"}"#.into(),
        ]);
        if done_items {
            evs.push(format!(
                r#"{{"type":"response.output_item.done","output_index":1,"item":{MSG}}}"#
            ));
        }
        evs.push(r#"{"type":"response.completed","response":{"id":"resp_9","status":"completed","model":"gpt-oss-120b","usage":{"input_tokens":5,"output_tokens":9,"total_tokens":14}}}"#.into());
        let refs: Vec<&str> = evs.iter().map(String::as_str).collect();
        data_only(&refs)
    };
    for done_items in [true, false] {
        let (pieces, t) = run(
            Provider::Responses,
            "vllm",
            "gpt-oss-120b",
            &[stream(done_items).as_bytes()],
        );
        let m: Value = serde_json::from_str(&t).unwrap();
        check_pieces(&pieces, &m);
        assert!(
            pieces
                .iter()
                .any(|p| matches!(p, StreamPiece::Thinking { text, .. } if text == "Need n+1. "))
        );
        assert_eq!(m["content"][0]["type"], "thinking", "{m}");
        assert_eq!(m["content"][0]["thinking"], "Need n+1. Then done.");
        assert_eq!(m["content"][1]["text"], "42");
        // Streamed or not, the same answer.
        let body = format!(
            r#"{{"id":"resp_9","object":"response","status":"completed","model":"gpt-oss-120b","output":[{RS},{MSG}],"usage":{{"input_tokens":5,"output_tokens":9,"total_tokens":14}}}}"#
        );
        let whole = decode_response(Provider::Responses, "vllm", "gpt-oss-120b", &body).unwrap();
        assert_eq!(whole["content"][0]["thinking"], m["content"][0]["thinking"]);
        let sig: Value =
            serde_json::from_str(m["content"][0]["thinkingSignature"].as_str().unwrap()).unwrap();
        let want: Value = serde_json::from_str(RS).unwrap();
        assert_eq!(sig["content"], want["content"], "done_items {done_items}");
        // Back to Responses: the reasoning item as it came.
        let msgs = vec![
            json!({"role": "user", "content": "n?", "timestamp": 1}),
            m.clone(),
            json!({"role": "user", "content": "more", "timestamp": 2}),
        ];
        let opts = forkpoint_core::provider::RequestOptions {
            model: "gpt-oss-120b".into(),
            ..Default::default()
        };
        let req =
            forkpoint_core::provider::build_request(Provider::Responses, &opts, None, &msgs, &[])
                .unwrap();
        let body: Value = serde_json::from_str(&req.body.text()).unwrap();
        let item = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["type"] == "reasoning")
            .expect("the reasoning item is sent");
        assert_eq!(item["content"], want["content"], "{item}");
        assert_eq!(item["id"], "rs_9");
    }
}

/// Gemini (Vertex `streamFunctionCallArguments`): a call's arguments in
/// `functionCall.partialArgs` across chunks (`willContinue`), a string in
/// several pieces of one `jsonPath`. They stream as ToolArgs pieces that add
/// up to the whole `args`, which the stored call holds.
#[test]
fn gemini_partial_args_stream_as_tool_args() {
    let c = |parts: &str, extra: &str| {
        format!(
            r#"{{"candidates":[{{"content":{{"parts":{parts},"role":"model"}}{extra},"index":0}}],"modelVersion":"gemini-3-pro-preview","responseId":"r3"}}"#
        )
    };
    let chunks = [
        c(r#"[{"text":"Searching."}]"#, ""),
        c(
            r#"[{"functionCall":{"name":"search","partialArgs":[{"jsonPath":"$.query","stringValue":"forkpoint ","willContinue":true}],"willContinue":true},"thoughtSignature":"c2ln"}]"#,
            "",
        ),
        c(
            r#"[{"functionCall":{"partialArgs":[{"jsonPath":"$.query","stringValue":"durable \"streams\""}],"willContinue":true}}]"#,
            "",
        ),
        c(
            r#"[{"functionCall":{"partialArgs":[{"jsonPath":"$.limit","numberValue":5},{"jsonPath":"$.filters.recent","boolValue":true},{"jsonPath":"$.tags[0]","stringValue":"a"},{"jsonPath":"$.tags[1]","nullValue":"NULL_VALUE"}],"willContinue":true}}]"#,
            "",
        ),
        c(
            r#"[{"functionCall":{"name":"search","willContinue":false}}]"#,
            "",
        ),
        c(
            r#"[{"functionCall":{"name":"count","args":{"n":1}}}]"#,
            r#","finishReason":"STOP""#,
        ),
    ];
    let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let body = data_only(&refs);
    for split in [body.len(), 50, 7] {
        let mut d = StreamDecoder::new(Provider::Google, "google", "gemini-3-pro-preview");
        let mut pieces = Vec::new();
        for part in body.as_bytes().chunks(split) {
            pieces.extend(d.push(part).unwrap());
        }
        let m = d.finish().unwrap();
        check_pieces(&pieces, &m);
        let calls: Vec<&Value> = m["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "toolCall")
            .collect();
        assert_eq!(calls.len(), 2, "{m}");
        assert_eq!(calls[0]["name"], "search");
        assert_eq!(
            calls[0]["arguments"],
            json!({"query": "forkpoint durable \"streams\"", "limit": 5, "filters": {"recent": true}, "tags": ["a", null]})
        );
        assert_eq!(calls[0]["thoughtSignature"], "c2ln");
        assert!(
            calls[0].get("vendor").is_none(),
            "no stream members kept: {m}"
        );
        assert_eq!(calls[1]["arguments"], json!({"n": 1}));
        // The query streamed in more than one piece, before the call was whole.
        let arg_pieces: Vec<&str> = pieces
            .iter()
            .filter_map(|p| match p {
                StreamPiece::ToolArgs { index, text } if *index == 1 => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert!(arg_pieces.len() >= 3, "{arg_pieces:?}");
        assert_eq!(arg_pieces[0], r#"{"query":"forkpoint "#);
    }
    // A path the decoder does not read is a protocol error, not a panic.
    let bad = data_only(&[&c(
        r#"[{"functionCall":{"name":"s","partialArgs":[{"jsonPath":"$..x","stringValue":"v"}],"willContinue":true}}]"#,
        "",
    )]);
    let mut d = StreamDecoder::new(Provider::Google, "google", "x");
    let _ = d.push(bad.as_bytes());
    assert_eq!(
        d.failure().map(|e| e.code),
        Some(ErrorCode::ProviderProtocol)
    );
}
