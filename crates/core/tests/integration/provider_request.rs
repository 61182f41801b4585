//! Streaming requests (built with the `toProvider` encoders, no second
//! mapping), HTTP failures and retry waits.

use forkpoint_core::ErrorCode;
use forkpoint_core::normalize::{self, J, Provider};
use forkpoint_core::provider::{
    RequestOptions, StreamDecoder, ThinkingOption, auth_header, build_request,
    build_request_cached, build_request_raw, default_base_url, http_failure, retry_wait_ms,
    retry_wait_ms_at,
};
use serde_json::{Value, json};

fn conversation() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "How many? é", "timestamp": 1}),
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Counting."},
            {"type": "toolCall", "id": "call_1", "name": "count", "arguments": {"n": 41}}
        ], "api": "openai-completions", "provider": "openai", "model": "gpt-4o", "stopReason": "toolUse"}),
        json!({"role": "toolResult", "toolCallId": "call_1", "toolName": "count", "content": [{"type": "text", "text": "42"}], "isError": false}),
    ]
}

fn tools() -> Vec<Value> {
    vec![
        json!({"name": "count", "description": "Counts.", "inputSchema": {"type": "object", "properties": {"n": {"type": "number"}}}}),
    ]
}

fn opts(model: &str) -> RequestOptions {
    RequestOptions {
        model: model.into(),
        ..Default::default()
    }
}

/// The body without what build_request adds: what toProvider gives.
fn without(body: &str, keys: &[&str]) -> J {
    let mut b = J::parse(body).unwrap();
    for k in keys {
        b.remove(k);
    }
    b
}

#[test]
fn bodies_are_what_to_provider_gives_plus_the_stream_flags() {
    let msgs = serde_json::to_string(&conversation()).unwrap();
    let to_opts = |model: &str| {
        json!({"model": model, "system": "Be brief.", "tools": [{"name": "count", "description": "Counts.", "parameters": {"type": "object", "properties": {"n": {"type": "number"}}}}]})
            .to_string()
    };
    for (api, model, added, path) in [
        (
            Provider::Anthropic,
            "claude-sonnet-4-5",
            &["model", "max_tokens", "stream"][..],
            "/v1/messages",
        ),
        (
            Provider::OpenAi,
            "gpt-4o",
            &["model", "stream", "stream_options"][..],
            "/chat/completions",
        ),
        (
            Provider::Responses,
            "gpt-5",
            &["model", "stream"][..],
            "/responses",
        ),
        (
            Provider::Google,
            "gemini-2.5-flash",
            &[][..],
            "/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        ),
    ] {
        let r = build_request(
            api,
            &opts(model),
            Some("Be brief."),
            &conversation(),
            &tools(),
        )
        .unwrap();
        assert_eq!(r.path, path);
        let expected = normalize::to_provider(&msgs, api.name(), Some(&to_opts(model))).unwrap();
        let expected = J::parse(&expected)
            .unwrap()
            .get("request")
            .cloned()
            .unwrap();
        assert_eq!(without(&r.body.text(), added), expected, "{}", api.name());
        let body: Value = serde_json::from_str(&r.body.text()).unwrap();
        let header = |k: &str| {
            r.headers
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("content-type"), Some("application/json"));
        assert_eq!(header("accept"), Some("text/event-stream"));
        match api {
            Provider::Anthropic => {
                assert_eq!(body["max_tokens"], 8192);
                assert_eq!(body["stream"], true);
                assert_eq!(header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(body["system"], "Be brief.");
            }
            Provider::OpenAi => {
                assert_eq!(body["stream_options"], json!({"include_usage": true}));
                assert_eq!(body["model"], "gpt-4o");
            }
            Provider::Responses => {
                assert_eq!(body["stream"], true);
                assert!(body.get("include").is_none() && body.get("store").is_none());
            }
            Provider::Google => {
                assert!(body.get("model").is_none() && body.get("stream").is_none());
                assert_eq!(body["systemInstruction"]["parts"][0]["text"], "Be brief.");
            }
        }
        assert!(header("authorization").is_none() && header("x-api-key").is_none());
    }
}

#[test]
fn limits_thinking_and_bad_options() {
    let think = |api, t: ThinkingOption, max: Option<u32>| {
        let o = RequestOptions {
            model: "m-1".into(),
            max_tokens: max,
            temperature: Some(0.5),
            thinking: Some(t),
        };
        let r = build_request(api, &o, None, &conversation(), &[]).unwrap();
        serde_json::from_str::<Value>(&r.body.text()).unwrap()
    };
    let b = think(Provider::Anthropic, ThinkingOption::Budget(10_000), None);
    assert_eq!(
        b["thinking"],
        json!({"type": "enabled", "budget_tokens": 10000})
    );
    assert!(b["max_tokens"].as_u64().unwrap() > 10_000);
    assert_eq!(b["temperature"], 0.5);
    let b = think(
        Provider::Anthropic,
        ThinkingOption::Effort("low".into()),
        Some(4000),
    );
    assert_eq!(
        (
            b["thinking"]["budget_tokens"].as_u64(),
            b["max_tokens"].as_u64()
        ),
        (Some(2048), Some(4000))
    );
    assert!(
        think(Provider::Anthropic, ThinkingOption::Off, None)
            .get("thinking")
            .is_none()
    );
    let b = think(Provider::OpenAi, ThinkingOption::Budget(20_000), Some(100));
    assert_eq!(
        (
            b["reasoning_effort"].as_str(),
            b["max_completion_tokens"].as_u64()
        ),
        (Some("high"), Some(100))
    );
    let b = think(
        Provider::Responses,
        ThinkingOption::Effort("medium".into()),
        Some(100),
    );
    assert_eq!(
        b["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(b["store"], false);
    assert_eq!(b["max_output_tokens"], 100);
    let b = think(Provider::Google, ThinkingOption::Budget(512), Some(100));
    assert_eq!(
        b["generationConfig"],
        json!({"maxOutputTokens": 100, "temperature": 0.5, "thinkingConfig": {"thinkingBudget": 512, "includeThoughts": true}})
    );
    let b = think(Provider::Google, ThinkingOption::Off, None);
    assert_eq!(
        b["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 0})
    );

    for bad in ["", "../x", "m?alt=json", "a b"] {
        let e = build_request(Provider::Google, &opts(bad), None, &[], &[]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{bad:?}");
    }
    let o = RequestOptions {
        thinking: Some(ThinkingOption::Effort("huge".into())),
        ..opts("m")
    };
    assert_eq!(
        build_request(Provider::Anthropic, &o, None, &[], &[])
            .unwrap_err()
            .code,
        ErrorCode::InvalidInput
    );
    assert_eq!(
        build_request(
            Provider::OpenAi,
            &opts("m"),
            None,
            &[],
            &[json!({"description": "no name"})]
        )
        .unwrap_err()
        .code,
        ErrorCode::InvalidInput
    );
    // Gemini model ids may be given as models/…
    let r = build_request(
        Provider::Google,
        &opts("models/gemini-2.5-pro"),
        None,
        &[],
        &[],
    )
    .unwrap();
    assert_eq!(
        r.path,
        "/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
}

#[test]
fn a_streamed_answer_is_replayed_byte_for_byte() {
    // An Anthropic answer with thinking and a signature, streamed…
    let stream = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_9\",\"model\":\"claude-opus-4-1\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Hmm \\u00e9\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"SIG+/=\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"count\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"n\\\": 1.50}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let mut d = StreamDecoder::new(Provider::Anthropic, "anthropic", "claude-opus-4-1");
    d.push(stream.as_bytes()).unwrap();
    let answer = d.finish_json().unwrap();
    // …then sent back in the next request, kept as text: the same bytes.
    let msgs = [
        r#"{"role":"user","content":"count"}"#,
        answer.as_str(),
        r#"{"role":"toolResult","toolCallId":"toolu_1","toolName":"count","content":[{"type":"text","text":"2"}],"isError":false}"#,
    ];
    let r = build_request_raw(
        Provider::Anthropic,
        &opts("claude-opus-4-1"),
        None,
        &msgs,
        &[],
    )
    .unwrap();
    assert!(
        r.body.text().contains(r#"{"role":"assistant","content":[{"type":"thinking","thinking":"Hmm \u00e9","signature":"SIG+/="},{"type":"tool_use","id":"toolu_1","name":"count","input":{"n":1.50}}]}"#),
        "{}",
        r.body
    );
    // Through serde_json values the signature and the block order survive too.
    let values: Vec<Value> = msgs
        .iter()
        .map(|m| serde_json::from_str(m).unwrap())
        .collect();
    let r = build_request(
        Provider::Anthropic,
        &opts("claude-opus-4-1"),
        None,
        &values,
        &[],
    )
    .unwrap();
    assert!(
        r.body.text().contains(r#""signature":"SIG+/=""#),
        "{}",
        r.body
    );
}

#[test]
fn base_urls_and_keys() {
    assert_eq!(
        default_base_url(Provider::Anthropic),
        "https://api.anthropic.com"
    );
    assert_eq!(
        default_base_url(Provider::Responses),
        "https://api.openai.com/v1"
    );
    assert_eq!(
        default_base_url(Provider::Google),
        "https://generativelanguage.googleapis.com/v1beta"
    );
    assert_eq!(
        auth_header(Provider::Anthropic, "k"),
        ("x-api-key".into(), "k".into())
    );
    assert_eq!(
        auth_header(Provider::OpenAi, "k"),
        ("authorization".into(), "Bearer k".into())
    );
    assert_eq!(
        auth_header(Provider::Google, "k"),
        ("x-goog-api-key".into(), "k".into())
    );
}

#[test]
fn http_failures() {
    let f = http_failure(
        Provider::Anthropic,
        401,
        br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        None,
    );
    assert_eq!(
        (f.error.code, f.retryable),
        (ErrorCode::ProviderAuth, false)
    );
    assert!(
        f.error.message.contains("invalid x-api-key") && f.error.message.contains("401"),
        "{}",
        f.error
    );
    let f = http_failure(
        Provider::Anthropic,
        429,
        br#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#,
        Some("20"),
    );
    assert_eq!(
        (f.error.code, f.retryable),
        (ErrorCode::ProviderRateLimited, true)
    );
    assert!(f.error.message.contains("retry after 20 s"), "{}", f.error);
    let f = http_failure(
        Provider::OpenAi,
        429,
        br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
        None,
    );
    assert_eq!(
        (f.error.code, f.retryable),
        (ErrorCode::ProviderRateLimited, false)
    );
    let f = http_failure(
        Provider::Anthropic,
        529,
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        None,
    );
    assert_eq!(
        (f.error.code, f.retryable),
        (ErrorCode::ProviderUnavailable, true)
    );
    let f = http_failure(
        Provider::OpenAi,
        502,
        b"<html><body>Bad gateway</body></html>",
        None,
    );
    assert_eq!(
        (f.error.code, f.retryable),
        (ErrorCode::ProviderUnavailable, true)
    );
    assert!(f.error.message.contains("Bad gateway"));
    let f = http_failure(
        Provider::Google,
        400,
        br#"[{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}]"#,
        None,
    );
    assert_eq!(
        (f.error.code, f.retryable),
        (ErrorCode::ProviderAuth, false),
        "{}",
        f.error
    );
    let f = http_failure(
        Provider::Google,
        400,
        br#"{"error":{"code":400,"message":"Invalid JSON payload received.","status":"INVALID_ARGUMENT"}}"#,
        None,
    );
    assert_eq!(f.error.code, ErrorCode::ProviderBadRequest);
    assert!(f.error.message.contains("Invalid JSON payload"));
    // the key never shows, even when the provider quotes it
    let key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {key}.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    let f = http_failure(Provider::OpenAi, 401, body.as_bytes(), None);
    assert_eq!(f.error.code, ErrorCode::ProviderAuth);
    assert!(
        !f.error.message.contains(key) && f.error.message.contains("Incorrect API key"),
        "{}",
        f.error
    );
    for (status, code, retry) in [
        (404, ErrorCode::ProviderBadRequest, false),
        (413, ErrorCode::ProviderBadRequest, false),
        (422, ErrorCode::ProviderBadRequest, false),
        (403, ErrorCode::ProviderAuth, false),
        (408, ErrorCode::ProviderUnavailable, true),
        (409, ErrorCode::ProviderUnavailable, true),
        (500, ErrorCode::ProviderUnavailable, true),
        (503, ErrorCode::ProviderUnavailable, true),
    ] {
        let f = http_failure(Provider::Responses, status, b"", None);
        assert_eq!((f.error.code, f.retryable), (code, retry), "{status}");
        assert!(f.error.message.contains("no error message"));
    }
}

#[test]
fn retry_waits_grow_jittered_and_capped() {
    let mut last = 0;
    for attempt in 0..12 {
        let lo = retry_wait_ms(attempt, None, 0.0);
        let hi = retry_wait_ms(attempt, None, 1.0);
        assert!(
            lo <= hi && hi <= 30_000 && lo >= last,
            "{attempt}: {lo} {hi}"
        );
        assert!(hi <= 2 * lo);
        last = lo;
    }
    assert_eq!(retry_wait_ms(11, None, 1.0), 30_000);
    assert_eq!(retry_wait_ms(0, Some("7"), 0.3), 7_000);
    assert_eq!(retry_wait_ms(0, Some("100000"), 0.3), 60_000);
    assert_eq!(retry_wait_ms_at(2, None, Some("1200"), 0.3, None), 1_200);
    assert_eq!(
        retry_wait_ms_at(
            0,
            Some("Wed, 21 Oct 2015 07:28:30 GMT"),
            None,
            0.0,
            Some(1_445_412_480_000.0)
        ),
        30_000
    );
    // a date without the current time: the backoff
    assert_eq!(
        retry_wait_ms(0, Some("Wed, 21 Oct 2015 07:28:30 GMT"), 0.0),
        250
    );
}

/// Two Gemini turns whose answers had no call ids both hold the made-up id
/// `gcall_0_0`: the second call is renamed, and its result with it (the result
/// answers the most recent call carrying its id), for every target.
#[test]
fn a_renamed_repeated_made_up_call_id_renames_its_result() {
    let call = |n: u64| {
        json!({"role": "assistant", "content": [
            {"type": "toolCall", "id": "gcall_0_0", "name": "count", "arguments": {"n": n}, "syntheticId": true}
        ], "api": "google-generative-ai", "provider": "google", "model": "gemini-2.5-flash", "stopReason": "toolUse"})
    };
    let result = |text: &str| json!({"role": "toolResult", "toolCallId": "gcall_0_0", "toolName": "count", "content": [{"type": "text", "text": text}], "isError": false});
    let msgs = vec![
        json!({"role": "user", "content": "go", "timestamp": 1}),
        call(1),
        result("two"),
        call(10),
        result("eleven"),
    ];
    for (api, model) in [
        (Provider::Anthropic, "claude-sonnet-4-5"),
        (Provider::OpenAi, "gpt-4o"),
        (Provider::Responses, "gpt-5"),
        (Provider::Google, "gemini-3-pro-preview"),
        (Provider::Google, "gemini-2.5-flash"),
    ] {
        let req = build_request(api, &opts(model), None, &msgs, &tools()).unwrap();
        let body: Value = serde_json::from_str(&req.body.text()).unwrap();
        let codes: Vec<&str> = req.report.steps.iter().map(|s| s.code.as_str()).collect();
        assert!(
            !codes
                .iter()
                .any(|c| c.contains("dropped") || c.contains("filled")),
            "{api:?}: {codes:?}"
        );
        // (call id, result id, result text) in request order.
        let (calls, results): (Vec<String>, Vec<(String, String)>) = match api {
            Provider::Anthropic => {
                let blocks: Vec<Value> = body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                    .collect();
                (
                    blocks
                        .iter()
                        .filter(|b| b["type"] == "tool_use")
                        .map(|b| b["id"].as_str().unwrap().to_string())
                        .collect(),
                    blocks
                        .iter()
                        .filter(|b| b["type"] == "tool_result")
                        .map(|b| {
                            (
                                b["tool_use_id"].as_str().unwrap().to_string(),
                                b["content"].to_string(),
                            )
                        })
                        .collect(),
                )
            }
            Provider::OpenAi => {
                let m = body["messages"].as_array().unwrap();
                (
                    m.iter()
                        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
                        .map(|c| c["id"].as_str().unwrap().to_string())
                        .collect(),
                    m.iter()
                        .filter(|m| m["role"] == "tool")
                        .map(|m| {
                            (
                                m["tool_call_id"].as_str().unwrap().to_string(),
                                m["content"].to_string(),
                            )
                        })
                        .collect(),
                )
            }
            Provider::Responses => {
                let m = body["input"].as_array().unwrap();
                (
                    m.iter()
                        .filter(|i| i["type"] == "function_call")
                        .map(|i| i["call_id"].as_str().unwrap().to_string())
                        .collect(),
                    m.iter()
                        .filter(|i| i["type"] == "function_call_output")
                        .map(|i| {
                            (
                                i["call_id"].as_str().unwrap().to_string(),
                                i["output"].to_string(),
                            )
                        })
                        .collect(),
                )
            }
            Provider::Google => {
                let parts: Vec<Value> = body["contents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
                    .collect();
                (
                    parts
                        .iter()
                        .filter_map(|p| p.get("functionCall"))
                        .map(|c| c["id"].as_str().unwrap_or("-").to_string())
                        .collect(),
                    parts
                        .iter()
                        .filter_map(|p| p.get("functionResponse"))
                        .map(|r| {
                            (
                                r["id"].as_str().unwrap_or("-").to_string(),
                                r["response"].to_string(),
                            )
                        })
                        .collect(),
                )
            }
        };
        assert_eq!(calls.len(), 2, "{api:?} {model}: {body}");
        assert_eq!(results.len(), 2, "{api:?} {model}: {body}");
        assert!(
            results[0].1.contains("two") && results[1].1.contains("eleven"),
            "{api:?}: {results:?}"
        );
        if calls[0] != "-" {
            assert_ne!(calls[0], calls[1], "{api:?}: the repeated id is renamed");
            assert_eq!(results[0].0, calls[0], "{api:?}");
            assert_eq!(
                results[1].0, calls[1],
                "{api:?}: the result follows its renamed call"
            );
        }
    }
}

#[test]
fn anthropic_thinking_requests_meet_the_final_turn_rule() {
    // conversation() is an OpenAI tool loop: its final turn has no thinking
    // block, which Anthropic rejects when thinking is on (FORMAT.md §15.4, 14).
    let req = |t: Option<ThinkingOption>| {
        let o = RequestOptions {
            model: "claude-sonnet-4-5".into(),
            thinking: t,
            ..Default::default()
        };
        build_request(Provider::Anthropic, &o, None, &conversation(), &tools()).unwrap()
    };
    let on = req(Some(ThinkingOption::Budget(4096)));
    let body: Value = serde_json::from_str(&on.body.text()).unwrap();
    assert_eq!(body["thinking"]["type"], "enabled");
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1]["content"][1]["type"], "text");
    assert!(
        msgs[1]["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("call_1")
    );
    assert_eq!(msgs[2]["content"][0]["type"], "text");
    assert!(on.report.has("tool_calls_to_text"));
    assert!(!body.to_string().contains("tool_use"));
    // Thinking off (or not given): the calls stay calls.
    for t in [Some(ThinkingOption::Off), None] {
        let off = req(t);
        let body: Value = serde_json::from_str(&off.body.text()).unwrap();
        assert_eq!(body["messages"][1]["content"][1]["type"], "tool_use");
        assert!(!off.report.has("tool_calls_to_text"));
    }
    // Other APIs are not concerned.
    let o = RequestOptions {
        model: "gpt-4o".into(),
        thinking: Some(ThinkingOption::Budget(4096)),
        ..Default::default()
    };
    let r = build_request(Provider::OpenAi, &o, None, &conversation(), &tools()).unwrap();
    assert!(!r.report.has("tool_calls_to_text"));
}

#[test]
fn cached_requests_of_a_growing_conversation_are_the_raw_ones() {
    // An agent's steps with thinking on (each answer starts with a signed
    // thinking block): each request is the one before plus the answer and its results.
    let mut msgs: Vec<String> = vec![r#"{"role":"user","content":"go"}"#.into()];
    let o = RequestOptions {
        model: "m-1".into(),
        max_tokens: Some(1000),
        thinking: Some(ThinkingOption::Effort("low".into())),
        ..Default::default()
    };
    for api in Provider::ALL {
        let mut cache = normalize::incremental::RequestCache::new();
        cache.lean = true;
        msgs.truncate(1);
        for t in 0..12 {
            let texts: Vec<&str> = msgs.iter().map(String::as_str).collect();
            let want = build_request_raw(api, &o, Some("sys"), &texts, &tools()).unwrap();
            let got =
                build_request_cached(&mut cache, api, &o, Some("sys"), &texts, &tools()).unwrap();
            assert_eq!(got.body.text(), want.body.text(), "{} step {t}", api.name());
            assert_eq!(got.path, want.path);
            assert_eq!(got.id_map, want.id_map);
            assert_eq!(got.name_map, want.name_map);
            msgs.push(format!(
                r#"{{"role":"assistant","api":"anthropic-messages","provider":"anthropic","model":"m-1","stopReason":"toolUse","content":[{{"type":"thinking","thinking":"plan {t}","thinkingSignature":"sig{t}"}},{{"type":"text","text":"t{t}"}},{{"type":"toolCall","id":"c.{t}","name":"count","arguments":{{"n":{t}}}}}]}}"#
            ));
            msgs.push(format!(
                r#"{{"role":"toolResult","toolCallId":"c.{t}","toolName":"count","content":[{{"type":"text","text":"{t}"}}],"isError":false}}"#
            ));
        }
        assert!(cache.hits >= 10, "{}: {} hits", api.name(), cache.hits);
    }
}
