// The branch tree of one session, drawn as SVG.
//
// `TreeModel` turns the runs of `session.getBranch().getTree()` (linear chains
// collapsed, depth-first) into rows: one row per run, or one row per entry for
// a run the user expanded. `TreeView` draws only the rows in view (a spacer
// gives the scroll height), so a tree with tens of thousands of rows scrolls
// as fast as one with ten.
//
// Layout ("lanes", like a git graph): each run's children are drawn with the
// biggest subtree (in entries) last, and that child keeps its parent's lane;
// the other children are drawn first, one lane to the right. A branch point's
// trunk runs down its lane to its last child and the others fork off it.
// Rows are depth-first, so a child's subtree lies entirely between it and its
// next sibling and lanes never collide; and because the long line of a
// conversation keeps its lane while its side branches move right, the number
// of lanes grows with the log of the tree's size, not with its depth.

import { asText, isObject, toJson } from './messages.js';

const ROW_H = 28;
const LANE_W = 16;
const PAD_X = 16;
/** Lanes beyond this are drawn on top of each other (very deep side branches). */
const MAX_LANES = 20;
/** Pixels the preview text keeps before tags take the rest of the row. */
const MIN_PREVIEW = 80;
/** Width of the compaction mark in its tag. */
const ICON_W = 12;
const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * @typedef {import('../dist/web.js').TreeRun} TreeRun
 * @typedef {{ run: number, k: number, id: string }} Row  k = -1: the whole run collapsed; else the k-th entry of the run
 * @typedef {{ role: string, text: string }} Preview
 */

export class TreeModel {
  /** @param {import('../dist/web.js').Session} session */
  constructor(session) {
    this.session = session;
    this.branch = session.getBranch();
    /** @type {TreeRun[]} */
    this.runs = this.branch.getTree();
    /** @type {string | null} */
    this.leafId = session.leafId;
    /** Entry ids of the expanded runs, by run index. @type {Map<number, string[]>} */
    this.expanded = new Map();
    /** @type {Map<string, Preview>} */
    this.previews = new Map();
    /** @type {Map<number, Preview>} */
    this.runPreviews = new Map();
    /** Tree nodes met while walking runs (for their line numbers), by entry id. @type {Map<string, import('../dist/web.js').TreeNode>} */
    this.nodes = new Map();

    const n = this.runs.length;
    // Side branches made only of `custom` entries that end there (Claude Code's
    // progress and hook records): drawn faded, and kept off the main lane.
    this.hookOnly = new Uint8Array(n);
    /** The child nodes of a branch point, read once for all its side branches. */
    const fanOut = new Map();
    for (let i = 0; i < n; i++) {
      const r = this.runs[i];
      if (r.parent === null || r.children.length || r.messages || r.compactions || r.labels.length || r.entries > 256) continue;
      if (this.runs[r.parent].children.length < 2) continue;
      if (!fanOut.has(r.parent)) fanOut.set(r.parent, this.branch.getChildren(this.runs[r.parent].lastId));
      if (this.runNodes(i, fanOut.get(r.parent)).every((node) => node.type === 'custom')) this.hookOnly[i] = 1;
    }
    /** Branch points whose side branches are all such hook/progress entries. */
    this.hookBranchPoints = this.runs.filter((r) => r.children.length >= 2 && r.children.filter((c) => !this.hookOnly[c]).length <= 1).length;
    /** Depth in runs (1 for a root run): the ARIA tree level. */
    this.level = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const p = this.runs[i].parent;
      this.level[i] = p === null ? 1 : this.level[p] + 1;
    }

    // Children in drawing order: the biggest subtree last (ties: file order);
    // hook/progress side branches weigh nothing, so the conversation keeps the lane.
    const size = new Float64Array(n);
    for (let i = n - 1; i >= 0; i--) {
      size[i] += this.hookOnly[i] ? 0 : this.runs[i].entries;
      const p = this.runs[i].parent;
      if (p !== null) size[p] += size[i];
    }
    /** @type {number[][]} */
    this.kids = this.runs.map((r) => {
      const c = r.children;
      if (c.length < 2) return c;
      let heavy = c.length - 1;
      for (let k = c.length - 2; k >= 0; k--) if (size[c[k]] > size[c[heavy]]) heavy = k;
      return [...c.slice(0, heavy), ...c.slice(heavy + 1), c[heavy]];
    });
    // Parents come before their children in `runs`, so one pass gives every lane.
    this.lane = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const p = this.runs[i].parent;
      this.lane[i] = p === null ? 0 : this.lastChild(p) === i ? this.lane[p] : this.lane[p] + 1;
    }
    // The runs from the root to the current leaf, and for each of them the
    // child the path continues into (drawn in the accent colour).
    this.currentRun = this.runs.findIndex((r) => r.current);
    /** @type {Map<number, number | null>} run → the child run on the path */
    this.path = new Map();
    for (let i = this.currentRun, child = null; i >= 0 && i !== null; child = i, i = this.runs[i].parent ?? -1) {
      this.path.set(i, child);
    }
    this.leaves = this.runs.filter((r) => r.children.length === 0).length;
    this.branchPoints = this.runs.filter((r) => r.children.length >= 2).length;
    this.rebuild();
    // A current leaf inside a run (after "continue from here" on an inner
    // entry) is only visible with the run expanded.
    if (this.currentRun >= 0 && this.runs[this.currentRun].lastId !== this.leafId) this.toggle(this.currentRun);
  }

  /** The child of run `i` drawn last (it keeps the lane), or -1. @param {number} i */
  lastChild(i) {
    const c = this.kids[i];
    return c.length ? c[c.length - 1] : -1;
  }

  /** Rebuilds the rows (depth-first, children in drawing order) after runs were expanded or collapsed. */
  rebuild() {
    /** @type {Row[]} */
    this.rows = [];
    this.firstRow = new Int32Array(this.runs.length);
    const roots = [];
    this.runs.forEach((r, i) => r.parent === null && roots.push(i));
    const stack = roots.reverse();
    while (stack.length) {
      const i = /** @type {number} */ (stack.pop());
      this.firstRow[i] = this.rows.length;
      const ids = this.expanded.get(i);
      if (ids) ids.forEach((id, k) => this.rows.push({ run: i, k, id }));
      else this.rows.push({ run: i, k: -1, id: this.runs[i].lastId });
      const c = this.kids[i];
      for (let k = c.length - 1; k >= 0; k--) stack.push(c[k]);
    }
  }

  /** Expands or collapses run `i` (a run of one entry never expands). */
  toggle(i) {
    if (this.expanded.has(i)) this.expanded.delete(i);
    else if (this.runs[i].entries > 1) this.expanded.set(i, this.runEntryIds(i));
    this.rebuild();
  }

  /** The ids of the entries of run `i`, first to last (each has exactly one child). */
  runEntryIds(i) {
    return this.runNodes(i).map((node) => node.id);
  }

  /** The tree nodes of run `i`, first to last (`siblings`: the nodes beside its first one, if known). */
  runNodes(i, siblings) {
    const { firstId, lastId, entries, parent } = this.runs[i];
    siblings ??= parent === null ? this.branch.getRoots() : this.branch.getChildren(this.runs[parent].lastId);
    const nodes = [siblings.find((node) => node.id === firstId) ?? { id: firstId, type: '', line: null }];
    while (nodes[nodes.length - 1].id !== lastId && nodes.length < entries) {
      const next = this.branch.getChildren(nodes[nodes.length - 1].id);
      if (next.length === 0) break;
      nodes.push(next[0]);
    }
    for (const node of nodes) this.nodes.set(node.id, node);
    return nodes;
  }

  /** Row index showing entry `id` (the run's row if the run is collapsed), or -1. */
  rowOf(id) {
    for (let i = 0; i < this.runs.length; i++) {
      const ids = this.expanded.get(i);
      if (ids) {
        const k = ids.indexOf(id);
        if (k >= 0) return this.firstRow[i] + k;
      } else if (this.runs[i].lastId === id || this.runs[i].firstId === id) {
        return this.firstRow[i];
      }
    }
    // An inner entry of a collapsed run: find it by walking the run.
    for (let i = 0; i < this.runs.length; i++) {
      if (this.expanded.has(i) || this.runs[i].entries <= 2) continue;
      if (this.runEntryIds(i).includes(id)) return this.firstRow[i];
    }
    return -1;
  }

  /** @param {number} r */
  isLastOfRun(r) {
    const row = this.rows[r];
    return row.k === -1 || row.k === (this.expanded.get(row.run)?.length ?? 1) - 1;
  }

  /** Facts about row `r` that the view draws and the page's tests read. */
  facts(r) {
    const row = this.rows[r];
    const run = this.runs[row.run];
    const last = this.isLastOfRun(r);
    return {
      leaf: last && run.children.length === 0,
      branchPoint: last && run.children.length >= 2,
      current: row.k === -1 ? run.current : row.id === this.leafId,
      labels: row.k === -1 ? run.labels.map((l) => l.label) : run.labels.filter((l) => l.id === row.id).map((l) => l.label),
    };
  }

  /** The row of the parent entry (left arrow), or -1. */
  parentRow(r) {
    const row = this.rows[r];
    if (row.k > 0) return r - 1;
    const p = this.runs[row.run].parent;
    if (p === null) return -1;
    return this.firstRow[p] + (this.expanded.get(p)?.length ?? 1) - 1;
  }

  /** The row of the first child entry (right arrow), or -1. */
  childRow(r) {
    if (!this.isLastOfRun(r)) return r + 1;
    const c = this.kids[this.rows[r].run];
    return c.length ? this.firstRow[c[0]] : -1;
  }

  /** What a row says: the entry's role or type and a line of its text. */
  preview(r) {
    const row = this.rows[r];
    if (row.k >= 0) return this.entryPreview(row.id);
    let p = this.runPreviews.get(row.run);
    if (!p) {
      p = this.entryPreview(this.firstMessageId(row.run));
      this.runPreviews.set(row.run, p);
    }
    return p;
  }

  /** The first `message` entry of run `i` (a run's first entries are often metadata), looking a few entries ahead. */
  firstMessageId(i) {
    const run = this.runs[i];
    const siblings = run.parent === null ? this.branch.getRoots() : this.branch.getChildren(this.runs[run.parent].lastId);
    let node = siblings.find((n) => n.id === run.firstId);
    for (let steps = 0; node && node.type !== 'message' && node.id !== run.lastId && steps < 32; steps++) {
      node = this.branch.getChildren(node.id)[0];
    }
    return node && node.type === 'message' ? node.id : run.firstId;
  }

  /** @param {string} id @returns {Preview} */
  entryPreview(id) {
    let p = this.previews.get(id);
    if (!p) {
      try {
        p = describeEntry(this.session.getEntry(id));
      } catch (e) {
        // A row that cannot be described says so; the rest of the tree is drawn.
        console.error(`entry ${id} could not be described`, e);
        p = { role: 'entry', text: `(cannot describe this entry: ${e?.message ?? e})` };
      }
      this.previews.set(id, p);
    }
    return p;
  }
}

/** One line for an entry: its role (messages) or type, and some of its text. Any stored shape gives a line. */
export function describeEntry(e) {
  // The first characters only: a text may be megabytes.
  const one = (s) => asText(s).slice(0, 2000).replace(/\s+/g, ' ').trim().slice(0, 400);
  if (!isObject(e)) return { role: 'entry', text: one(e) };
  switch (e.type) {
    case 'message': {
      const m = e.message;
      if (!isObject(m)) return { role: 'message', text: one(m) };
      return { role: asText(m.role).slice(0, 40) || 'message', text: one(messageLine(m)) };
    }
    case 'compaction':
      return { role: 'compaction', text: one(e.summary) };
    case 'branch_summary':
      return { role: 'branch summary', text: one(e.summary) || '(empty)' };
    case 'model_change':
      return { role: 'model', text: one(`${asText(e.provider)}/${asText(e.modelId)}`) };
    case 'thinking_level_change':
      return { role: 'thinking level', text: one(e.thinkingLevel) };
    case 'label':
      return { role: 'label', text: one(e.label == null ? `cleared on ${asText(e.targetId)}` : `"${asText(e.label)}" on ${asText(e.targetId)}`) };
    case 'session_info':
      return { role: 'session name', text: one(e.name) };
    case 'custom':
      return { role: 'custom', text: one(e.customType) };
    case 'custom_message':
      return { role: 'custom message', text: one(`${asText(e.customType)}: ${textOf(e.content)}`) };
    default:
      return { role: asText(e.type).slice(0, 40) || 'entry', text: '' };
  }
}

/** A message's first words: its text, else its first tool call or thinking. */
export function messageLine(m) {
  switch (m.role) {
    case 'bashExecution':
      return `$ ${asText(m.command)}`;
    case 'branchSummary':
    case 'compactionSummary':
      return asText(m.summary);
    case 'toolResult':
      return `${asText(m.toolName)}: ${textOf(m.content)}`;
    default: {
      const text = textOf(m.content);
      if (text || !Array.isArray(m.content)) return text;
      const blocks = m.content.filter(isObject);
      const call = blocks.find((b) => b.type === 'toolCall');
      if (call) return `${asText(call.name)}(${typeof call.arguments === 'string' ? call.arguments : toJson(call.arguments ?? {})})`;
      const thinking = blocks.find((b) => b.type === 'thinking');
      if (thinking) return `(thinking) ${asText(thinking.thinking)}`;
      return '';
    }
  }
}

/** The text of a content of any shape: a string, the text blocks (or strings) of an array, anything else as JSON. */
function textOf(content) {
  if (!Array.isArray(content)) return asText(content);
  const parts = [];
  for (const b of content) {
    if (typeof b === 'string') parts.push(b);
    else if (isObject(b) && b.type === 'text' && b.text != null && typeof b.text !== 'object') parts.push(String(b.text));
  }
  return parts.join(' ');
}

/** Creates an SVG element. */
function el(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

const laneX = (lane) => PAD_X + Math.min(lane, MAX_LANES) * LANE_W;

/** Measures text in the tree's font (for cutting labels to the width). */
const measurer = document.createElement('canvas').getContext('2d');

/** `text` cut with an ellipsis so it fits in `width` pixels. */
function fit(text, width, font) {
  measurer.font = font;
  if (measurer.measureText(text).width <= width) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (measurer.measureText(text.slice(0, mid) + '…').width <= width) lo = mid;
    else hi = mid - 1;
  }
  return lo === 0 ? '' : text.slice(0, lo) + '…';
}

/**
 * The scrolling, virtualized view. The container is the focusable ARIA tree;
 * keys move the active row, Enter selects it (`onSelect(entryId)`).
 */
export class TreeView {
  /**
   * @param {HTMLElement} container  an empty element that scrolls
   * @param {{ onSelect: (id: string) => void }} opts
   */
  constructor(container, opts) {
    this.container = container;
    this.onSelect = opts.onSelect;
    /** @type {TreeModel | null} */
    this.model = null;
    this.active = -1;
    /** @type {string | null} */
    this.selectedId = null;
    /** The run holding the selected entry (its row stands for it while collapsed). */
    this.selectedRun = -1;
    this.spacer = document.createElement('div');
    this.spacer.className = 'tree-spacer';
    this.svg = el('svg', { class: 'tree-svg', role: 'presentation' });
    container.append(this.spacer, this.svg);
    this.font = '13px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
    this.scheduled = false;
    container.addEventListener('scroll', () => this.schedule());
    new ResizeObserver(() => this.schedule()).observe(container);
    container.addEventListener('keydown', (e) => this.onKey(e));
    container.addEventListener('click', (e) => this.onClick(e));
    // Focus only marks the active row (CSS shows it while the tree has the
    // focus): redrawing here would replace the row under a mouse button that
    // is down, and its click would be lost.
    container.addEventListener('focus', () => {
      if (this.active < 0 && this.model?.rows.length) {
        this.active = 0;
        this.markActive();
      }
    });
  }

  /** Moves the `active` class to the active row without redrawing. */
  markActive() {
    for (const g of this.svg.children) g.classList.toggle('active', Number(g.getAttribute('data-row')) === this.active);
    if (this.model && this.active >= 0 && this.active < this.model.rows.length) this.container.setAttribute('aria-activedescendant', `tree-row-${this.active}`);
    else this.container.removeAttribute('aria-activedescendant');
  }

  /** Shows `model`, selecting and revealing entry `selectId`. */
  setModel(model, selectId) {
    this.model = model;
    this.selectedId = selectId ?? null;
    this.active = selectId ? model.rowOf(selectId) : -1;
    this.selectedRun = this.active >= 0 ? model.rows[this.active].run : -1;
    this.spacer.style.height = `${model.rows.length * ROW_H}px`;
    this.container.dataset.rowCount = String(model.rows.length);
    if (this.active >= 0) this.reveal(this.active, true);
    this.render();
  }

  clear() {
    this.model = null;
    this.spacer.style.height = '0px';
    this.svg.replaceChildren();
    delete this.container.dataset.rowCount;
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.render();
    });
  }

  /** Scrolls row `r` into view (centred if `center`). */
  reveal(r, center = false) {
    const c = this.container;
    const top = r * ROW_H;
    if (center) c.scrollTop = Math.max(0, top - c.clientHeight / 2);
    else if (top < c.scrollTop) c.scrollTop = top;
    else if (top + ROW_H > c.scrollTop + c.clientHeight) c.scrollTop = top + ROW_H - c.clientHeight;
  }

  /** Selects row `r`: it becomes active and selected, and `onSelect` is told. */
  selectRow(r) {
    const m = this.model;
    if (!m || r < 0 || r >= m.rows.length) return;
    this.active = r;
    this.selectedId = m.rows[r].id;
    this.selectedRun = m.rows[r].run;
    this.reveal(r);
    this.render();
    this.onSelect(this.selectedId);
  }

  /**
   * Expands or collapses the run of row `r`. A row of that run that was
   * active hands over to the run's first row (where the toggle is); a row
   * elsewhere stays active.
   */
  toggleRow(r) {
    const m = this.model;
    if (!m) return;
    const run = m.rows[r].run;
    const active = m.rows[this.active];
    m.toggle(run);
    this.spacer.style.height = `${m.rows.length * ROW_H}px`;
    this.container.dataset.rowCount = String(m.rows.length);
    this.active = !active || active.run === run ? m.firstRow[run] : m.rowOf(active.id);
    this.reveal(this.active);
    this.render();
  }

  onClick(e) {
    const g = /** @type {Element} */ (e.target).closest?.('[data-row]');
    if (!g || !this.model) return;
    const r = Number(g.getAttribute('data-row'));
    this.container.focus({ preventScroll: true });
    if (/** @type {Element} */ (e.target).closest('[data-action="toggle"]')) this.toggleRow(r);
    else this.selectRow(r);
  }

  onKey(e) {
    const m = this.model;
    if (!m || m.rows.length === 0) return;
    const page = Math.max(1, Math.floor(this.container.clientHeight / ROW_H) - 1);
    const a = Math.max(0, this.active);
    let to = -1;
    switch (e.key) {
      case 'ArrowDown': to = Math.min(m.rows.length - 1, this.active + 1); break;
      case 'ArrowUp': to = Math.max(0, a - 1); break;
      case 'ArrowLeft': to = m.parentRow(a); break;
      case 'ArrowRight': to = m.childRow(a); break;
      case 'Home': to = 0; break;
      case 'End': to = m.rows.length - 1; break;
      case 'PageDown': to = Math.min(m.rows.length - 1, a + page); break;
      case 'PageUp': to = Math.max(0, a - page); break;
      case 'Enter': this.selectRow(a); e.preventDefault(); return;
      case ' ': case '+': case '-': this.toggleRow(a); e.preventDefault(); return;
      default: return;
    }
    e.preventDefault();
    if (to < 0) return;
    this.active = to;
    this.reveal(to);
    this.render();
  }

  /** Draws the rows in view. */
  render() {
    const m = this.model;
    if (!m) return;
    const c = this.container;
    const width = c.clientWidth;
    const first = Math.max(0, Math.floor(c.scrollTop / ROW_H) - 2);
    const last = Math.min(m.rows.length, Math.ceil((c.scrollTop + c.clientHeight) / ROW_H) + 2);
    this.svg.setAttribute('width', String(width));
    this.svg.setAttribute('height', String((last - first) * ROW_H));
    this.svg.style.transform = `translateY(${first * ROW_H}px)`;
    const rows = [];
    for (let r = first; r < last; r++) rows.push(this.drawRow(r, (r - first) * ROW_H, width));
    this.svg.replaceChildren(...rows);
    if (this.active >= 0 && this.active < m.rows.length) c.setAttribute('aria-activedescendant', `tree-row-${this.active}`);
    else c.removeAttribute('aria-activedescendant');
  }

  drawRow(r, y, width) {
    const m = this.model;
    const row = m.rows[r];
    const run = m.runs[row.run];
    const f = m.facts(r);
    const lane = m.lane[row.run];
    const x = laneX(lane);
    const mid = ROW_H / 2;
    const first = row.k <= 0;
    const last = m.isLastOfRun(r);
    const selected = row.id === this.selectedId || (row.k === -1 && row.run === this.selectedRun);
    const onPath = m.path.has(row.run);
    // Within the current run, the path ends at the current leaf.
    const leafK = row.run === m.currentRun ? (m.expanded.get(row.run)?.indexOf(m.leafId) ?? -1) : -1;
    const pathHere = onPath && (leafK < 0 || row.k <= leafK);

    const p = m.preview(r);
    const hook = m.hookOnly[row.run] === 1;
    const expandable = run.entries > 1 && row.k <= 0;
    const g = el('g', {
      class: ['row', selected && 'selected', r === this.active && 'active', f.current && 'current', hook && 'hook'].filter(Boolean).join(' '),
      transform: `translate(0 ${y})`,
      id: `tree-row-${r}`,
      role: 'treeitem',
      'aria-selected': String(selected),
      // Depth in runs; the entries after the first of an expanded run are its children.
      'aria-level': String(m.level[row.run] + (row.k > 0 ? 1 : 0)),
      'aria-expanded': expandable ? String(row.k === 0) : null,
      'aria-label': this.ariaLabel(r, p, f, hook),
      'data-testid': 'tree-row',
      'data-row': r,
      'data-entry-id': row.id,
      'data-first-id': row.k === -1 ? run.firstId : row.id,
      'data-kind': row.k === -1 ? 'run' : 'entry',
      'data-leaf': f.leaf,
      'data-branch-point': f.branchPoint,
      'data-current': f.current,
    });
    g.append(el('rect', { class: 'row-bg', x: 1, y: 1, width: Math.max(0, width - 2), height: ROW_H - 2, rx: 5 }));

    // Trunks of ancestors that pass this row (their last child is further down).
    const lines = [];
    for (let p = run.parent; p !== null; p = m.runs[p].parent) {
      const lastChild = m.lastChild(p);
      if (m.firstRow[lastChild] > r) {
        const hot = m.path.has(p) && m.firstRow[m.path.get(p) ?? 0] > r;
        lines.push(el('line', { class: hot ? 'edge hot' : 'edge', x1: laneX(m.lane[p]), y1: 0, x2: laneX(m.lane[p]), y2: ROW_H }));
      }
    }
    // The edge into this row: from the parent's lane above (a curve for a side branch).
    if (!first || run.parent !== null) {
      const px = first ? laneX(m.lane[run.parent]) : x;
      const d = px === x ? `M${x} 0 V${mid}` : `M${px} 0 C${px} ${mid} ${x} ${mid - 6} ${x} ${mid}`;
      lines.push(el('path', { class: pathHere ? 'edge hot' : 'edge', d }));
    }
    // The edge out of it: on within the run, or down the trunk to the children.
    if (!last || run.children.length > 0) {
      const hot = pathHere && (row.run !== m.currentRun || (leafK >= 0 && row.k < leafK));
      lines.push(el('line', { class: hot ? 'edge hot' : 'edge', x1: x, y1: mid, x2: x, y2: ROW_H }));
    }
    g.append(...lines);

    // The node: diamond = branch point, ring = leaf, small dot = inner entry.
    if (f.current) g.append(el('circle', { class: 'halo', cx: x, cy: mid, r: 9 }));
    if (f.branchPoint) {
      g.append(el('rect', { class: `node bp${pathHere ? ' hot' : ''}${f.current ? ' cur' : ''}`, x: x - 5, y: mid - 5, width: 10, height: 10, transform: `rotate(45 ${x} ${mid})` }));
    } else if (f.leaf || row.k === -1) {
      g.append(el('circle', { class: `node ${f.leaf ? 'leaf' : ''}${pathHere ? ' hot' : ''}${f.current ? ' cur' : ''}`, cx: x, cy: mid, r: 5.5 }));
    } else {
      g.append(el('circle', { class: `node inner${pathHere ? ' hot' : ''}${f.current ? ' cur' : ''}`, cx: x, cy: mid, r: f.current ? 5.5 : 3.5 }));
    }

    // Text: [toggle] role  preview ............ [tags]
    let tx = laneX(m.lane[row.run]) + 14;
    if (lane > MAX_LANES) {
      g.append(el('text', { class: 'deep', x: tx, y: mid + 4 }, `↳${lane}`));
      tx += 26;
    }
    // The expand/collapse button (on a run of several entries, and on the first row of an expanded one).
    if (run.entries > 1 && (row.k === -1 || row.k === 0)) {
      const open = row.k === 0;
      const t = el('g', { class: 'toggle', 'data-action': 'toggle', role: 'button', 'aria-label': open ? 'collapse run' : `expand ${run.entries} entries` });
      t.append(el('rect', { x: tx - 2, y: mid - 8, width: 16, height: 16, rx: 3 }), el('text', { x: tx + 6, y: mid + 4, 'text-anchor': 'middle' }, open ? '▾' : '▸'));
      g.append(t);
    }
    tx += 18;
    // Tags, right-aligned: [labels…] [compaction] [entries] [branches] [current leaf].
    // Room is given in order of importance (current, branches, compactions,
    // entries, labels) and the preview keeps MIN_PREVIEW pixels; a tag that
    // does not fit whole takes its short form, or a label is cut with an ellipsis.
    /** @type {{ kind: string, text: string, rank: number, short?: string, icon?: boolean, cut?: boolean, w?: number, shown?: string }[]} */
    const tags = [];
    if (f.current) tags.push({ kind: 'current', text: 'current leaf', rank: 0 });
    for (const l of f.labels) tags.push({ kind: 'label', text: `⚑ ${l}`, rank: 4, cut: true });
    if (row.k === -1 && run.compactions > 0) tags.push({ kind: 'compaction', text: run.compactions > 1 ? `${run.compactions} compactions` : 'compaction', short: String(run.compactions), rank: 2, icon: true });
    if (row.k === -1 && run.entries > 1) tags.push({ kind: 'count', text: `${run.entries} entries`, rank: 3 });
    if (row.k === -1 && run.children.length >= 2) tags.push({ kind: 'count', text: `${run.children.length} branches`, rank: 1 });
    measurer.font = `600 ${this.font}`;
    const roleW = measurer.measureText(p.role).width + 8;
    const tagFont = '11px system-ui, sans-serif';
    measurer.font = tagFont;
    let room = width - 8 - (tx + roleW + MIN_PREVIEW);
    for (const t of [...tags].sort((a, b) => a.rank - b.rank)) {
      const pad = 12 + (t.icon ? ICON_W : 0);
      const w = measurer.measureText(t.text).width + pad;
      const shortW = t.short ? measurer.measureText(t.short).width + pad : Infinity;
      if (w + 4 <= room) {
        t.w = w;
        t.shown = t.text;
      } else if (shortW + 4 <= room) {
        t.w = shortW;
        t.shown = t.short;
      } else if (t.cut && room >= 56) {
        t.shown = fit(t.text, room - 4 - pad, tagFont);
        measurer.font = tagFont;
        t.w = measurer.measureText(t.shown).width + pad;
      } else continue;
      room -= t.w + 4;
    }
    let right = width - 8;
    const tagEls = [];
    for (const t of tags) {
      if (t.w === undefined || t.shown === undefined) continue;
      right -= t.w;
      const tag = el('g', { class: `tag ${t.kind}` });
      tag.append(el('rect', { x: right, y: mid - 9, width: t.w, height: 18, rx: 9 }));
      const textX = right + (t.icon ? ICON_W : 0) + (t.w - (t.icon ? ICON_W : 0)) / 2;
      if (t.icon) tag.append(compactionIcon(right + 8, mid));
      tag.append(el('text', { x: textX, y: mid + 4, 'text-anchor': 'middle' }, t.shown));
      if (t.shown !== t.text) tag.append(el('title', {}, t.text));
      tagEls.push(tag);
      right -= 4;
    }
    const text = el('text', { class: 'label', x: tx, y: mid + 4.5 });
    text.append(el('tspan', { class: `role role-${p.role.replace(/\W+/g, '-')}` }, p.role));
    text.append(el('tspan', { class: 'preview', dx: 8 }, fit(p.text, Math.max(0, right - tx - roleW - 8), this.font)));
    g.append(text, ...tagEls);
    // The tooltip: the entry (or the run's entries) and its line in the stored file.
    let tip;
    if (row.k === -1 && run.entries > 1) tip = `${run.entries} entries, ${run.firstId} … ${run.lastId}${run.firstLine ? ` (from line ${run.firstLine})` : ''}`;
    else {
      const line = row.k === -1 ? run.firstLine : m.nodes.get(row.id)?.line;
      tip = `${row.k === -1 ? '1 entry, ' : ''}${row.id}${line ? ` (line ${line})` : ''}`;
    }
    if (f.labels.length) tip += `\n${f.labels.map((l) => `⚑ ${l}`).join('\n')}`;
    if (hook) tip += '\nhook/progress entries on a side branch';
    g.append(el('title', {}, tip));
    return g;
  }

  /** What a screen reader says for row `r`: role, text, state, labels. */
  ariaLabel(r, p, f, hook) {
    const m = /** @type {TreeModel} */ (this.model);
    const row = m.rows[r];
    const run = m.runs[row.run];
    const parts = [`${p.role}: ${p.text.length > 100 ? `${p.text.slice(0, 100)}…` : p.text || '(no text)'}`];
    if (f.current) parts.push('current leaf');
    else if (f.leaf) parts.push('leaf');
    if (f.branchPoint) parts.push(`branch point with ${run.children.length} branches`);
    if (row.k === -1 && run.compactions > 0) parts.push(run.compactions > 1 ? `${run.compactions} compactions` : 'compaction');
    else if (row.k >= 0 && p.role === 'compaction') parts.push('compaction');
    if (row.k === -1 && run.entries > 1) parts.push(`run of ${run.entries} entries, collapsed`);
    if (hook) parts.push('hook or progress side branch');
    if (f.labels.length) parts.push(`${f.labels.length > 1 ? 'labels' : 'label'} ${f.labels.join(', ')}`);
    return parts.join('. ');
  }
}

/** Two overlapping squares (the compaction mark), centred at (`cx`, `cy`). */
function compactionIcon(cx, cy) {
  const g = el('g', { class: 'icon', 'aria-hidden': 'true' });
  g.append(el('rect', { x: cx - 4.5, y: cy - 4.5, width: 6, height: 6, rx: 1 }), el('rect', { x: cx - 1.5, y: cy - 1.5, width: 6, height: 6, rx: 1 }));
  return g;
}
