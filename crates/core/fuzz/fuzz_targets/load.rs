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
                    assert_eq!(l2.context_json(false).ok(), Some(ctx), "lazy (hint)");
                }
            }
        }
    }
    // The lazy loader on anything, with a garbage hint too.
    let _ = lazy(data, Some(String::from_utf8_lossy(data).into_owned()));
});
