//! Where a streamed burst's time goes, on the file store: one `stream_bytes`
//! with N OpenAI Chat events (decode, events, write, fsync), and the decoder
//! alone. `cargo run --release -p forkpoint-fs --example stream_burst -- 5000`
use forkpoint_core::agent::machine::{Command, Input, ToolSpec};
use forkpoint_core::agent::meta::AgentMeta;
use forkpoint_core::agent::runtime::AgentRuntime;
use forkpoint_fs::FileStorage;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().unwrap())
        .unwrap_or(5000);
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileStorage::new(dir.path()));
    let meta: AgentMeta = serde_json::from_value(json!({"agentId":"b","templateId":null,"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z","lineage":[],"configVersion":"forkpoint-1","model":{"provider":"openai","model":"gpt-4.1","api":"openai-completions"},"tools":[],"permission":{"mode":"auto"},"systemPrompt":null,"metadata":{}})).unwrap();
    pollster::block_on(async {
        let rt = AgentRuntime::create(store.clone(), meta, Vec::<ToolSpec>::new(), 1, 1.0)
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
            panic!()
        };
        rt.handle(
            Input::from_json(
                &json!({"kind":"modelStream","ticket":ticket,"api":"openai","model":"gpt-4.1"})
                    .to_string(),
            )
            .unwrap(),
            3.0,
        )
        .await
        .unwrap();
        let mut body = String::new();
        for i in 0..n {
            body += &format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"w{i:06} \"}},\"finish_reason\":null}}],\"obfuscation\":\"abcdefgh\"}}\n\n"
            );
        }
        let t = Instant::now();
        rt.stream_bytes(ticket, body.as_bytes(), 4.0).await.unwrap();
        println!(
            "{n} events in one stream_bytes ({} KB): {:?}",
            body.len() / 1024,
            t.elapsed()
        );
        let mut body2 = String::new();
        for i in 0..n {
            body2 += &format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"x{i:06} \"}},\"finish_reason\":null}}],\"obfuscation\":\"abcdefgh\"}}\n\n"
            );
        }
        let t = Instant::now();
        let mut d = forkpoint_core::provider::StreamDecoder::new(
            forkpoint_core::normalize::Provider::OpenAi,
            "openai",
            "gpt-4.1",
        );
        let pieces = d.push(body2.as_bytes()).unwrap();
        println!("decoder alone: {:?} ({} pieces)", t.elapsed(), pieces.len());
        let t = Instant::now();
        rt.stream_bytes(ticket, body2.as_bytes(), 5.0)
            .await
            .unwrap();
        println!("again: {:?}", t.elapsed());
    });
}
