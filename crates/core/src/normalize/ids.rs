//! Tool-call ids mapped to a target's constraints with a reversible,
//! collision-free map.

use std::cell::RefCell;
/// Ids are hashed with foldhash: they are the maps' hot path when a long
/// conversation is converted (SipHash was about a third of the time of asking
/// these maps), and its seed is random per process.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// What a target accepts as a tool-call id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRule {
    /// Longest id accepted.
    pub max_len: usize,
    /// Exact length required (Mistral: 9).
    pub exact_len: Option<usize>,
    /// `_` and `-` allowed besides ASCII letters and digits.
    pub punct: bool,
    /// Any character allowed (only the length is limited).
    pub any: bool,
    /// More characters allowed (Gemini names: `.` and `:`).
    pub also: &'static str,
    /// Must start with a letter or `_` (Gemini names).
    pub letter_first: bool,
}

impl IdRule {
    /// Anthropic `tool_use.id`: `^[a-zA-Z0-9_-]+$`, at most 64 (pi-ai's limit).
    pub const ANTHROPIC: IdRule = IdRule {
        max_len: 64,
        exact_len: None,
        punct: true,
        any: false,
        also: "",
        letter_first: false,
    };
    /// OpenAI Chat `tool_calls[].id`: at most 40 (no documented character set).
    pub const OPENAI: IdRule = IdRule {
        max_len: 40,
        exact_len: None,
        punct: true,
        any: true,
        also: "",
        letter_first: false,
    };
    /// OpenAI Responses `call_id`, Gemini `functionCall.id`: at most 64.
    pub const WIDE: IdRule = IdRule {
        max_len: 64,
        exact_len: None,
        punct: true,
        any: false,
        also: "",
        letter_first: false,
    };
    /// Mistral: exactly 9 of `[a-zA-Z0-9]`.
    pub const MISTRAL: IdRule = IdRule {
        max_len: 9,
        exact_len: Some(9),
        punct: false,
        any: false,
        also: "",
        letter_first: false,
    };

    /// Anthropic tool names: `^[a-zA-Z0-9_-]{1,128}$`.
    pub const ANTHROPIC_NAME: IdRule = IdRule {
        max_len: 128,
        exact_len: None,
        punct: true,
        any: false,
        also: "",
        letter_first: false,
    };
    /// OpenAI function names: `^[a-zA-Z0-9_-]{1,64}$`.
    pub const OPENAI_NAME: IdRule = IdRule {
        max_len: 64,
        exact_len: None,
        punct: true,
        any: false,
        also: "",
        letter_first: false,
    };
    /// Gemini function names: a letter or `_` first, then letters, digits, `_ . : -`, at most 128.
    pub const GOOGLE_NAME: IdRule = IdRule {
        max_len: 128,
        exact_len: None,
        punct: true,
        any: false,
        also: ".:",
        letter_first: true,
    };

    fn char_ok(&self, c: char) -> bool {
        self.any
            || c.is_ascii_alphanumeric()
            || (self.punct && (c == '_' || c == '-'))
            || self.also.contains(c)
    }

    /// Whether `id` is accepted as it is.
    pub fn accepts(&self, id: &str) -> bool {
        let n = id.len();
        !id.is_empty()
            && n <= self.max_len
            && self.exact_len.is_none_or(|e| e == n)
            && id.chars().all(|c| self.char_ok(c))
            && (!self.letter_first || id.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
    }
}

/// FNV-1a, 64 bit: a stable hash (the same in every build and version).
pub fn fnv64(data: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fn base62(mut n: u64, len: usize) -> String {
    let mut out = Vec::with_capacity(len);
    for _ in 0..len {
        out.push(B62[(n % 62) as usize]);
        n /= 62;
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Maps original ids to target ids: deterministic (the same input gives the same
/// map), collision-free and reversible.
#[derive(Debug, Default, Clone)]
pub struct IdMap {
    forward: HashMap<String, String>,
    taken: HashMap<String, String>,
    /// `(target, original)` in the order ids were first mapped (changed ids only).
    pub changed: Vec<(String, String)>,
    /// The map of tool names, kept beside the ids.
    names: Option<Box<IdMap>>,
    /// Target id → original id, given back before mapping (`set_restore`).
    restore: HashMap<String, String>,
    /// The ids [`IdMap::note_kept`] listed (each is listed once).
    kept: HashMap<String, ()>,
    /// For a repeated call id: the suffix its next repeat tries first (the
    /// ones before are taken, and what is taken stays taken), so that many
    /// repeats of one id cost each one step, not one per repeat before it.
    next_repeat: HashMap<String, u64>,
    /// Since [`IdMap::begin`]: the keys added, to take them back.
    journal: Option<Journal>,
    /// Since [`IdMap::record`]: what this map was asked, and its answers.
    asked: Option<RefCell<Vec<Asked>>>,
}

/// A question put to an [`IdMap`], with the answer it got: a part of a
/// conversation converted with a map of its own is taken as converted with
/// the map of the parts before it when every question gets the same answer
/// from that map ([`IdMap::replay`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    Reserve(String),
    Map(String, IdRule, String),
    Keep(String, IdRule, String),
    Get(String, Option<String>),
    GetOr(String, String),
    /// [`IdMap::map_new`]'s question and answer.
    MapNew(String, IdRule, String, bool),
    /// [`IdMap::call`]'s question (the id, the rule, whether to keep it)
    /// and answer (the target id, whether the id was a call's before).
    Call(String, IdRule, bool, String, bool),
    /// [`IdMap::note_kept`].
    Kept(String),
}

/// What [`IdMap::rollback`] undoes.
#[derive(Debug, Default, Clone)]
struct Journal {
    forward: Vec<String>,
    taken: Vec<String>,
    kept: Vec<String>,
    /// [`IdMap::next_repeat`] entries as they were before.
    next_repeat: Vec<(String, Option<u64>)>,
    changed: usize,
}

impl IdMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// The target id for `original` (assigning one on first sight).
    pub fn map(&mut self, original: &str, rule: &IdRule) -> String {
        let t = self.assign(original, rule);
        self.note(|| Asked::Map(original.to_string(), *rule, t.clone()));
        t
    }

    /// Notes a question and its answer when recording.
    fn note(&self, asked: impl FnOnce() -> Asked) {
        if let Some(log) = &self.asked {
            log.borrow_mut().push(asked());
        }
    }

    /// [`IdMap::map`], not noted.
    fn assign(&mut self, original: &str, rule: &IdRule) -> String {
        if let Some(t) = self.forward.get(original) {
            return t.clone();
        }
        let mut candidate = if rule.accepts(original) {
            original.to_string()
        } else if rule.exact_len.is_some() {
            base62(fnv64(original.as_bytes(), 0), rule.max_len)
        } else {
            let mut s: String = original
                .chars()
                .map(|c| if rule.char_ok(c) { c } else { '_' })
                .collect();
            if s.is_empty() {
                s.push_str("call");
            }
            if rule.letter_first && !s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                s.insert(0, '_');
            }
            if s.len() > rule.max_len {
                let mut cut = rule.max_len;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.truncate(cut);
            }
            s
        };
        let mut attempt = 0u64;
        while self.taken.get(&candidate).is_some_and(|o| o != original) {
            attempt += 1;
            let h = fnv64(original.as_bytes(), attempt);
            candidate = if rule.exact_len.is_some() {
                base62(h, rule.max_len)
            } else {
                let suffix = format!("_{}", base62(h, 6));
                let first = self.forward_base(original, rule);
                let room = rule.max_len.saturating_sub(suffix.len());
                let mut cut = room.min(first.len());
                while !first.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}{suffix}", &first[..cut])
            };
        }
        if self
            .taken
            .insert(candidate.clone(), original.to_string())
            .is_none()
            && let Some(j) = &mut self.journal
        {
            j.taken.push(candidate.clone());
        }
        self.forward.insert(original.to_string(), candidate.clone());
        if let Some(j) = &mut self.journal {
            j.forward.push(original.to_string());
        }
        if candidate != original {
            self.changed.push((candidate.clone(), original.to_string()));
        }
        candidate
    }

    /// Ids to give back their original form (a map an earlier conversion
    /// returned: target id → original id), before any rule applies.
    pub fn set_restore(&mut self, pairs: &[(String, String)]) {
        self.restore = pairs.iter().cloned().collect();
    }

    /// `id`'s original when the restore map has it (and `true`), else `id`.
    pub fn restored(&self, id: &str) -> (String, bool) {
        match self.restore.get(id) {
            Some(orig) => (orig.clone(), true),
            None => (id.to_string(), false),
        }
    }

    /// Keeps `original` as its own target id (an id the target made itself),
    /// unless another id already took it: then it is mapped by `rule`.
    pub fn keep(&mut self, original: &str, rule: &IdRule) -> String {
        let t = self.keep_unnoted(original, rule);
        self.note(|| Asked::Keep(original.to_string(), *rule, t.clone()));
        t
    }

    fn keep_unnoted(&mut self, original: &str, rule: &IdRule) -> String {
        if let Some(t) = self.forward.get(original) {
            return t.clone();
        }
        if self.taken.get(original).is_some_and(|o| o != original) {
            return self.assign(original, rule);
        }
        if self
            .taken
            .insert(original.to_string(), original.to_string())
            .is_none()
            && let Some(j) = &mut self.journal
        {
            j.taken.push(original.to_string());
        }
        self.forward
            .insert(original.to_string(), original.to_string());
        if let Some(j) = &mut self.journal {
            j.forward.push(original.to_string());
        }
        original.to_string()
    }

    /// A tool call's target id: the first call with `original` gets
    /// [`IdMap::keep`]'s answer (`keep`: the target made the id) or
    /// [`IdMap::map`]'s; a later call with it gets a new id of its own, `_2`,
    /// `_3`… after the first call's (a request's call ids must be unique:
    /// Anthropic rejects repeats, and results could not tell the calls
    /// apart), mapped back to `original` in [`IdMap::changed`]. The second
    /// value says whether `original` was a call's id before.
    ///
    /// Only calls ask this map this question: an id it already maps was a
    /// call's (results map their call's id after it).
    pub fn call(&mut self, original: &str, rule: &IdRule, keep: bool) -> (String, bool) {
        let repeated = self.forward.contains_key(original);
        let t = if repeated {
            self.assign_repeat(original, rule)
        } else if keep {
            self.keep_unnoted(original, rule)
        } else {
            self.assign(original, rule)
        };
        self.note(|| Asked::Call(original.to_string(), *rule, keep, t.clone(), repeated));
        (t, repeated)
    }

    /// Lists `id`, which the target got as it is, with itself in
    /// [`IdMap::changed`]: an id its own provider's rule would change (it
    /// made the id itself), so that on the way home, with this map given
    /// back ([`IdMap::set_restore`]), it is kept as it was.
    pub fn note_kept(&mut self, id: &str) {
        self.list_kept(id);
        self.note(|| Asked::Kept(id.to_string()));
    }

    /// [`IdMap::note_kept`], not noted.
    fn list_kept(&mut self, id: &str) {
        if self.kept.insert(id.to_string(), ()).is_none() {
            self.changed.push((id.to_string(), id.to_string()));
            if let Some(j) = &mut self.journal {
                j.kept.push(id.to_string());
            }
        }
    }

    /// A new target id for a call that repeats `original` (see [`IdMap::call`]).
    fn assign_repeat(&mut self, original: &str, rule: &IdRule) -> String {
        let first = match self.forward.get(original) {
            Some(t) if !t.is_empty() => t.clone(),
            _ => self.forward_base(original, rule),
        };
        let mut n = self.next_repeat.get(original).copied().unwrap_or(2);
        loop {
            let candidate = if rule.exact_len.is_some() {
                base62(fnv64(original.as_bytes(), n), rule.max_len)
            } else {
                let suffix = format!("_{n}");
                let mut cut = rule.max_len.saturating_sub(suffix.len()).min(first.len());
                while !first.is_char_boundary(cut) {
                    cut -= 1;
                }
                format!("{}{suffix}", &first[..cut])
            };
            if !self.taken.contains_key(&candidate) {
                self.take_repeat(original, candidate.clone());
                let before = self.next_repeat.insert(original.to_string(), n + 1);
                if let Some(j) = &mut self.journal {
                    j.next_repeat.push((original.to_string(), before));
                }
                return candidate;
            }
            n += 1;
        }
    }

    /// Gives `t` to a repeat of `original`.
    fn take_repeat(&mut self, original: &str, t: String) {
        self.taken.insert(t.clone(), original.to_string());
        if let Some(j) = &mut self.journal {
            j.taken.push(t.clone());
        }
        self.changed.push((t, original.to_string()));
    }

    /// The tool-name map that goes with this id map.
    pub fn names(&mut self) -> &mut IdMap {
        self.names.get_or_insert_with(Default::default)
    }

    /// Tool names that had to change: `(target, original)`.
    pub fn names_changed(&self) -> &[(String, String)] {
        self.names
            .as_ref()
            .map(|n| n.changed.as_slice())
            .unwrap_or(&[])
    }

    /// The sanitized form of `original` before any collision suffix.
    fn forward_base(&self, original: &str, rule: &IdRule) -> String {
        let s: String = original
            .chars()
            .map(|c| if rule.char_ok(c) { c } else { '_' })
            .collect();
        let s = if s.is_empty() { "call".to_string() } else { s };
        if rule.letter_first && !s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            format!("_{s}")
        } else {
            s
        }
    }

    /// The target id already assigned to `original`, or `original` itself.
    pub fn get_or<'a>(&'a self, original: &'a str) -> &'a str {
        let t = self.forward.get(original).map_or(original, String::as_str);
        self.note(|| Asked::GetOr(original.to_string(), t.to_string()));
        t
    }

    /// [`IdMap::map`], and whether `original` got a target id other than
    /// itself just now (not before).
    pub fn map_new(&mut self, original: &str, rule: &IdRule) -> (String, bool) {
        let before = self.forward.contains_key(original);
        let t = self.assign(original, rule);
        let new = !before && t != original;
        self.note(|| Asked::MapNew(original.to_string(), *rule, t.clone(), new));
        (t, new)
    }

    /// The target id already assigned to `original`.
    pub fn get(&self, original: &str) -> Option<&str> {
        let t = self.forward.get(original).map(String::as_str);
        self.note(|| Asked::Get(original.to_string(), t.map(str::to_string)));
        t
    }

    /// Whether `id` is already the target of another original id: reserving it
    /// now would not give the map a full conversion would have made.
    pub fn taken_by_other(&self, id: &str) -> bool {
        self.taken.get(id).is_some_and(|o| o != id)
    }

    /// Reserves ids that are already used as they are (so a mapped id never takes them).
    pub fn reserve(&mut self, id: &str) {
        self.note(|| Asked::Reserve(id.to_string()));
        if !self.taken.contains_key(id) {
            self.taken.insert(id.to_string(), id.to_string());
            if let Some(j) = &mut self.journal {
                j.taken.push(id.to_string());
            }
        }
    }

    /// Starts recording what this map and its names' map are asked, and
    /// their answers ([`IdMap::take_record`]).
    pub fn record(&mut self) {
        self.asked = Some(RefCell::default());
        self.names().asked = Some(RefCell::default());
    }

    /// What was asked since [`IdMap::record`] of this map and of its names'
    /// map; recording stops.
    pub fn take_record(&mut self) -> (Vec<Asked>, Vec<Asked>) {
        let ids = self
            .asked
            .take()
            .map(RefCell::into_inner)
            .unwrap_or_default();
        let names = self
            .names()
            .asked
            .take()
            .map(RefCell::into_inner)
            .unwrap_or_default();
        (ids, names)
    }

    /// Asks this map `asked` again, in order, as another map was asked them
    /// (see [`Asked`]); `None` at the first answer that differs, else the
    /// ids [`IdMap::map_new`] saw first there but not here (their first
    /// sight is in an earlier part: what was reported of it there is not
    /// reported again). An id reserved here that another id already maps
    /// to is a difference: a conversion of both parts at once would have
    /// reserved it before mapping anything, and so mapped that other id
    /// elsewhere.
    ///
    /// A new id is given the answer the other map gave without working it
    /// out again: the candidates [`IdMap::map`] tries depend on the id
    /// alone, the ones before that answer were taken there by other ids and
    /// so are here (what is taken is never given back), so the answer is
    /// the same unless this map has it taken by another id.
    pub fn replay(&mut self, asked: Vec<Asked>) -> Option<Vec<(String, String)>> {
        let mut seen_before = Vec::new();
        for a in asked {
            let same = match a {
                Asked::Reserve(id) => {
                    let free = !self.taken_by_other(&id);
                    self.reserve(&id);
                    free
                }
                Asked::Map(o, _, t) => self.replay_map(o, t),
                Asked::MapNew(o, _, t, new) => match self.forward.get(&o) {
                    Some(had) if *had == t => {
                        if new {
                            seen_before.push((o, t));
                        }
                        true
                    }
                    Some(_) => false,
                    None => self.replay_map(o, t),
                },
                Asked::Keep(o, _, t) => match self.forward.get(&o) {
                    Some(had) => *had == t,
                    None => self.replay_map(o, t),
                },
                // A call's id that an earlier part's call had (or the
                // reverse) is a difference: the repeat is renamed.
                Asked::Call(o, _, _, t, repeated) => {
                    match (self.forward.contains_key(&o), repeated) {
                        (false, false) => self.replay_map(o, t),
                        (true, true) if !self.taken.contains_key(&t) => {
                            self.take_repeat(&o, t);
                            true
                        }
                        _ => false,
                    }
                }
                Asked::Kept(id) => {
                    self.list_kept(&id);
                    true
                }
                Asked::Get(o, t) => self.forward.get(&o) == t.as_ref(),
                Asked::GetOr(o, t) => self.forward.get(&o).unwrap_or(&o) == &t,
            };
            if !same {
                return None;
            }
        }
        Some(seen_before)
    }

    /// [`IdMap::replay`] of a question whose answer was `t` for `o`.
    fn replay_map(&mut self, o: String, t: String) -> bool {
        if let Some(had) = self.forward.get(&o) {
            return *had == t;
        }
        if self.taken.get(&t).is_some_and(|x| *x != o) {
            return false;
        }
        if !self.taken.contains_key(&t) {
            self.taken.insert(t.clone(), o.clone());
            if let Some(j) = &mut self.journal {
                j.taken.push(t.clone());
            }
        }
        if let Some(j) = &mut self.journal {
            j.forward.push(o.clone());
        }
        if t != o {
            self.changed.push((t.clone(), o.clone()));
        }
        self.forward.insert(o, t);
        true
    }

    /// Starts noting what is added (names too), so that [`IdMap::rollback`]
    /// can take it back: a trial without copying the map.
    pub fn begin(&mut self) {
        self.begin_own();
        self.names().begin_own();
    }

    fn begin_own(&mut self) {
        self.journal = Some(Journal {
            changed: self.changed.len(),
            ..Default::default()
        });
    }

    /// Keeps what was added since [`IdMap::begin`].
    pub fn commit(&mut self) {
        self.journal = None;
        if let Some(n) = &mut self.names {
            n.commit();
        }
    }

    /// Takes back what was added since [`IdMap::begin`].
    pub fn rollback(&mut self) {
        if let Some(j) = self.journal.take() {
            for k in j.forward {
                self.forward.remove(&k);
            }
            for k in j.taken {
                self.taken.remove(&k);
            }
            for k in j.kept {
                self.kept.remove(&k);
            }
            for (k, before) in j.next_repeat.into_iter().rev() {
                match before {
                    Some(n) => self.next_repeat.insert(k, n),
                    None => self.next_repeat.remove(&k),
                };
            }
            self.changed.truncate(j.changed);
        }
        if let Some(n) = &mut self.names {
            n.rollback();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollback_takes_back_what_was_added_since_begin() {
        let mut m = IdMap::new();
        m.reserve("a_b");
        assert_eq!(
            m.map("a.b", &IdRule::ANTHROPIC),
            m.clone().map("a.b", &IdRule::ANTHROPIC)
        );
        m.names().map("x.y", &IdRule::ANTHROPIC_NAME);
        let before = m.clone();
        m.begin();
        m.reserve("c_d");
        let c = m.map("c.d", &IdRule::ANTHROPIC);
        assert_ne!(c, "c_d");
        m.names().reserve("x_y2");
        m.names().map("z.w", &IdRule::ANTHROPIC_NAME);
        m.rollback();
        assert_eq!(m.get("c.d"), None);
        assert_eq!(m.changed, before.changed);
        assert_eq!(m.names_changed(), before.names_changed());
        // As if nothing had happened: c.d now maps to c_d, the name z.w as before.
        assert_eq!(m.map("c.d", &IdRule::ANTHROPIC), "c_d");
        assert!(!m.taken_by_other("x_y2"));
        // Kept after commit.
        m.begin();
        m.map("e.f", &IdRule::ANTHROPIC);
        m.commit();
        m.rollback();
        assert_eq!(m.get("e.f"), Some("e_f"));
    }

    #[test]
    fn valid_ids_stay_and_invalid_ones_are_sanitized() {
        let mut m = IdMap::new();
        assert_eq!(m.map("toolu_01", &IdRule::ANTHROPIC), "toolu_01");
        assert_eq!(m.map("call:1/abc", &IdRule::ANTHROPIC), "call_1_abc");
        assert_eq!(m.changed, vec![("call_1_abc".into(), "call:1/abc".into())]);
    }

    #[test]
    fn collisions_get_distinct_ids_and_the_map_is_stable() {
        let mut m = IdMap::new();
        let a = m.map("a:b", &IdRule::ANTHROPIC);
        let b = m.map("a/b", &IdRule::ANTHROPIC);
        let c = m.map("a_b", &IdRule::ANTHROPIC);
        assert_ne!(a, b);
        assert_ne!(b, c);
        assert_ne!(a, c);
        for id in [&a, &b, &c] {
            assert!(IdRule::ANTHROPIC.accepts(id), "{id}");
        }
        assert_eq!(m.map("a/b", &IdRule::ANTHROPIC), b);
        let mut again = IdMap::new();
        assert_eq!(again.map("a:b", &IdRule::ANTHROPIC), a);
        assert_eq!(again.map("a/b", &IdRule::ANTHROPIC), b);
    }

    #[test]
    fn kept_and_restored_ids() {
        let mut m = IdMap::new();
        // An id the target made itself stays, even outside the rule.
        assert_eq!(m.keep("call|7", &IdRule::WIDE), "call|7");
        assert_eq!(m.map("call|7", &IdRule::WIDE), "call|7");
        assert!(m.changed.is_empty());
        // An id another original already maps to is not kept (no collision).
        assert_eq!(m.map("a:b", &IdRule::ANTHROPIC), "a_b");
        let k = m.keep("a_b", &IdRule::ANTHROPIC);
        assert_ne!(k, "a_b");
        assert!(IdRule::ANTHROPIC.accepts(&k));
        let mut r = IdMap::new();
        r.set_restore(&[("call_1_x".into(), "call.1:x".into())]);
        assert_eq!(r.restored("call_1_x"), ("call.1:x".to_string(), true));
        assert_eq!(r.restored("other"), ("other".to_string(), false));
    }

    #[test]
    fn repeated_call_ids_get_ids_of_their_own_and_parts_replay_them() {
        let r = IdRule::ANTHROPIC;
        let mut m = IdMap::new();
        m.reserve("x_2");
        assert_eq!(m.call("x", &r, false), ("x".into(), false));
        // `x_2` is another call's: the repeat takes `x_3`.
        assert_eq!(m.call("x", &r, false), ("x_3".into(), true));
        assert_eq!(m.call("", &r, false), ("call".into(), false));
        assert_eq!(m.call("", &r, false), ("call_2".into(), true));
        assert_eq!(m.map("x", &r), "x", "a result maps to the first call's id");
        // Taken back and given again: the same ids.
        m.begin();
        assert_eq!(m.call("x", &r, false).0, "x_4");
        m.rollback();
        assert_eq!(m.call("x", &r, false).0, "x_4");
        let mut mistral = IdMap::new();
        let a = mistral.call("c", &IdRule::MISTRAL, false).0;
        let b = mistral.call("c", &IdRule::MISTRAL, false).0;
        assert!(a != b && IdRule::MISTRAL.accepts(&b), "{a} {b}");
        // A part converted alone saw `x` first: where an earlier part had a
        // call `x`, that differs (the whole conversion renames it).
        let mut part = IdMap::new();
        part.record();
        part.call("x", &r, false);
        let (asked, _) = part.take_record();
        let mut earlier = IdMap::new();
        earlier.call("x", &r, false);
        assert!(earlier.clone().replay(asked.clone()).is_none());
        assert!(IdMap::new().replay(asked).is_some());
        // A part that renamed a repeat replays where the id is free.
        let mut part = IdMap::new();
        part.record();
        part.call("y", &r, false);
        part.call("y", &r, false);
        let (asked, _) = part.take_record();
        let mut whole = IdMap::new();
        assert!(whole.replay(asked).is_some());
        assert_eq!(whole.changed, vec![("y_2".into(), "y".into())]);
    }

    #[test]
    fn an_id_kept_as_it_is_is_listed_once() {
        let mut m = IdMap::new();
        m.begin();
        m.note_kept("a|b");
        m.note_kept("a|b");
        assert_eq!(m.changed, vec![("a|b".into(), "a|b".into())]);
        m.rollback();
        assert!(m.changed.is_empty());
        m.note_kept("a|b");
        assert_eq!(m.changed.len(), 1, "listed again after the rollback");
    }

    #[test]
    fn length_limits_and_mistral() {
        let long = "x".repeat(100);
        let mut m = IdMap::new();
        let t = m.map(&long, &IdRule::OPENAI);
        assert_eq!(t.len(), 40);
        let t2 = m.map(&"x".repeat(101), &IdRule::OPENAI);
        assert_eq!(t2.len(), 40);
        assert_ne!(t, t2);
        let mut mm = IdMap::new();
        let ids: Vec<String> = (0..500)
            .map(|i| mm.map(&format!("toolu_{i}"), &IdRule::MISTRAL))
            .collect();
        let set: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(set.len(), 500);
        assert!(ids.iter().all(|i| IdRule::MISTRAL.accepts(i)));
    }
}
