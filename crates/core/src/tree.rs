//! The entry tree: id lookup, effective parents, children, leaves, branch points
//! and the current leaf. Every walk is iterative and bounded, so orphans, cycles
//! and very deep trees cannot loop forever or overflow the stack.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::entry::EntryKind;
use crate::load::EntryRec;

/// "No entry" in index vectors.
pub const NONE: u32 = u32::MAX;

/// Entry lookup by id without copying the ids. For duplicate ids the later
/// entry wins, as with pi's `Map`.
#[derive(Debug, Clone, Default)]
pub struct IdIndex {
    table: HashTable<u32>,
    state: RandomState,
}

impl IdIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Indexes `entries`; returns the index and the number of duplicate ids.
    pub fn build(entries: &[EntryRec]) -> (Self, u64) {
        let mut idx = IdIndex {
            table: HashTable::with_capacity(entries.len()),
            state: RandomState::new(),
        };
        let mut dups = 0;
        for i in 0..entries.len() {
            if idx.insert(entries, i as u32) {
                dups += 1;
            }
        }
        (idx, dups)
    }

    /// Adds entry `i`; returns true if it replaced an earlier entry with the same id.
    pub fn insert(&mut self, entries: &[EntryRec], i: u32) -> bool {
        let id = &entries[i as usize].id;
        let h = self.state.hash_one(id.as_ref() as &str);
        match self.table.find_mut(h, |&j| entries[j as usize].id == *id) {
            Some(slot) => {
                *slot = i;
                true
            }
            None => {
                self.table
                    .insert_unique(h, i, |&j| self.state.hash_one(&*entries[j as usize].id));
                false
            }
        }
    }

    /// The entry with this id.
    pub fn get(&self, entries: &[EntryRec], id: &str) -> Option<u32> {
        let h = self.state.hash_one(id);
        self.table
            .find(h, |&j| &*entries[j as usize].id == id)
            .copied()
    }

    /// Number of distinct ids.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// The tree over a session's entries.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Effective parent of each entry, or [`NONE`] for roots and for `leaf` entries
    /// (which are pointers, not nodes).
    pub parent: Vec<u32>,
    /// Children of entry `i` are `children[child_start[i]..child_start[i + 1]]`, in file order.
    pub child_start: Vec<u32>,
    pub children: Vec<u32>,
    /// Entries whose parent id matches no entry.
    pub orphans: u64,
    /// Entries whose parent link was cut to break a cycle.
    pub broken_cycles: Vec<u32>,
    /// The current leaf (`None`: empty session, or the leaf was moved to before the first entry).
    pub leaf: Option<u32>,
    pub leaf_count: u64,
    pub branch_points: u64,
}

/// Follows `leaf` pointer entries to the node they point at.
pub fn resolve_node(entries: &[EntryRec], idx: &IdIndex, mut j: u32) -> Option<u32> {
    for _ in 0..=entries.len() {
        let e = &entries[j as usize];
        if e.kind != EntryKind::Leaf {
            return Some(j);
        }
        j = idx.get(entries, e.target.as_deref()?)?;
    }
    None
}

impl Tree {
    /// Builds the tree. A parent cycle is broken at its earliest entry; the
    /// caller decides whether that is an error (`broken_cycles` is not empty).
    pub fn build(entries: &[EntryRec], idx: &IdIndex) -> Tree {
        let n = entries.len();
        let mut parent = vec![NONE; n];
        let mut orphans = 0;
        for (i, e) in entries.iter().enumerate() {
            if e.kind == EntryKind::Leaf {
                continue;
            }
            let Some(pid) = e.parent_id.as_deref() else {
                continue;
            };
            if pid == &*e.id {
                continue; // pi treats a self-parent as a root
            }
            match idx
                .get(entries, pid)
                .and_then(|j| resolve_node(entries, idx, j))
            {
                Some(j) => parent[i] = j,
                None => orphans += 1,
            }
        }

        // Break cycles: each node has at most one parent, so walk up from every
        // node, marking the walk; meeting the current walk again is a cycle.
        let mut state = vec![0u8; n]; // 0 new, 1 on the current walk, 2 done
        let mut walk: Vec<u32> = Vec::new();
        let mut broken_cycles = Vec::new();
        for i in 0..n {
            if state[i] != 0 {
                continue;
            }
            walk.clear();
            let mut j = i as u32;
            while j != NONE && state[j as usize] == 0 {
                state[j as usize] = 1;
                walk.push(j);
                j = parent[j as usize];
            }
            if j != NONE && state[j as usize] == 1 {
                let pos = walk.iter().position(|&w| w == j).unwrap_or(0);
                let cut = walk[pos..].iter().copied().min().unwrap_or(j);
                parent[cut as usize] = NONE;
                broken_cycles.push(cut);
            }
            for &w in &walk {
                state[w as usize] = 2;
            }
        }

        let mut counts = vec![0u32; n + 1];
        for &p in &parent {
            if p != NONE {
                counts[p as usize] += 1;
            }
        }
        let mut leaf_count = 0;
        let mut branch_points = 0;
        for (i, e) in entries.iter().enumerate() {
            if e.kind == EntryKind::Leaf {
                continue;
            }
            match counts[i] {
                0 => leaf_count += 1,
                1 => {}
                _ => branch_points += 1,
            }
        }
        let mut child_start = Vec::with_capacity(n + 1);
        let mut acc = 0u32;
        for &c in &counts[..n] {
            child_start.push(acc);
            acc += c;
        }
        child_start.push(acc);
        let mut fill = child_start.clone();
        let mut children = vec![0u32; acc as usize];
        for (i, &p) in parent.iter().enumerate() {
            if p != NONE {
                children[fill[p as usize] as usize] = i as u32;
                fill[p as usize] += 1;
            }
        }

        let leaf = current_leaf(entries, idx);
        Tree {
            parent,
            child_start,
            children,
            orphans,
            broken_cycles,
            leaf,
            leaf_count,
            branch_points,
        }
    }

    /// Children of entry `i`.
    pub fn children_of(&self, i: u32) -> &[u32] {
        let s = self.child_start[i as usize] as usize;
        let e = self.child_start[i as usize + 1] as usize;
        &self.children[s..e]
    }

    /// Entry indices from the root down to `i` (inclusive).
    pub fn path_to(&self, i: u32) -> Vec<u32> {
        let mut path = Vec::new();
        let mut j = i;
        // Cycles were broken, but bound the walk anyway.
        while j != NONE && path.len() <= self.parent.len() {
            path.push(j);
            j = self.parent[j as usize];
        }
        path.reverse();
        path
    }
}

/// The current leaf by the format's rule: the target of the last `leaf` entry if it
/// comes after every other entry, else the last entry in file order.
pub fn current_leaf(entries: &[EntryRec], idx: &IdIndex) -> Option<u32> {
    let last_node = entries.iter().rposition(|e| e.kind != EntryKind::Leaf);
    let last_ptr = entries.iter().rposition(|e| e.kind == EntryKind::Leaf);
    match (last_ptr, last_node) {
        (Some(p), n) if n.is_none_or(|n| p > n) => {
            let target = entries[p].target.as_deref()?;
            idx.get(entries, target)
                .and_then(|j| resolve_node(entries, idx, j))
                .or(n.map(|n| n as u32))
        }
        (_, n) => n.map(|n| n as u32),
    }
}
