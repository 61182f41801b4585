//! Prints `ts-types/index.d.ts`: TypeScript declarations of the core's data types.
//! Run with `cargo run -p forkpoint-core --features ts --example gen_types`.

#[cfg(feature = "ts")]
fn main() {
    use forkpoint_core::schema::*;
    use forkpoint_core::types::*;
    use ts_rs::{Config, TS};

    let cfg = Config::new().with_large_int("number");
    let mut out = String::from(
        "// Generated from the Rust types of crates/core by `npm run gen:types`. Do not edit.\n\
         // Numbers that are u64 in Rust are plain numbers here (exact below 2^53).\n\n",
    );
    macro_rules! emit {
        ($($t:ty),* $(,)?) => {$(
            if let Some(doc) = <$t as TS>::docs() {
                out.push_str(&doc);
            }
            out.push_str("export ");
            out.push_str(&<$t as TS>::decl(&cfg));
            out.push_str("\n\n");
        )*};
    }
    emit!(
        forkpoint_core::ErrorCode,
        forkpoint_core::Error,
        LoadOptions,
        LazyOptions,
        LimitOptions,
        SkippedLine,
        TornTail,
        ModelRef,
        SessionMetadata,
        TreeNode,
        TreeRun,
        RunLabel,
        SessionInfo,
        StoredSessionInfo,
        Checkpoint,
        BatchInfo,
        LazyMetadata,
        Durability,
        EventLogOptions,
        EventLogInfo,
        forkpoint_core::events::Channel,
        forkpoint_core::events::Bookmark,
        forkpoint_core::events::EventFilter,
        WriterOptions,
        WriterOpenReport,
        TextContent,
        ThinkingContent,
        ImageContent,
        ToolCall,
        UserBlock,
        AssistantBlock,
        UserContent,
        Cost,
        Usage,
        StopReason,
        UserMessage,
        AssistantMessage,
        ToolResultMessage,
        BashExecutionMessage,
        CustomMessage,
        BranchSummaryMessage,
        CompactionSummaryMessage,
        AgentMessage,
        LlmMessage,
        SessionHeader,
        EntryBase,
        MessageEntry,
        CompactionEntry,
        BranchSummaryEntry,
        ModelChangeEntry,
        ThinkingLevelChangeEntry,
        CustomEntry,
        CustomMessageEntry,
        LabelEntry,
        SessionInfoEntry,
        LeafEntry,
        SessionEntry,
        SessionContext,
        forkpoint_core::normalize::types::ProviderName,
        forkpoint_core::normalize::types::NormalizedText,
        forkpoint_core::normalize::types::NormalizedThinking,
        forkpoint_core::normalize::types::NormalizedImage,
        forkpoint_core::normalize::types::NormalizedDocument,
        forkpoint_core::normalize::types::NormalizedToolCall,
        forkpoint_core::normalize::types::RawBlock,
        forkpoint_core::normalize::types::NormalizedBlock,
        forkpoint_core::normalize::types::NormalizedContent,
        forkpoint_core::normalize::types::OriginalJson,
        forkpoint_core::normalize::types::NormalizedUserMessage,
        forkpoint_core::normalize::types::NormalizedAssistantMessage,
        forkpoint_core::normalize::types::NormalizedToolResultMessage,
        forkpoint_core::normalize::types::NormalizedSystemMessage,
        forkpoint_core::normalize::types::NormalizedUnknownMessage,
        forkpoint_core::normalize::types::NormalizedMessage,
        forkpoint_core::normalize::types::ToolDeclaration,
        forkpoint_core::normalize::types::NormalizedConversation,
        forkpoint_core::normalize::types::SystemOriginal,
        forkpoint_core::normalize::types::ToProviderOptions,
        forkpoint_core::normalize::types::MigrationProgress,
        forkpoint_core::normalize::import::ImportSummary,
        forkpoint_core::normalize::ConversionStep,
        forkpoint_core::normalize::CompatibilityReport,
        forkpoint_core::agent::Breakpoint,
        forkpoint_core::agent::ToolCallState,
        forkpoint_core::agent::AuditEntry,
        forkpoint_core::agent::ToolCallRecord,
        forkpoint_core::agent::SnapshotInfo,
        forkpoint_core::agent::CheckpointInfo,
        forkpoint_core::agent::SealedCall,
        forkpoint_core::agent::meta::ModelRef,
        forkpoint_core::agent::meta::PermissionMode,
        forkpoint_core::agent::meta::Permission,
        forkpoint_core::agent::meta::ForkedFrom,
        forkpoint_core::agent::meta::AgentMeta,
        forkpoint_core::agent::meta::MetaChanges,
        forkpoint_core::agent::machine::ToolSpec,
        forkpoint_core::agent::machine::DeltaKind,
        forkpoint_core::agent::machine::ModelDelta,
        forkpoint_core::agent_events::AgentState,
        forkpoint_core::agent_events::ResumeStrategy,
        forkpoint_core::agent_events::DoneReason,
        forkpoint_core::agent_events::PermissionDecision,
        forkpoint_core::agent_events::ErrorSeverity,
        forkpoint_core::agent_events::ErrorPhase,
        forkpoint_core::agent_events::TodoStatus,
        forkpoint_core::agent_events::TodoItem,
        forkpoint_core::agent_events::ApprovalInfo,
        forkpoint_core::agent_events::ToolCallSnapshot,
        forkpoint_core::agent_events::ResumedSealedCall,
        forkpoint_core::agent_events::OpenToolCall,
        forkpoint_core::agent_events::ThinkChunkStartEvent,
        forkpoint_core::agent_events::ThinkChunkEvent,
        forkpoint_core::agent_events::ThinkChunkEndEvent,
        forkpoint_core::agent_events::TextChunkStartEvent,
        forkpoint_core::agent_events::TextChunkEvent,
        forkpoint_core::agent_events::TextChunkEndEvent,
        forkpoint_core::agent_events::ToolInputChunkStartEvent,
        forkpoint_core::agent_events::ToolInputChunkEvent,
        forkpoint_core::agent_events::ToolInputChunkEndEvent,
        forkpoint_core::agent_events::ToolStartEvent,
        forkpoint_core::agent_events::ToolEndEvent,
        forkpoint_core::agent_events::ToolErrorEvent,
        forkpoint_core::agent_events::DoneEvent,
        forkpoint_core::agent_events::PermissionRequiredEvent,
        forkpoint_core::agent_events::PermissionDecidedEvent,
        forkpoint_core::agent_events::AgentCreatedEvent,
        forkpoint_core::agent_events::AgentResumedEvent,
        forkpoint_core::agent_events::AgentForkedEvent,
        forkpoint_core::agent_events::StateChangedEvent,
        forkpoint_core::agent_events::BreakpointChangedEvent,
        forkpoint_core::agent_events::StepCompleteEvent,
        forkpoint_core::agent_events::AgentErrorEvent,
        forkpoint_core::agent_events::TokenUsageEvent,
        forkpoint_core::agent_events::ToolExecutedEvent,
        forkpoint_core::agent_events::ToolCustomEvent,
        forkpoint_core::agent_events::TodoChangedEvent,
        forkpoint_core::agent_events::CheckpointRestoredEvent,
        forkpoint_core::agent_events::ModelPartialEvent,
        forkpoint_core::agent_events::RequestConvertedEvent,
        forkpoint_core::agent_events::AgentEvent,
    );
    out.push_str(
        "/** An entry of a type this library does not know, kept as written. */\n\
         export type UnknownEntry = EntryBase & { type: string; [key: string]: unknown };\n\n\
         /** Any entry a session file may hold. */\n\
         export type AnySessionEntry = SessionEntry | UnknownEntry;\n\n\
         /** The `type` of every agent event. */\n\
         export type AgentEventType = AgentEvent[\"type\"];\n",
    );
    print!("{out}");
}

#[cfg(not(feature = "ts"))]
fn main() {
    eprintln!("build with --features ts");
    std::process::exit(2);
}
