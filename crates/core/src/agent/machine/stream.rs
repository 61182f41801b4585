//! A model call streamed from the provider's own bytes (FORMAT.md §14.3): the
//! machine builds the request with the core's encoders, decodes the SSE body
//! as it arrives (each piece an event, durable as it comes) and stores the
//! answer the stream adds up to. The driver only moves bytes.

use serde_json::{Value, json};

use super::{AgentMachine, BlockKind, Phase, Reply};
use crate::normalize::Provider;
use crate::provider::bind;
use crate::provider::request;
use crate::provider::stream::{StreamDecoder, StreamPiece};
use crate::{Error, ErrorCode, Result};

/// The running call's stream.
pub(super) struct Wire {
    decoder: StreamDecoder,
    /// Texts removed from error messages (the driver's key).
    secrets: Vec<String>,
}

impl std::fmt::Debug for Wire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wire")
            .field("events", &self.decoder.events())
            .finish()
    }
}

impl AgentMachine {
    /// Bytes of the body of model call `ticket`'s stream, as they arrive (any
    /// split). Each piece they complete becomes an event. The answer's value
    /// is `null`, or `{retry, code, message}` when the stream failed: `retry`
    /// says the call may be started over (nothing had streamed and the error
    /// is transient); otherwise the call has ended as failed.
    pub fn stream_bytes(&mut self, ticket: u64, bytes: &[u8], now: f64) -> Result<Reply> {
        if self.closed {
            return Err(Error::new(ErrorCode::Closed, "the agent is closed"));
        }
        self.now = now;
        let r = self.feed_stream(ticket, bytes);
        self.flush();
        r
    }

    fn feed_stream(&mut self, ticket: u64, bytes: &[u8]) -> Result<Reply> {
        let Phase::Model { ticket: t, step } = self.phase else {
            return Ok(Reply::default()); // interrupted: dropped
        };
        if t != ticket {
            return Ok(Reply::default());
        }
        let Some(wire) = self.wire.as_mut() else {
            return Err(Error::invalid_input(
                "stream bytes came before ModelStream opened the call's stream",
            ));
        };
        match wire.decoder.push(bytes) {
            Ok(pieces) => {
                for p in pieces {
                    self.stream_piece(step, p)?;
                }
                Ok(Reply::default())
            }
            Err(e) => self.stream_failed(e),
        }
    }

    fn stream_piece(&mut self, step: u64, p: StreamPiece) -> Result<()> {
        match p {
            StreamPiece::Text { index, text } => {
                self.piece(step, index, BlockKind::Text, "", &text)
            }
            StreamPiece::Thinking { index, text } => {
                self.piece(step, index, BlockKind::Thinking, "", &text)
            }
            StreamPiece::ToolCall { index, name, .. } => {
                self.piece(step, index, BlockKind::ToolCall, &name, "")
            }
            StreamPiece::ToolArgs { index, text } => {
                self.piece(step, index, BlockKind::ToolCall, "", &text)
            }
            StreamPiece::Usage(_) => Ok(()),
        }
    }

    /// The stream failed with `e`: started over if nothing streamed and the
    /// error is transient, else the call ends as failed.
    fn stream_failed(&mut self, mut e: Error) -> Result<Reply> {
        if let Some(w) = &self.wire {
            for k in w.secrets.iter().filter(|k| k.len() >= 4) {
                e.message = e.message.replace(k.as_str(), "[redacted]");
            }
        }
        let delivered =
            !self.streamed.is_empty() || self.wire.as_ref().is_some_and(|w| w.decoder.delivered());
        let retry = !delivered
            && matches!(
                e.code,
                ErrorCode::ProviderUnavailable | ErrorCode::ProviderRateLimited
            );
        let value = json!({ "retry": retry, "code": e.code.as_str(), "message": e.message });
        self.wire = None;
        if !retry {
            self.model_failed_with(Some(e.code.as_str()), &e.message)?;
        }
        Ok(Reply {
            value: Some(value.to_string()),
            bookmark: None,
        })
    }

    /// `ModelStream`: the request for call `ticket` in wire format `api`, and
    /// a fresh decoder for its answer.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn open_stream(
        &mut self,
        ticket: u64,
        api: &str,
        provider: Option<&str>,
        model: &str,
        options: &Value,
        pricing: Option<Value>,
        secrets: Vec<String>,
    ) -> Result<Reply> {
        let step = match self.phase {
            Phase::Model { ticket: t, step } if t == ticket => step,
            _ => return Ok(Reply::default()), // interrupted: nothing to send
        };
        if !self.streamed.is_empty() {
            return Err(Error::invalid_input(
                "a model call that streamed content is not started over",
            ));
        }
        let p = Provider::parse(api)?;
        let opts = bind::request_options(model, options)?;
        let messages: Vec<&str> = self
            .messages
            .iter()
            .take(self.call_context)
            .map(|m| m.get())
            .collect();
        let tools: Vec<Value> = serde_json::from_str(&self.tool_defs())
            .map_err(|e| Error::internal(format!("tool definitions: {e}")))?;
        let req = request::build_request_cached(
            &mut self.request_cache,
            p,
            &opts,
            self.meta.system_prompt.as_deref(),
            &messages,
            &tools,
        )?;
        let target = (p.name().to_string(), model.to_string());
        if !req.report.steps.is_empty() && !self.converted_for.contains(&target) {
            self.emit(json!({
                "type": "request_converted",
                "channel": "monitor",
                "provider": p.name(),
                "model": model,
                "steps": req.report.steps,
            }))?;
            self.converted_for.push(target);
        }
        let provider = provider.unwrap_or(p.vendor());
        let mut decoder = StreamDecoder::new(p, provider, model);
        decoder.set_name_map(req.name_map.clone());
        // Made-up call ids (Gemini sends none) are unique across the turns.
        decoder.set_call_seed(step);
        if let Some(v) = pricing.filter(|v| !v.is_null()) {
            decoder.set_pricing(Some(bind::pricing(&v)?));
        }
        self.wire = Some(Wire { decoder, secrets });
        // The body is taken apart (`take_request_body`): its kept pieces are
        // the ones of the last request, which a driver sends as they are.
        let out = json!({
            "path": req.path,
            "headers": bind::headers_json(&req),
            "bodyLength": req.body.len(),
        });
        self.request_body = Some(req.body);
        Ok(Reply {
            value: Some(out.to_string()),
            bookmark: None,
        })
    }

    /// `ModelStreamEnd`: the answer the stream adds up to, stored. An `error`
    /// (the body's reading broke) fails the call unless the stream had already
    /// said it was complete.
    pub(super) fn end_stream(&mut self, ticket: u64, error: Option<String>) -> Result<Reply> {
        if !matches!(self.phase, Phase::Model { ticket: t, .. } if t == ticket) {
            return Ok(Reply::default());
        }
        // A body that broke after the stream's last event (the connection
        // reset before the HTTP body's own end) lost nothing: the answer is whole.
        let complete = self.wire.as_ref().is_some_and(|w| w.decoder.complete());
        if let Some(message) = error.filter(|_| !complete) {
            // An error the stream reported before it broke is the one that
            // counts (the provider's own code), not the broken connection.
            let e = self
                .wire
                .as_mut()
                .and_then(|w| w.decoder.failure())
                .unwrap_or_else(|| Error::new(ErrorCode::ProviderUnavailable, message));
            return self.stream_failed(e);
        }
        let Some(mut wire) = self.wire.take() else {
            return Err(Error::invalid_input(
                "ModelStreamEnd came before ModelStream opened the call's stream",
            ));
        };
        match wire.decoder.finish_json() {
            Ok(message) => self.replied(&message),
            Err(e) => {
                self.wire = Some(wire);
                self.stream_failed(e)
            }
        }
    }
}
