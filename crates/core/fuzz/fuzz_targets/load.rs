//! Any bytes: loading (strict and lenient, one and several threads), every query
//! on the result, and the lazy loader must never panic; when a strict full load
//! succeeds, a lazy load must build the same context.
#![no_main]

use forkpoint_core::lazy::{LazyLoader, Step};
use forkpoint_core::{LazyOptions, LoadOptions, Session};
use libfuzzer_sys::fuzz_target;

fn lazy(data: &[u8], hint: Option<String>) -> Option<LazyLoader> {
    let mut l = LazyLoader::new(data.len() as u64, LazyOptions::default(), None, hint);
    for _ in 0..10_000 {
        match l.next_step().ok()? {
            Step::Done => return Some(l),
            Step::Read { offset, len } => {
                let s = usize::try_from(offset).ok()?;
                let e = s.checked_add(usize::try_from(len).ok()?)?;
                l.provide(data.get(s..e)?.to_vec()).ok()?;
            }
        }
    }
    panic!("lazy loader did not finish");
}

/// The hint with one number moved, picked by the input's last bytes.
fn tamper(hint: &str, data: &[u8]) -> String {
    let mut v: serde_json::Value = serde_json::from_str(hint).unwrap_or_default();
    let pick = data.last().copied().unwrap_or(0) as usize;
    let delta = data.get(data.len().saturating_sub(2)).copied().unwrap_or(1) as i64 - 128;
    let mut numbers: Vec<&mut serde_json::Value> = Vec::new();
    fn walk<'a>(v: &'a mut serde_json::Value, out: &mut Vec<&'a mut serde_json::Value>) {
        match v {
            serde_json::Value::Number(_) => out.push(v),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| walk(x, out)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(&mut v, &mut numbers);
    if !numbers.is_empty() {
        let n = numbers.len();
        let target = &mut numbers[pick % n];
        let old = target.as_i64().unwrap_or(0);
        **target = serde_json::json!((old + delta).max(0));
    }
    v.to_string()
}

fuzz_target!(|data: &[u8]| {
    let small = LoadOptions { max_depth: 64, max_line_bytes: 1 << 16, ..Default::default() };
    for lenient in [false, true] {
        let opts = LoadOptions { lenient, ..small.clone() };
        let one = Session::from_bytes(data.to_vec(), &opts, None);
        let two = Session::from_bytes_split(data.to_vec(), &opts, None, 2, 0);
        assert_eq!(one.is_ok(), two.is_ok());
        let Ok(s) = one else { continue };
        let m = s.metadata();
        let _ = s.tree_runs();
        let _ = s.entries_json(0, s.len());
        let ctx = s.context_json(None, false);
        let _ = s.context_json(None, true);
        for leaf in s.leaves().into_iter().take(8) {
            let _ = s.context_json(Some(&leaf.id), true);
            let _ = s.path_json(&leaf.id);
            let _ = s.children(&leaf.id);
        }
        if let Ok(t) = &two {
            assert_eq!(t.context_json(None, false).ok(), ctx.clone().ok());
            assert_eq!(t.metadata().entry_count, m.entry_count);
        }
        if !lenient && m.version >= 2 && !m.gzip {
            if let (Some(l), Ok(ctx)) = (lazy(data, None), ctx) {
                assert_eq!(l.context_json(false).ok(), Some(ctx.clone()), "lazy (scan)");
                if let Some(h) = l.new_hint() {
                    let l2 = lazy(data, Some(h.to_json())).expect("lazy with hint");
                    assert_eq!(l2.context_json(false).ok(), Some(ctx.clone()), "lazy (hint)");
                    // A hint is a cache: a damaged one never changes the answer.
                    let tampered = tamper(&h.to_json(), data);
                    let l3 = lazy(data, Some(tampered)).expect("lazy with a damaged hint");
                    assert_eq!(l3.context_json(false).ok(), Some(ctx), "lazy (damaged hint)");
                }
            }
        }
    }
    // The lazy loader on anything, with a garbage hint too.
    let _ = lazy(data, Some(String::from_utf8_lossy(data).into_owned()));
});
