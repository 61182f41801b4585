// Generated from the Rust types of crates/core by `npm run gen:types`. Do not edit.
// Numbers that are u64 in Rust are plain numbers here (exact below 2^53).

/**
 * Stable error codes. The string form is part of the public API.
 */
export type ErrorCode = "CORRUPTED_DATA" | "UNSUPPORTED_FORMAT" | "LIMIT_EXCEEDED" | "INVALID_INPUT" | "INVALID_ID" | "NOT_FOUND" | "SESSION_LOCKED" | "LOG_LOCKED" | "MIGRATION_REQUIRED" | "STORAGE_FULL" | "IO" | "CLOSED" | "INTERNAL" | "AGENT_NOT_FOUND" | "AGENT_LOCKED" | "TEMPLATE_NOT_FOUND" | "SNAPSHOT_NOT_FOUND" | "PERMISSION_NOT_PENDING" | "CONFLICT" | "ABORTED" | "BLOCKED" | "ALREADY_EXISTS" | "LEASE_LOST" | "PROVIDER_AUTH" | "PROVIDER_RATE_LIMITED" | "PROVIDER_BAD_REQUEST" | "PROVIDER_UNAVAILABLE" | "PROVIDER_PROTOCOL" | "UNSUPPORTED_PLATFORM" | "STORE_UNAVAILABLE";

/**
 * An error with a stable code and, where they apply, the file path, the
 * 1-based line number and the byte offset of the line's first byte.
 */
export type ErrorInfo = { 
/**
 * Stable machine-readable code.
 */
code: ErrorCode, 
/**
 * Human-readable explanation, including what to do about it where we know.
 */
message: string, 
/**
 * The file the error is about, when there is one.
 */
path: string | null, 
/**
 * 1-based line number in the file.
 */
line: number | null, 
/**
 * Byte offset of the start of the line (or of the bad byte) in the file.
 */
offset: number | null, };

/**
 * Options for loading a session file.
 */
export type LoadOptions = { 
/**
 * Skip malformed lines in the middle of the file (counted in the metadata)
 * instead of failing with `CORRUPTED_DATA`. Default `false`.
 */
lenient?: boolean, 
/**
 * Longest line accepted, in bytes; longer lines fail with `LIMIT_EXCEEDED`.
 * Default 256 MiB.
 */
maxLineBytes?: number, 
/**
 * Deepest JSON nesting accepted; deeper lines fail with `LIMIT_EXCEEDED`. Default 512.
 */
maxDepth?: number, 
/**
 * Most entries accepted; more fail with `LIMIT_EXCEEDED`. Default 50 million.
 * A `.jsonl.gz` file is refused while it is decompressed as soon as it has
 * more non-blank lines than this plus its header.
 */
maxEntries?: number, 
/**
 * `.jsonl.gz`: most bytes a file may decompress to; decompression stops with
 * `LIMIT_EXCEEDED` as soon as it produces more. Default 4 GiB.
 */
maxDecompressedBytes?: number, 
/**
 * `.jsonl.gz`: largest ratio of decompressed to compressed bytes accepted
 * once more than 16 MiB have been decompressed (a gzip bomb decompresses
 * about 1000:1; session text about 5–30:1); more stops decompression with
 * `LIMIT_EXCEEDED`. `0` turns the check off. Default 200.
 */
maxCompressionRatio?: number, 
/**
 * Largest file accepted, in bytes (as stored: a `.jsonl.gz` file's
 * compressed size); a larger one fails with `LIMIT_EXCEEDED` before it
 * is read. Default 4 GiB, as `maxDecompressedBytes`.
 */
maxFileBytes?: number, };

/**
 * Options for a lazy resume.
 */
export type LazyOptions = { 
/**
 * Keep at most this many messages (the newest) in `getContext()`; older ones
 * come back page by page from `loadMoreHistory()`. Default: no limit, so the
 * context equals the one a full load builds.
 */
maxMessages?: number, 
/**
 * Put the compaction summary first in the context even when `maxMessages`
 * cuts messages. Default `true`.
 */
includeSummary?: boolean, 
/**
 * Walk back far enough to find the thinking level and model in force at the
 * leaf even when no resume hint has them. Default `true`.
 */
resolveSettings?: boolean, 
/**
 * Use and refresh the resume hint next to the session file. Default `true`.
 */
useHint?: boolean, 
/**
 * As in [`LoadOptions`].
 */
lenient?: boolean, 
/**
 * As in [`LoadOptions`].
 */
maxLineBytes?: number, 
/**
 * As in [`LoadOptions`].
 */
maxDepth?: number, 
/**
 * As in [`LoadOptions`].
 */
maxEntries?: number, 
/**
 * As in [`LoadOptions`].
 */
maxDecompressedBytes?: number, 
/**
 * As in [`LoadOptions`].
 */
maxCompressionRatio?: number, 
/**
 * As in [`LoadOptions`]: a lazy resume reads only the tail of a file, so
 * this bounds only the files it reads whole (`.jsonl.gz`, version 1).
 */
maxFileBytes?: number, };

/**
 * Limits for `listSessions` and `importSession` (as in [`LoadOptions`]).
 */
export type LimitOptions = { 
/**
 * As in [`LoadOptions`]. Default 256 MiB.
 */
maxLineBytes?: number, 
/**
 * As in [`LoadOptions`]. Default 50 million.
 */
maxEntries?: number, 
/**
 * As in [`LoadOptions`]. Default 4 GiB.
 */
maxDecompressedBytes?: number, 
/**
 * As in [`LoadOptions`]. Default 200.
 */
maxCompressionRatio?: number, 
/**
 * As in [`LoadOptions`]. Default 4 GiB.
 */
maxFileBytes?: number, };

/**
 * A line that lenient loading skipped.
 */
export type SkippedLine = { 
/**
 * 1-based line number (`null` when unknown, as in lazy loads).
 */
line: number | null, 
/**
 * Byte offset of the line's first byte.
 */
offset: number, 
/**
 * Why the line was skipped.
 */
reason: string, };

/**
 * An incomplete last line that loading cut off (a write torn by a crash).
 */
export type TornTail = { 
/**
 * 1-based line number of the torn line (`null` when unknown).
 */
line: number | null, 
/**
 * Byte offset where the torn line starts: the file's valid length.
 */
offset: number, 
/**
 * Number of bytes cut off.
 */
bytes: number, };

/**
 * The provider and model in force at a point of the session.
 */
export type ModelRef = { provider: string | null, modelId: string | null, };

/**
 * Facts about a loaded session.
 */
export type SessionMetadata = { 
/**
 * The session id from the header line.
 */
sessionId: string, 
/**
 * Format version of the file as written (1, 2 or 3). Older versions are
 * migrated in memory; the file is never rewritten by loading.
 */
version: number, 
/**
 * Working directory from the header.
 */
cwd: string | null, 
/**
 * The header's timestamp (when the session was created).
 */
createdAt: string | null, 
/**
 * Path of the session this one was forked from, if any.
 */
parentSession: string | null, 
/**
 * Display name from the newest `session_info` entry with a name.
 */
name: string | null, 
/**
 * Number of entries after the header (`leaf` pointer entries included).
 */
entryCount: number, 
/**
 * Number of `message` entries.
 */
messageCount: number, 
/**
 * Timestamp of the first entry (file order).
 */
firstTimestamp: string | null, 
/**
 * Timestamp of the last entry (file order).
 */
lastTimestamp: string | null, 
/**
 * Number of entries with two or more children.
 */
branchPoints: number, 
/**
 * Number of entries without children.
 */
leafCount: number, 
/**
 * The current leaf: the target of the last `leaf` entry if it is newer than
 * every other entry, else the last entry. `null` for an empty session or after
 * a move to before the first entry.
 */
leafId: string | null, 
/**
 * Number of `compaction` entries.
 */
compactions: number, 
/**
 * Size of the file in bytes (decompressed size for `.jsonl.gz`).
 */
fileSize: number, 
/**
 * The file was gzip-compressed.
 */
gzip: boolean, 
/**
 * Number of lines, blank ones included.
 */
lineCount: number, 
/**
 * Number of malformed lines skipped by a lenient load.
 */
skippedLines: number, 
/**
 * The first skipped lines (at most 100), with reasons.
 */
skipped: Array<SkippedLine>, 
/**
 * The incomplete last line that was cut off, if any.
 */
tornTail: TornTail | null, 
/**
 * The last line is complete JSON but has no newline after it.
 */
missingFinalNewline: boolean, 
/**
 * Entries whose id was already used by an earlier entry (the later one wins
 * when the id is looked up, as in pi).
 */
duplicateIds: number, 
/**
 * Entries whose parent does not exist; they are treated as roots.
 */
orphans: number, 
/**
 * Parent cycles broken by a lenient load (the earliest entry of each cycle
 * becomes a root). A strict load fails with `CORRUPTED_DATA` instead.
 */
brokenCycles: number, 
/**
 * Additional `session` header lines after the first (ignored, kept in the file).
 */
extraHeaders: number, 
/**
 * The design notes' name for `firstTimestamp`.
 */
startTime: string | null, 
/**
 * The design notes' name for `lastTimestamp`.
 */
lastTime: string | null, 
/**
 * The design notes' name for `branchPoints`.
 */
branches: number, };

/**
 * One entry of the session tree, summarized (no payload).
 */
export type TreeNode = { id: string, 
/**
 * The parent in the tree (`null` for roots, orphans included).
 */
parentId: string | null, 
/**
 * Entry type (`message`, `compaction`, ...).
 */
type: string, 
/**
 * For messages: the role (`user`, `assistant`, `toolResult`, ...).
 */
role: string | null, timestamp: string | null, 
/**
 * The entry's label, if one is set.
 */
label: string | null, 
/**
 * Number of children.
 */
children: number, 
/**
 * 1-based line number in the file (`null` when unknown).
 */
line: number | null, 
/**
 * Byte offset of the entry's line.
 */
offset: number, };

/**
 * A linear run of the tree: entries that each have exactly one child, collapsed
 * into one node (what tree views draw).
 */
export type TreeRun = { 
/**
 * First and last entry of the run.
 */
firstId: string, lastId: string, 
/**
 * Index of the parent run in the returned array (`null` for roots).
 */
parent: number | null, 
/**
 * Indices of the child runs (two or more: `lastId` is a branch point).
 */
children: Array<number>, 
/**
 * Entries in the run.
 */
entries: number, 
/**
 * `message` entries in the run.
 */
messages: number, 
/**
 * Compactions in the run.
 */
compactions: number, 
/**
 * Labels set on entries of the run (`{id, label}`).
 */
labels: Array<RunLabel>, 
/**
 * The current leaf is in this run.
 */
current: boolean, 
/**
 * 1-based line of the run's first entry.
 */
firstLine: number | null, 
/**
 * Depth in entries from the root to the run's first entry.
 */
depth: number, };

/**
 * A label inside a [`TreeRun`].
 */
export type RunLabel = { id: string, label: string, };

/**
 * Where a session file stands, read from its header and tail only.
 */
export type SessionInfo = { 
/**
 * Path of the file.
 */
path: string, 
/**
 * Session id from the header (`null` when the file is not a session; see `error`).
 */
id: string | null, version: number | null, cwd: string | null, createdAt: string | null, 
/**
 * Timestamp of the last entry.
 */
modifiedAt: string | null, parentSession: string | null, 
/**
 * Display name, when the resume hint or the tail holds one.
 */
name: string | null, 
/**
 * The current leaf as the tail shows it.
 */
leafId: string | null, 
/**
 * File size in bytes.
 */
fileSize: number, 
/**
 * File modification time (ms since the epoch).
 */
mtimeMs: number | null, gzip: boolean, 
/**
 * Entry and message counts, when a resume hint for this exact file length has them.
 */
entryCount: number | null, messageCount: number | null, 
/**
 * Set when the file could not be read as a session.
 */
error: ErrorInfo | null, };

/**
 * A session kept in a store (IndexedDB in browsers): what `listSessions()`
 * returns, read from the session's record only.
 */
export type StoredSessionInfo = { 
/**
 * The key in the store (a pi header's id by default).
 */
id: string, 
/**
 * Display name: the one given at import, else the session's own, else the file name.
 */
name: string | null, 
/**
 * The imported file's name, if known.
 */
source: string | null, 
/**
 * What was imported: `pi`, `claude-code` or `codex`.
 */
format: string, 
/**
 * The imported pi file's format version (1–3; 0 for other formats). Stored
 * sessions are always version 3.
 */
version: number, cwd: string | null, 
/**
 * The session header's timestamp.
 */
createdAt: string | null, 
/**
 * When the store last changed it.
 */
modifiedAt: string, importedAt: string, 
/**
 * The session it was forked from, if any.
 */
parentSession: string | null, 
/**
 * The current leaf.
 */
leafId: string | null, entryCount: number, messageCount: number, 
/**
 * Size of the stored pi v3 JSONL.
 */
bytes: number, 
/**
 * Size of the imported file kept beside it (0: the JSONL is the imported file).
 */
sourceBytes: number, 
/**
 * The imported file was gzip.
 */
gzip: boolean, 
/**
 * Changed since the import (entries appended, leaf moved): exporting gives
 * the pi JSONL, no longer the imported bytes.
 */
changed: boolean, 
/**
 * The name of the session's event log in the same database
 * (`session:<id>:<n>`; a session deleted and imported again gets a new one).
 */
logName: string, 
/**
 * Set by `listSessions` when the record could not be read (damaged, or
 * written by a newer forkpoint); the other fields are then empty.
 * `deleteSession(id)` removes such a session.
 */
error?: ErrorInfo, };

/**
 * A checkpoint of a stored session, as `IndexedDbStore` answers it: the
 * session's `forkpoint.checkpoint` entry (the record an agent's
 * `checkpoints.create` writes, `CheckpointInfo`) with the session's id, and
 * `createdAt` as ISO text.
 */
export type Checkpoint = { id: string, sessionId: string, label: string | null, 
/**
 * The entry the checkpoint points at (the leaf when it was saved, unless
 * given); `null`: before the first entry.
 */
entryId: string | null, 
/**
 * Entries in the session when it was saved.
 */
entryCount: number, 
/**
 * The last event seq of the session's event log when it was saved.
 */
eventSeq: number | null, createdAt: string, 
/**
 * The workflow execution it belongs to (the checkpoint's id unless given).
 */
executionId: string, 
/**
 * The step's name (the label, or `''`, unless given).
 */
stepName: string, 
/**
 * The step's index (0 unless given).
 */
stepIndex: number, 
/**
 * `'success'` unless given.
 */
status: string, state?: unknown, context?: unknown, variables?: Record<string, unknown>, };

/**
 * A batch from an incremental load.
 */
export type BatchInfo = { 
/**
 * Byte offset where the batch starts.
 */
startOffset: number, 
/**
 * Byte offset after the batch's last line: where the next batch starts.
 */
endOffset: number, 
/**
 * Byte offset of each entry in the batch.
 */
offsets: Array<number>, 
/**
 * 1-based line number of each entry.
 */
lines: Array<number>, 
/**
 * No more entries follow.
 */
done: boolean, };

/**
 * Facts about a lazy resume.
 */
export type LazyMetadata = { sessionId: string, version: number, cwd: string | null, createdAt: string | null, parentSession: string | null, 
/**
 * The current leaf (see `SessionMetadata.leafId`).
 */
leafId: string | null, 
/**
 * File size in bytes.
 */
fileSize: number, 
/**
 * How the tail was found: `"hint"` (the resume hint was valid), `"scan"`
 * (reverse scan from the end), or `"full"` (the file had to be read whole:
 * gzip or version 1).
 */
mode: string, 
/**
 * Why the resume hint was not used, when it was not.
 */
hintRejected: string | null, 
/**
 * Whether a fresh resume hint was written after this load.
 */
hintWritten: boolean, 
/**
 * Bytes read from the file.
 */
bytesRead: number, 
/**
 * Byte offset of the oldest entry loaded so far.
 */
windowStart: number, 
/**
 * Number of entries on the leaf's path loaded so far.
 */
loadedEntries: number, 
/**
 * Number of messages in the current context window.
 */
contextMessages: number, 
/**
 * Entry id of the newest compaction on the leaf's path, if any.
 */
compactionId: string | null, 
/**
 * Whether the thinking level and model are known exactly (false only when
 * `resolveSettings` was off and no hint had them).
 */
settingsResolved: boolean, 
/**
 * Whether older history can still be paged in with `loadMoreHistory()`.
 */
hasMoreHistory: boolean, 
/**
 * The incomplete last line that was cut off, if any.
 */
tornTail: TornTail | null, 
/**
 * Entry and message counts, when the resume hint had them for this file length.
 */
entryCount: number | null, messageCount: number | null, };

/**
 * Durability of a writer's appends.
 */
export type Durability = "fsync" | "group" | "memory";

/**
 * Options for opening an event log.
 */
export type EventLogOptions = { 
/**
 * `'fsync'` (default): every append is on disk before its promise resolves;
 * `'group'`: group commit; `'memory'`: nothing is written (tests).
 */
durability?: Durability, 
/**
 * Open a log another process writes: no lock is taken, appends fail, and
 * reads and subscriptions follow the file as it grows.
 */
readOnly?: boolean, 
/**
 * Longest event line accepted, in bytes. Default 64 MiB.
 */
maxLineBytes?: number, 
/**
 * Deepest JSON nesting accepted. Default 512.
 */
maxDepth?: number, };

/**
 * What opening an event log found.
 */
export type EventLogInfo = { 
/**
 * The file did not exist and was created.
 */
created: boolean, 
/**
 * A torn last line was cut off (read-write) or is being ignored (read-only).
 */
repaired: TornTail | null, 
/**
 * The sparse index was missing or stale and was rebuilt by scanning the log.
 */
indexRebuilt: boolean, 
/**
 * Number of events in the log.
 */
events: number, 
/**
 * The last event's bookmark.
 */
lastBookmark: Bookmark | null, readOnly: boolean, durability: Durability, };

/**
 * The three event channels (Kode's data, approval and governance planes).
 */
export type Channel = "progress" | "control" | "monitor";

/**
 * A position in the event log: the event's sequence number and timestamp (ms).
 * `readSince(bookmark)` returns the events after it.
 */
export type Bookmark = { seq: number, timestamp: number, };

/**
 * Which events a read or a subscription wants.
 */
export type EventFilter = { 
/**
 * Only these channels (default: all).
 */
channels?: Array<Channel>, 
/**
 * Only these event types (default: all).
 */
kinds?: Array<string>, 
/**
 * At most this many events.
 */
limit?: number, };

/**
 * Options for opening a session writer.
 */
export type WriterOptions = { 
/**
 * `'fsync'` (default) or `'group'`.
 */
durability?: Durability, 
/**
 * For a new file: the working directory written to the header. Default: the
 * process's current directory.
 */
cwd?: string, 
/**
 * For a new file: the session id. Default: a random UUID.
 */
sessionId?: string, 
/**
 * For a new file: the session this one was forked from.
 */
parentSession?: string, 
/**
 * Rewrite a version 1 or 2 file as version 3 (atomically) before appending.
 * Without it such files are refused with `MIGRATION_REQUIRED`.
 */
migrate?: boolean, 
/**
 * Keep `<file>.idx.json` (the lazy-resume hint) current. Default `true`.
 */
hint?: boolean, 
/**
 * Write gzip members (the default for paths ending in `.gz`).
 */
gzip?: boolean, };

/**
 * What opening a writer found and repaired.
 */
export type WriterOpenReport = { 
/**
 * The file did not exist (or was empty) and a header was written.
 */
created: boolean, 
/**
 * A torn last line was cut off.
 */
repaired: TornTail | null, 
/**
 * A missing final newline was added.
 */
newlineAdded: boolean, 
/**
 * The file was migrated from this version to version 3.
 */
migratedFrom: number | null, 
/**
 * The current leaf after opening.
 */
leafId: string | null, 
/**
 * Number of entries in the file.
 */
entryCount: number, };

/**
 * Text. `textSignature` is OpenAI Responses message metadata.
 */
export type TextContent = { text: string, textSignature?: string, };

/**
 * Model reasoning. `thinkingSignature` is the provider's opaque signature (or,
 * with `redacted`, the encrypted payload).
 */
export type ThinkingContent = { thinking: string, thinkingSignature?: string, redacted?: boolean, };

/**
 * An image, base64-encoded.
 */
export type ImageContent = { data: string, mimeType: string, };

/**
 * A tool call. `thoughtSignature` is Gemini's.
 */
export type ToolCall = { id: string, name: string, arguments: Record<string, unknown>, thoughtSignature?: string, };

/**
 * A block of user or tool-result content.
 */
export type UserBlock = { "type": "text" } & TextContent | { "type": "image" } & ImageContent;

/**
 * A block of assistant content.
 */
export type AssistantBlock = { "type": "text" } & TextContent | { "type": "thinking" } & ThinkingContent | { "type": "toolCall" } & ToolCall;

/**
 * User content: a string or blocks.
 */
export type UserContent = string | Array<UserBlock>;

/**
 * Cost in dollars.
 */
export type Cost = { input: number, output: number, cacheRead: number, cacheWrite: number, total: number, };

/**
 * Token usage of one model call.
 */
export type Usage = { input: number, output: number, cacheRead: number, cacheWrite: number, totalTokens: number, cost: Cost, };

/**
 * Why the model stopped.
 */
export type StopReason = "stop" | "length" | "toolUse" | "error" | "aborted";

/**
 * A message from the user.
 */
export type UserMessage = { content: UserContent, 
/**
 * Milliseconds since the epoch.
 */
timestamp: number, };

/**
 * A model response, with the provider, API and model that produced it.
 */
export type AssistantMessage = { content: Array<AssistantBlock>, api: string, provider: string, model: string, usage: Usage, stopReason: StopReason, errorMessage?: string, 
/**
 * Provider response id (OpenAI Responses).
 */
responseId?: string, timestamp: number, };

/**
 * The result of a tool call.
 */
export type ToolResultMessage = { toolCallId: string, toolName: string, content: Array<UserBlock>, details?: unknown, isError: boolean, timestamp: number, };

/**
 * A shell command the user ran (`!cmd`); `excludeFromContext` for `!!cmd`.
 */
export type BashExecutionMessage = { command: string, output: string, exitCode?: number, cancelled: boolean, truncated: boolean, fullOutputPath?: string, excludeFromContext?: boolean, timestamp: number, };

/**
 * A message injected by an extension (from `custom_message` entries).
 */
export type CustomMessage = { customType: string, content: UserContent, display: boolean, details?: unknown, timestamp: number, };

/**
 * The summary of a branch the conversation came back from.
 */
export type BranchSummaryMessage = { summary: string, fromId: string, timestamp: number, };

/**
 * The summary of compacted history.
 */
export type CompactionSummaryMessage = { summary: string, tokensBefore: number, timestamp: number, };

/**
 * A message of the context, as pi's `buildSessionContext` yields it.
 */
export type AgentMessage = { "role": "user" } & UserMessage | { "role": "assistant" } & AssistantMessage | { "role": "toolResult" } & ToolResultMessage | { "role": "bashExecution" } & BashExecutionMessage | { "role": "custom" } & CustomMessage | { "role": "branchSummary" } & BranchSummaryMessage | { "role": "compactionSummary" } & CompactionSummaryMessage;

/**
 * A message as sent to an LLM (pi's `convertToLlm` output).
 */
export type LlmMessage = { "role": "user" } & UserMessage | { "role": "assistant" } & AssistantMessage | { "role": "toolResult" } & ToolResultMessage;

/**
 * The first line of a session file.
 */
export type SessionHeader = { type: "session", 
/**
 * Absent in version 1 files.
 */
version?: number, id: string, timestamp: string, cwd: string, parentSession?: string, };

/**
 * Fields every entry has.
 */
export type EntryBase = { id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

export type MessageEntry = { message: AgentMessage, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

/**
 * Older history replaced by a summary; the context keeps entries from
 * `firstKeptEntryId` on.
 */
export type CompactionEntry = { summary: string, firstKeptEntryId: string, tokensBefore: number, details?: unknown, fromHook?: boolean, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

/**
 * A summary of a branch left behind (`fromId`: where it started, or `"root"`).
 */
export type BranchSummaryEntry = { fromId: string, summary: string, details?: unknown, fromHook?: boolean, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

export type ModelChangeEntry = { provider: string, modelId: string, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

export type ThinkingLevelChangeEntry = { thinkingLevel: string, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

/**
 * Extension state; not part of the context. forkpoint's own records use
 * `customType` values starting with `forkpoint.`.
 */
export type CustomEntry = { customType: string, data?: unknown, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

/**
 * A message from an extension that is part of the context (as a user message).
 */
export type CustomMessageEntry = { customType: string, content: UserContent, display: boolean, details?: unknown, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

/**
 * Sets (or, without `label`, clears) the label of `targetId`.
 */
export type LabelEntry = { targetId: string, label?: string, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

/**
 * The session's display name.
 */
export type SessionInfoEntry = { name?: string, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

/**
 * A durable move of the current leaf to `targetId` (`null`: before the first
 * entry). A pointer, not a node of the tree; its `parentId` is the target.
 */
export type LeafEntry = { targetId: string | null, id: string, 
/**
 * `null` for a root.
 */
parentId: string | null, 
/**
 * ISO-8601.
 */
timestamp: string, };

/**
 * An entry of a session file. Files may also hold entry types this library does
 * not know; they are kept and returned as they are (see `UnknownEntry`).
 */
export type SessionEntry = { "type": "message" } & MessageEntry | { "type": "compaction" } & CompactionEntry | { "type": "branch_summary" } & BranchSummaryEntry | { "type": "model_change" } & ModelChangeEntry | { "type": "thinking_level_change" } & ThinkingLevelChangeEntry | { "type": "custom" } & CustomEntry | { "type": "custom_message" } & CustomMessageEntry | { "type": "label" } & LabelEntry | { "type": "session_info" } & SessionInfoEntry | { "type": "leaf" } & LeafEntry;

/**
 * The context from a leaf: what pi's `buildSessionContext` returns.
 */
export type SessionContext = { messages: Array<AgentMessage>, 
/**
 * `"off"` unless a thinking-level change is on the path; `null` when a
 * lazy load could not tell.
 */
thinkingLevel: string | null, model: ModelRef | null, };

/**
 * A provider wire format: Anthropic Messages, OpenAI Chat Completions, OpenAI
 * Responses, Google Gemini `generateContent`.
 */
export type ProviderName = "anthropic" | "openai" | "openai-responses" | "google";

/**
 * Text. `textSignature`: OpenAI Responses message id/phase (pi's `{"v":1,…}`
 * JSON) or a Gemini `thoughtSignature`. `vendor`: provider-specific members
 * kept for that provider only (`{"anthropic": {"cache_control": …}}`).
 */
export type NormalizedText = { text: string, textSignature?: string, vendor?: Record<string, Record<string, unknown>>, };

/**
 * Reasoning. `thinkingSignature`: Anthropic signature (or redacted data with
 * `redacted`), the whole Responses reasoning item as JSON text, a Gemini
 * thought signature, or the OpenAI-compatible field name it came from.
 */
export type NormalizedThinking = { thinking: string, thinkingSignature?: string, redacted?: boolean, vendor?: Record<string, Record<string, unknown>>, };

/**
 * An image: base64 `data` + `mimeType`, or a `url`, or a provider `fileId`.
 */
export type NormalizedImage = { data?: string, mimeType?: string, url?: string, fileId?: string, 
/**
 * OpenAI's `detail` (`auto`, `low`, `high`).
 */
detail?: string, vendor?: Record<string, Record<string, unknown>>, };

/**
 * A document (PDF, text): base64 `data`, inline `text`, a `url` or a `fileId`.
 */
export type NormalizedDocument = { data?: string, mimeType?: string, text?: string, url?: string, fileId?: string, title?: string, vendor?: Record<string, Record<string, unknown>>, };

/**
 * A tool call. `arguments` is always an object; when the model's arguments
 * were not a JSON object, `argumentsRaw` holds their original text.
 * Responses calls have the id `call_id|item_id` (as pi). `syntheticId`:
 * Gemini sent no id, one was made up (and is never sent back to Gemini).
 */
export type NormalizedToolCall = { id: string, name: string, arguments: Record<string, unknown>, argumentsRaw?: string, thoughtSignature?: string, syntheticId?: boolean, vendor?: Record<string, Record<string, unknown>>, };

/**
 * A provider's own block kept as it was (`serverTool`: server-side tool use
 * and results; `unknown`: a block type this version does not know). Sent
 * only back to that provider.
 */
export type RawBlock = { provider: ProviderName, raw: unknown, };

/**
 * A block of canonical content.
 */
export type NormalizedBlock = { "type": "text" } & NormalizedText | { "type": "thinking" } & NormalizedThinking | { "type": "image" } & NormalizedImage | { "type": "document" } & NormalizedDocument | { "type": "toolCall" } & NormalizedToolCall | { "type": "serverTool" } & RawBlock | { "type": "unknown" } & RawBlock;

/**
 * Content given as a string or as blocks.
 */
export type NormalizedContent = string | Array<NormalizedBlock>;

/**
 * The exact provider JSON a message (and the `count - 1` after it) was
 * decoded from, when a fresh encoding would not give the same bytes.
 * Sent instead of re-encoding when the target is that provider and the
 * messages are unchanged (`hash` of what they were).
 */
export type OriginalJson = { provider: ProviderName, json: string, count: number, hash: string, };

/**
 * A user turn.
 */
export type NormalizedUserMessage = { content: NormalizedContent, timestamp?: number, original?: OriginalJson, vendor?: Record<string, Record<string, unknown>>, };

/**
 * A model turn, with its origin (`api`, `provider`, `model`).
 */
export type NormalizedAssistantMessage = { content: Array<NormalizedBlock>, api?: string, provider?: string, model?: string, stopReason?: StopReason, errorMessage?: string, usage?: Usage, timestamp?: number, original?: OriginalJson, vendor?: Record<string, Record<string, unknown>>, };

/**
 * The result of one tool call.
 */
export type NormalizedToolResultMessage = { toolCallId: string, toolName: string, content: Array<NormalizedBlock>, isError: boolean, 
/**
 * The provider gave the content as one string: its one text block
 * goes to each target as a string. Without it, blocks stay an array
 * where the target takes one (Anthropic, OpenAI Chat, Responses).
 */
contentString?: boolean, syntheticId?: boolean, timestamp?: number, original?: OriginalJson, vendor?: Record<string, Record<string, unknown>>, };

/**
 * A system or developer message inside the conversation (OpenAI Chat and
 * Responses; an Anthropic inline `system` message has `vendor.anthropic.inline`).
 */
export type NormalizedSystemMessage = { content: NormalizedContent, developer?: boolean, original?: OriginalJson, vendor?: Record<string, Record<string, unknown>>, };

/**
 * A message of a role this version does not model (Anthropic `critic`,
 * OpenAI's deprecated `function`, …): the provider's message as it
 * was, sent only back to that provider.
 */
export type NormalizedUnknownMessage = { provider: ProviderName, raw: unknown, original?: OriginalJson, };

/**
 * A canonical message (pi-ai's `user`/`assistant`/`toolResult` shapes, extended).
 */
export type NormalizedMessage = { "role": "user" } & NormalizedUserMessage | { "role": "assistant" } & NormalizedAssistantMessage | { "role": "toolResult" } & NormalizedToolResultMessage | { "role": "system" } & NormalizedSystemMessage | { "role": "unknown" } & NormalizedUnknownMessage;

/**
 * A tool the model may call.
 */
export type ToolDeclaration = { name: string, description?: string, 
/**
 * JSON Schema of the arguments.
 */
parameters: Record<string, unknown>, };

/**
 * A conversation in canonical form (`fromProvider`'s result).
 */
export type NormalizedConversation = { system?: NormalizedContent, 
/**
 * Set when the system prompt was an OpenAI `system`/`developer` message.
 */
systemRole?: string, messages: Array<NormalizedMessage>, tools?: Array<ToolDeclaration>, 
/**
 * The system prompt's exact JSON, when a fresh encoding would differ
 * (used by `toProvider` to the same provider while the prompt is unchanged).
 */
systemOriginal?: SystemOriginal, };

/**
 * See `NormalizedConversation.systemOriginal`.
 */
export type SystemOriginal = { provider: ProviderName, json: string, hash: string, };

/**
 * Options of `toProvider`.
 */
export type ToProviderOptions = { 
/**
 * The target model: messages from the same provider but another model
 * do not replay their signatures; Gemini 3 rules (call ids, signature
 * placeholder) apply to `gemini-3…` and later.
 */
model?: string, 
/**
 * The system prompt.
 */
system?: NormalizedContent, 
/**
 * OpenAI Chat: the role of the system prompt's message, `system`
 * (default) or `developer`. Responses always takes it as `instructions`;
 * Anthropic and Gemini have one top-level system prompt.
 */
systemRole?: string, 
/**
 * Tool definitions, converted to the target's shape.
 */
tools?: Array<ToolDeclaration>, 
/**
 * `fromProvider`'s `systemOriginal`, for byte-stable output to the same provider.
 */
systemOriginal?: SystemOriginal, 
/**
 * The target has thinking on (Anthropic extended or adaptive
 * thinking). Anthropic then rejects a final assistant turn (a tool-use
 * loop) that does not start with a thinking block: the calls of such a
 * turn's steps before the first one that does, and their results, are
 * sent as text (`tool_calls_to_text` in the report). Other targets
 * ignore it. Default `false`.
 */
thinking?: boolean, 
/**
 * The `idMap` of an earlier conversion (target id → original id): ids
 * found in it get their original back before the target's rules apply,
 * so a conversation that went to another provider and comes back has
 * its own ids again. An id given back stays as it is where the target
 * takes it (Anthropic: `[a-zA-Z0-9_-]`, at most 64; OpenAI Chat: at
 * most 40; Responses and Gemini: at most 64).
 */
idMap?: Record<string, string>, };

/**
 * Progress of `SessionMigrator.migrate`.
 */
export type MigrationProgress = { bytesRead: number, totalBytes: number, messagesChanged: number, };

/**
 * What an import produced.
 */
export type ImportSummary = { 
/**
 * The format read: `"pi"`, `"claude-code"` or `"codex"`.
 */
format: string, 
/**
 * The imported session's id: the one asked for, else a pi file's own id,
 * else the id derived from the source's own session id (FORMAT.md §15.7).
 */
sessionId: string, 
/**
 * Entries written (header excluded).
 */
entries: number, 
/**
 * `message` entries written.
 */
messages: number, 
/**
 * `custom` entries written (metadata lines kept whole).
 */
customEntries: number, 
/**
 * 0, except 1 for a pi file whose last line is torn (a write cut short),
 * which is left out as pi's loader leaves it out; every other line is imported.
 */
skippedLines: number, 
/**
 * The current leaf of the result (the last entry).
 */
leafId: string | null, 
/**
 * Entries whose parent is not in the file (kept as roots, as pi does).
 */
orphans: number, 
/**
 * Parent cycles in the input, each cut at its earliest entry (which becomes a root).
 */
brokenCycles: number, 
/**
 * Claude Code: tool results of parallel calls moved from sibling branches
 * into one chain under their assistant message (see [`import_session`]).
 */
rechainedResults: number, 
/**
 * Claude Code: lines repeating an earlier line's `uuid`, kept as `custom`
 * entries under a derived id.
 */
duplicateIds: number, };

/**
 * One change a conversion made.
 */
export type ConversionStep = { 
/**
 * Stable code, one of the 45 listed in FORMAT.md §15.5 (`thinking_to_text`,
 * `signature_dropped`, `tool_call_id_mapped`, `missing_tool_result_filled`,
 * `orphan_tool_result_dropped`, `tool_result_image_moved`, …).
 */
code: string, 
/**
 * Index of the canonical message it concerns (in the input to the conversion).
 */
message?: number, 
/**
 * What happened, for people.
 */
detail: string, 
/**
 * Whether information was lost (and not only reshaped).
 */
lossy: boolean, };

/**
 * What a conversion could not carry over, and every step it took.
 */
export type CompatibilityReport = { 
/**
 * `true` when nothing was lost (reshaping such as id mapping is not a loss).
 */
compatible: boolean, 
/**
 * One line per kind of problem, for people.
 */
warnings: Array<string>, 
/**
 * Canonical fields whose content was lost or changed (`thinking`,
 * `thinkingSignature`, `toolCall.id`, …), each once.
 */
lossyFields: Array<string>, 
/**
 * Every step, in order.
 */
steps: Array<ConversionStep>, };

/**
 * Where the agent's loop is. Persisted before the step it announces.
 */
export type Breakpoint = "READY" | "PRE_MODEL" | "STREAMING_MODEL" | "TOOL_PENDING" | "AWAITING_APPROVAL" | "PRE_TOOL" | "TOOL_EXECUTING" | "POST_TOOL";

/**
 * The state of a tool call.
 */
export type ToolCallState = "PENDING" | "APPROVAL_REQUIRED" | "APPROVED" | "EXECUTING" | "COMPLETED" | "FAILED" | "DENIED" | "SEALED";

/**
 * One change of a tool call's state.
 */
export type AuditEntry = { state: ToolCallState, 
/**
 * Milliseconds since the epoch.
 */
at: number, note?: string, };

/**
 * A tool call as its records tell it.
 */
export type ToolCallRecord = { 
/**
 * The model's tool-call id.
 */
id: string, name: string, state: ToolCallState, input: unknown, 
/**
 * Whether the call needed a decision, and the decision.
 */
approval?: { decision: 'allow' | 'deny', note?: string } | undefined, 
/**
 * What the tool returned (or the error), once terminal.
 */
result?: unknown, isError?: boolean, startedAt?: number, completedAt?: number, 
/**
 * Every state the call went through, oldest first.
 */
audit: Array<AuditEntry>, };

/**
 * A named safe-fork-point.
 */
export type SnapshotInfo = { 
/**
 * The label, or `sfp:{index}`.
 */
id: string, 
/**
 * The session entry of the safe-fork-point (the last entry a fork copies).
 */
entryId: string, 
/**
 * Index of that message among the context messages.
 */
sfpIndex: number, createdAt: number, };

/**
 * A checkpoint of a workflow execution (the `/checkpoint` flow).
 */
export type CheckpointInfo = { 
/**
 * `ckpt-{executionId}-{stepIndex}`.
 */
id: string, executionId: string, stepName: string, stepIndex: number, 
/**
 * `'success'` unless given.
 */
status: string, state?: unknown, context?: unknown, variables?: Record<string, unknown>, 
/**
 * The session entry that was the leaf when it was made (restore moves the leaf there).
 */
entryId: string, createdAt: number, 
/**
 * A name for people (given to `IndexedDbStore.saveCheckpoint`).
 */
label?: string, 
/**
 * Entries in the session when it was made (written by `IndexedDbStore`).
 */
entryCount?: number, 
/**
 * The last seq of the session's event log when it was made (written by `IndexedDbStore`).
 */
eventSeq?: number, };

/**
 * What a crash resume or an interrupt closed.
 */
export type SealedCall = { id: string, name: string, 
/**
 * The state the call was in (`PENDING` when only the transcript knew of it).
 */
priorState: ToolCallState, 
/**
 * Whether a record of the call existed (else it was found in the transcript only).
 */
recorded: boolean, note: string, recommendations: Array<string>, 
/**
 * The error `toolResult` message appended for it.
 */
message: AgentMessage, };

/**
 * What `meta.json` keeps of a model provider (never credentials).
 */
export type AgentModelRef = { 
/**
 * The provider, e.g. `anthropic`.
 */
provider: string, 
/**
 * The model, e.g. `claude-sonnet-4-5`.
 */
model: string, 
/**
 * The wire API, e.g. `anthropic-messages`.
 */
api?: string, };

/**
 * When a tool call needs a decision.
 */
export type PermissionMode = "auto" | "approval";

/**
 * Permission mode: `auto` runs every call; `approval` asks first (every call, or the tools listed).
 */
export type Permission = { mode: PermissionMode, 
/**
 * With `approval`: only these tools ask (all when absent).
 */
requireApprovalTools?: Array<string>, };

/**
 * Where a fork came from.
 */
export type ForkedFrom = { 
/**
 * The parent agent.
 */
agentId: string, 
/**
 * The snapshot the fork was made from.
 */
snapshot: string, 
/**
 * The parent's session entry the fork's history ends with.
 */
entryId: string, };

/**
 * An agent's `meta.json`. Members this version does not know are kept as they are.
 */
export type AgentMeta = { agentId: string, templateId: string | null, 
/**
 * ISO 8601.
 */
createdAt: string, 
/**
 * ISO 8601.
 */
updatedAt: string, 
/**
 * Ancestors, oldest first (a fork's parent last).
 */
lineage: Array<string>, configVersion: string, model: AgentModelRef, 
/**
 * Names of the tools the agent may call.
 */
tools: Array<string>, permission: Permission, systemPrompt: string | null, metadata: Record<string, unknown>, forkedFrom?: ForkedFrom, };

/**
 * What `resume` / `resumeFromStore` may change, and what `create` starts from.
 */
export type MetaChanges = { model?: AgentModelRef, permission?: Permission, tools?: Array<string>, 
/**
 * `null` clears it; absent keeps it.
 */
systemPrompt?: string | null, 
/**
 * Merged into the stored metadata.
 */
metadata?: Record<string, unknown>, };

/**
 * A tool the driver can run: what the model sees, and whether it always asks.
 */
export type ToolSpec = { name: string, description: string, inputSchema: Record<string, unknown>, 
/**
 * Always ask for a decision before running it.
 */
requiresApproval: boolean, };

/**
 * What a streamed piece of the model's answer is.
 */
export type DeltaKind = "text" | "thinking";

/**
 * A piece of the model's answer as it streams: text or thinking of content
 * block `index` (the index it will have in the answer).
 */
export type ModelDelta = { index: number, kind: DeltaKind, text: string, };

/**
 * Whether the agent is idle, working, or waiting for a decision.
 */
export type AgentState = "READY" | "WORKING" | "PAUSED";

/**
 * How a resume treated calls left without a result: `crash` sealed them,
 * `manual` left them open and reports them.
 */
export type ResumeStrategy = "manual" | "crash";

/**
 * Why a step ended.
 */
export type DoneReason = "completed" | "interrupted";

/**
 * A decision about a tool call that needed approval.
 */
export type PermissionDecision = "allow" | "deny";

/**
 * How bad an `error` event is (Kode's levels).
 */
export type ErrorSeverity = "info" | "warn" | "error";

/**
 * Where an `error` event's failure happened (Kode's phases; the agent
 * reports `model` today).
 */
export type ErrorPhase = "model" | "tool" | "system" | "lifecycle";

/**
 * The state of a todo item.
 */
export type TodoStatus = "pending" | "in_progress" | "completed";

/**
 * A todo item (at most one `in_progress`). Members this version does not
 * know are kept as they are.
 */
export type TodoItem = { assignee?: string, 
/**
 * Milliseconds since the epoch (kept from the list before).
 */
createdAt?: number, id: string, notes?: string, status: TodoStatus, title: string, 
/**
 * Milliseconds since the epoch (the last change of the list).
 */
updatedAt?: number, };

/**
 * The approval part of a tool call's record.
 */
export type ApprovalInfo = { 
/**
 * Whether the call needed a decision.
 */
required: boolean, 
/**
 * The decision, once made.
 */
decision?: PermissionDecision, 
/**
 * Who decided (`'api'` for `decide()`).
 */
decidedBy?: string, 
/**
 * Milliseconds since the epoch.
 */
decidedAt?: number, note?: string, };

/**
 * A tool call as events show it: its record at the time of the event. A call
 * without a record yet has only its `id`.
 */
export type ToolCallSnapshot = { 
/**
 * The model's tool-call id.
 */
id: string, 
/**
 * The tool's name.
 */
name?: string, state?: ToolCallState, 
/**
 * Whether the call needed a decision, and the decision.
 */
approval?: ApprovalInfo, 
/**
 * What the tool returned (or the error), once the call is over.
 */
result?: unknown, isError?: boolean, 
/**
 * Milliseconds since the epoch: when the tool started running.
 */
startedAt?: number, 
/**
 * Milliseconds since the epoch: when the call got its result.
 */
completedAt?: number, 
/**
 * The input as JSON text, cut to 200 characters (then `…`).
 */
inputPreview?: string, 
/**
 * Every state the call went through, oldest first.
 */
auditTrail?: Array<AuditEntry>, };

/**
 * A call a crash-resume sealed: its snapshot after sealing, the state it was
 * in, and what to check before running it again.
 */
export type ResumedSealedCall = { priorState: ToolCallState, recommendations: Array<string>, 
/**
 * The model's tool-call id.
 */
id: string, 
/**
 * The tool's name.
 */
name?: string, state?: ToolCallState, 
/**
 * Whether the call needed a decision, and the decision.
 */
approval?: ApprovalInfo, 
/**
 * What the tool returned (or the error), once the call is over.
 */
result?: unknown, isError?: boolean, 
/**
 * Milliseconds since the epoch: when the tool started running.
 */
startedAt?: number, 
/**
 * Milliseconds since the epoch: when the call got its result.
 */
completedAt?: number, 
/**
 * The input as JSON text, cut to 200 characters (then `…`).
 */
inputPreview?: string, 
/**
 * Every state the call went through, oldest first.
 */
auditTrail?: Array<AuditEntry>, };

/**
 * A call without a result that a manual resume left open.
 */
export type OpenToolCall = { 
/**
 * The arguments the model wrote.
 */
arguments: unknown, id: string, name: string, 
/**
 * The state of its record (`null`: no record yet, never started).
 */
state: ToolCallState | null, };

/**
 * `think_chunk_start` (`progress`): the model's answer has a thinking
 * block; `think_chunk` and `think_chunk_end` follow. Emitted once the
 * answer is durable.
 */
export type ThinkChunkStartEvent = { 
/**
 * The model call's number (1 for the agent's first).
 */
step: number, };

/**
 * `think_chunk` (`progress`): the text of a thinking block (whole, not streamed).
 */
export type ThinkChunkEvent = { step: number, delta: string, };

/**
 * `think_chunk_end` (`progress`): the end of a thinking block.
 */
export type ThinkChunkEndEvent = { step: number, };

/**
 * `text_chunk_start` (`progress`): the model's answer has a text block;
 * `text_chunk` and `text_chunk_end` follow. Emitted once the answer is durable.
 */
export type TextChunkStartEvent = { step: number, };

/**
 * `text_chunk` (`progress`): the text of a text block (whole, not streamed).
 */
export type TextChunkEvent = { step: number, delta: string, };

/**
 * `text_chunk_end` (`progress`): the end of a text block, with its whole text.
 */
export type TextChunkEndEvent = { step: number, text: string, };

/**
 * `tool_input_chunk_start` (`progress`): the model's streamed answer
 * started tool call `index` (the index of its block in the answer) to
 * tool `name`; `tool_input_chunk` pieces of its JSON input follow.
 */
export type ToolInputChunkStartEvent = { step: number, index: number, name: string, };

/**
 * `tool_input_chunk` (`progress`): a piece of the JSON text of tool call
 * `index`'s input as it streams (the pieces joined are the input).
 */
export type ToolInputChunkEvent = { step: number, index: number, delta: string, };

/**
 * `tool_input_chunk_end` (`progress`): the streamed tool call `index` is
 * in the stored answer as call `callId` (emitted once the answer is durable).
 */
export type ToolInputChunkEndEvent = { step: number, index: number, callId: string, };

/**
 * `tool:start` (`progress`): a tool is about to run; its `EXECUTING`
 * record is durable.
 */
export type ToolStartEvent = { call: ToolCallSnapshot, };

/**
 * `tool:end` (`progress`): a tool call got its result: completed, failed
 * (also when the tool does not exist), denied, or `sealed: true` when
 * forkpoint closed it after a crash or an interrupt.
 */
export type ToolEndEvent = { call: ToolCallSnapshot, sealed?: boolean, };

/**
 * `tool:error` (`progress`): a tool threw (after its `tool:end`);
 * `error` is the message.
 */
export type ToolErrorEvent = { call: ToolCallSnapshot, error: string, };

/**
 * `done` (`progress`): a step ended: the model answered without tools
 * (`completed`), or `interrupt()` stopped the agent (`interrupted`).
 */
export type DoneEvent = { step: number, reason: DoneReason, };

/**
 * `permission_required` (`control`): a tool call waits for a decision
 * (`decide(call.id, …)`); its `APPROVAL_REQUIRED` record is durable and
 * the agent is `PAUSED`.
 */
export type PermissionRequiredEvent = { call: ToolCallSnapshot, };

/**
 * `permission_decided` (`control`): a decision was recorded for a call.
 */
export type PermissionDecidedEvent = { callId: string, decision: PermissionDecision, 
/**
 * `'api'` for `decide()`.
 */
decidedBy: string, note?: string, };

/**
 * `agent_created` (`monitor`): the agent was created (the first event of
 * its log).
 */
export type AgentCreatedEvent = { agentId: string, templateId: string | null, };

/**
 * `agent_resumed` (`monitor`): the agent was opened again. `sealed`: the
 * calls a `crash` resume sealed; `open`: the calls a `manual` resume left
 * without a result; `breakpoint`: where the agent was when it stopped.
 */
export type AgentResumedEvent = { strategy: ResumeStrategy, sealed: Array<ResumedSealedCall>, breakpoint: Breakpoint, open: Array<OpenToolCall>, };

/**
 * `agent_forked` (`monitor`): the first event of a fork's log: the agent
 * it was forked `from`, the snapshot and the session entry it was forked
 * at.
 */
export type AgentForkedEvent = { from: string, snapshot: string, entryId: string, };

/**
 * `state_changed` (`monitor`): the agent's state changed.
 */
export type StateChangedEvent = { state: AgentState, };

/**
 * `breakpoint_changed` (`monitor`): the loop moved to another breakpoint
 * (durable before the step it announces). `timestamp` is the event's own
 * time (ms), which the log keeps as the line's timestamp.
 */
export type BreakpointChangedEvent = { previous: Breakpoint, current: Breakpoint, timestamp: number, };

/**
 * `step_complete` (`monitor`): a step without tool calls ended; `done` is
 * the bookmark of its `done` event.
 */
export type StepCompleteEvent = { step: number, done: Bookmark, };

/**
 * `error` (`monitor`): something failed (today: the model call, which
 * ends the step).
 */
export type AgentErrorEvent = { severity: ErrorSeverity, phase: ErrorPhase, message: string, 
/**
 * The error's stable code (`PROVIDER_RATE_LIMITED`, …) when it has one.
 */
code?: string, };

/**
 * `token_usage` (`monitor`): the tokens of one model call (from its `usage`).
 */
export type TokenUsageEvent = { inputTokens: number, outputTokens: number, totalTokens: number, 
/**
 * Input tokens read from the provider's prompt cache.
 */
cacheReadTokens?: number, 
/**
 * Input tokens written to the provider's prompt cache.
 */
cacheWriteTokens?: number, 
/**
 * Output tokens spent on reasoning (where the provider says).
 */
reasoningTokens?: number, 
/**
 * The call's cost in dollars (from the pricing table; absent when the
 * model's prices are not known).
 */
cost?: number, };

/**
 * `tool_executed` (`monitor`): a tool call ran (after its `tool:end`, and
 * its `tool:error` if it threw).
 */
export type ToolExecutedEvent = { call: ToolCallSnapshot, };

/**
 * `tool_custom_event` (`monitor`): a tool called `ctx.emit(eventType,
 * data)` while running. `timestamp` is the event's own time (ms), which
 * the log keeps as the line's timestamp.
 */
export type ToolCustomEvent = { toolName: string, eventType: string, data?: unknown, timestamp: number, };

/**
 * `todo_changed` (`monitor`): the todo list changed (the whole list
 * before and after).
 */
export type TodoChangedEvent = { current: Array<TodoItem>, previous: Array<TodoItem>, };

/**
 * `checkpoint_restored` (`monitor`): `checkpoints.restore` moved the
 * agent to a checkpoint.
 */
export type CheckpointRestoredEvent = { checkpointId: string, entryId: string, };

/**
 * `model_partial` (`monitor`): a model call ended before its answer was
 * complete (the stream failed or broke, the agent was interrupted, or the
 * process died mid-stream: then it is written by the resume). `content`
 * is what had streamed, in the answer's block shapes (`text`, `thinking`,
 * `toolCall` with the `partialInput` text); its pieces are also in the log
 * as `*_chunk` events. The half-answer is not in the session: the call is
 * made again by the next `run()` (or `autoRun`), so no tool call of it runs.
 */
export type ModelPartialEvent = { step: number, 
/**
 * `failed`, `interrupted` or `crashed`.
 */
reason: string, content: Array<Record<string, unknown>>, };

/**
 * `request_converted` (`monitor`): the first request to a model whose
 * wire format differs from where some of the context came from was
 * converted; `steps` is the compatibility report (what changed, what was lost).
 */
export type RequestConvertedEvent = { provider: string, model: string, steps: Array<Record<string, unknown>>, };

/**
 * An event of a durable agent, as it appears in its event log (without the
 * log's `seq`, `timestamp` and `channel`, except where an event carries its own
 * `timestamp`). `type` says which; each type always goes to the same channel.
 */
export type AgentEvent = { "type": "think_chunk_start" } & ThinkChunkStartEvent | { "type": "think_chunk" } & ThinkChunkEvent | { "type": "think_chunk_end" } & ThinkChunkEndEvent | { "type": "text_chunk_start" } & TextChunkStartEvent | { "type": "text_chunk" } & TextChunkEvent | { "type": "text_chunk_end" } & TextChunkEndEvent | { "type": "tool_input_chunk_start" } & ToolInputChunkStartEvent | { "type": "tool_input_chunk" } & ToolInputChunkEvent | { "type": "tool_input_chunk_end" } & ToolInputChunkEndEvent | { "type": "tool:start" } & ToolStartEvent | { "type": "tool:end" } & ToolEndEvent | { "type": "tool:error" } & ToolErrorEvent | { "type": "done" } & DoneEvent | { "type": "permission_required" } & PermissionRequiredEvent | { "type": "permission_decided" } & PermissionDecidedEvent | { "type": "agent_created" } & AgentCreatedEvent | { "type": "agent_resumed" } & AgentResumedEvent | { "type": "agent_forked" } & AgentForkedEvent | { "type": "state_changed" } & StateChangedEvent | { "type": "breakpoint_changed" } & BreakpointChangedEvent | { "type": "step_complete" } & StepCompleteEvent | { "type": "error" } & AgentErrorEvent | { "type": "token_usage" } & TokenUsageEvent | { "type": "tool_executed" } & ToolExecutedEvent | { "type": "tool_custom_event" } & ToolCustomEvent | { "type": "todo_changed" } & TodoChangedEvent | { "type": "checkpoint_restored" } & CheckpointRestoredEvent | { "type": "model_partial" } & ModelPartialEvent | { "type": "request_converted" } & RequestConvertedEvent;

/** An entry of a type this library does not know, kept as written. */
export type UnknownEntry = EntryBase & { type: string; [key: string]: unknown };

/** Any entry a session file may hold. */
export type AnySessionEntry = SessionEntry | UnknownEntry;

/** The `type` of every agent event. */
export type AgentEventType = AgentEvent["type"];
