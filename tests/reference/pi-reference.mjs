// A plain-JavaScript session loader that follows pi's rules (research/sessions.md
// §1.6–1.10): read lines, JSON.parse each, migrate old versions, build the
// context from a leaf. Written for this project from the documented semantics;
// it is the oracle the tests compare forkpoint with, and the benchmark's
// plain-JS baseline. Leaf pointer entries follow forkpoint's FORMAT.md.
import { openSync, readSync, closeSync, fstatSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

/** Reads a file line by line in 1 MiB chunks (as later pi does; no whole-file string). */
export function readLines(path, onLine) {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.allocUnsafe(1 << 20);
    const dec = new StringDecoder('utf8');
    let carry = '';
    let pos = 0;
    while (pos < size) {
      const n = readSync(fd, buf, 0, buf.length, pos);
      if (n <= 0) break;
      pos += n;
      const text = carry + dec.write(buf.subarray(0, n));
      let start = 0;
      for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', start)) {
        onLine(text.slice(start, i));
        start = i + 1;
      }
      carry = text.slice(start);
    }
    carry += dec.end();
    if (carry.length) onLine(carry);
  } finally {
    closeSync(fd);
  }
}

/** Parses session text or a file into pi's FileEntry array (malformed lines throw). */
export function parseEntries(source) {
  const out = [];
  const take = (line) => {
    if (!line.trim()) return;
    out.push(JSON.parse(line));
  };
  if (typeof source === 'string' && source.includes('\n')) source.split('\n').forEach(take);
  else readLines(source, take);
  return out;
}

/** pi's migrations, with forkpoint's deterministic v1 ids (index as 8 hex digits). */
export function migrate(fileEntries) {
  const header = fileEntries.find((e) => e.type === 'session');
  const version = header?.version ?? 1;
  if (version < 2) {
    let prev = null;
    fileEntries.forEach((e, i) => {
      if (e.type === 'session') return;
      e.id = i.toString(16).padStart(8, '0');
      e.parentId = prev;
      prev = e.id;
      if (e.type === 'compaction' && typeof e.firstKeptEntryIndex === 'number') {
        const k = e.firstKeptEntryIndex;
        const t = fileEntries[k];
        if (t && t.type !== 'session' && k <= i) e.firstKeptEntryId = t.id;
        delete e.firstKeptEntryIndex;
      }
    });
  }
  if (version < 3) {
    for (const e of fileEntries) {
      if (e.type === 'message' && e.message && e.message.role === 'hookMessage') e.message.role = 'custom';
    }
  }
  return fileEntries.filter((e) => e.type !== 'session');
}

/** The tree: id map (last wins), effective parents (leaf pointers are not nodes). */
export function buildTree(entries) {
  const byId = new Map();
  for (const e of entries) byId.set(e.id, e);
  const resolve = (e) => {
    for (let i = 0; e && e.type === 'leaf' && i <= entries.length; i++) e = e.targetId == null ? undefined : byId.get(e.targetId);
    return e && e.type !== 'leaf' ? e : undefined;
  };
  const parentOf = new Map();
  for (const e of entries) {
    if (e.type === 'leaf' || e.parentId == null || e.parentId === e.id) continue;
    const p = resolve(byId.get(e.parentId));
    if (p) parentOf.set(e, p);
  }
  const childCount = new Map();
  for (const p of parentOf.values()) childCount.set(p, (childCount.get(p) ?? 0) + 1);
  const nodes = entries.filter((e) => e.type !== 'leaf');
  return {
    byId,
    parentOf,
    leaves: nodes.filter((e) => !childCount.has(e)),
    branchPoints: nodes.filter((e) => (childCount.get(e) ?? 0) > 1),
    resolve,
  };
}

/** The current leaf by FORMAT.md's rule (pi: the last entry). */
export function currentLeaf(entries, tree) {
  let lastNode = -1;
  let lastPtr = -1;
  entries.forEach((e, i) => (e.type === 'leaf' ? (lastPtr = i) : (lastNode = i)));
  if (lastPtr > lastNode) {
    const p = entries[lastPtr];
    if (p.targetId == null) return null;
    const t = tree.resolve(tree.byId.get(p.targetId));
    if (t) return t;
  }
  return lastNode >= 0 ? entries[lastNode] : null;
}

const ms = (ts) => new Date(ts).getTime();

/** pi's buildSessionContext from `leaf` (an entry, or null). */
export function buildContext(tree, leaf) {
  if (!leaf) return { messages: [], thinkingLevel: 'off', model: null };
  const path = [];
  for (let e = leaf, n = 0; e && n <= tree.byId.size + 1; e = tree.parentOf.get(e), n++) path.unshift(e);
  let thinkingLevel = 'off';
  let model = null;
  let compaction = null;
  for (const e of path) {
    if (e.type === 'thinking_level_change') thinkingLevel = e.thinkingLevel;
    else if (e.type === 'model_change') model = { provider: e.provider, modelId: e.modelId };
    else if (e.type === 'message' && e.message?.role === 'assistant') model = { provider: e.message.provider, modelId: e.message.model };
    else if (e.type === 'compaction') compaction = e;
  }
  const messages = [];
  const emit = (e) => {
    if (e.type === 'message') messages.push(e.message);
    else if (e.type === 'custom_message')
      messages.push({ role: 'custom', customType: e.customType, content: e.content, display: e.display, details: e.details, timestamp: ms(e.timestamp) });
    else if (e.type === 'branch_summary' && e.summary) messages.push({ role: 'branchSummary', summary: e.summary, fromId: e.fromId, timestamp: ms(e.timestamp) });
  };
  if (compaction) {
    messages.push({ role: 'compactionSummary', summary: compaction.summary, tokensBefore: compaction.tokensBefore, timestamp: ms(compaction.timestamp) });
    const ci = path.indexOf(compaction);
    let found = false;
    for (let i = 0; i < ci; i++) {
      if (path[i].id === compaction.firstKeptEntryId) found = true;
      if (found) emit(path[i]);
    }
    for (let i = ci + 1; i < path.length; i++) emit(path[i]);
  } else {
    for (const e of path) emit(e);
  }
  return { messages, thinkingLevel, model };
}

/** Loads a session the plain-JS way and returns everything the tests compare. */
export function loadReference(source, leafId) {
  const fileEntries = parseEntries(source);
  const header = fileEntries[0];
  const entries = migrate(fileEntries);
  const tree = buildTree(entries);
  const leaf = leafId === undefined ? currentLeaf(entries, tree) : tree.resolve(tree.byId.get(leafId));
  return { header, entries, tree, leaf, context: buildContext(tree, leaf) };
}
