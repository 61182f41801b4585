//! How long pushing a provider stream one event at a time takes (a check for
//! costs that grow with the stream): `cargo run --release --example stream_push`.
use forkpoint_core::normalize::Provider;
use forkpoint_core::provider::StreamDecoder;
use std::time::Instant;

fn main() {
    for n in [2_000usize, 4_000, 8_000] {
        let mut events = Vec::new();
        events.push(r#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#.to_string() + "\n\n");
        for i in 0..n {
            events.push(format!("data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{i:06} \"}},\"finish_reason\":null}}],\"obfuscation\":\"abc\"}}\n\n"));
        }
        events.push(r#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.to_string() + "\n\ndata: [DONE]\n\n");
        let t = Instant::now();
        let mut d = StreamDecoder::new(Provider::OpenAi, "openai", "gpt-4.1");
        let mut pieces = 0;
        for e in &events {
            pieces += d.push(e.as_bytes()).unwrap().len();
        }
        let m = d.finish_json().unwrap();
        println!(
            "openai {n} events one push each: {:?} ({pieces} pieces, {} bytes)",
            t.elapsed(),
            m.len()
        );
    }
}
