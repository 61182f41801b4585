//! Work split over threads, the caller's own taking the first part.

/// Threads worth using for one long piece of work: the cores this process
/// may use, at most 8 (1 where threads cannot be had, WebAssembly). Asked
/// of the system once (on Linux that reads the cgroup's quota files).
pub fn available() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    })
}

/// Drops `x` on a thread of its own (here if none can be had), so that a
/// caller does not wait while a large conversion is freed.
pub fn free_later<T: Send + 'static>(x: T) {
    let _ = std::thread::Builder::new()
        .name("forkpoint-free".into())
        .spawn(move || drop(x));
}

thread_local! {
    static ONE_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with every [`on_threads`] in it on this thread alone, as where
/// threads cannot be had (every later part `None`): for tests of that path.
pub fn on_one_thread<R>(f: impl FnOnce() -> R) -> R {
    /// Sets the flag back as it was, also when `f` panics.
    struct Was(bool);
    impl Drop for Was {
        fn drop(&mut self) {
            ONE_THREAD.with(|o| o.set(self.0));
        }
    }
    let _was = Was(ONE_THREAD.with(|o| o.replace(true)));
    f()
}

/// Runs `first` on this thread while `f` runs on each of `later` on a thread
/// of its own (named `name`), all at once; gives `first`'s result and, in
/// order, each later part's: `None` for a part whose thread could not be
/// started or panicked (the caller does that part itself). Where threads
/// cannot be had (WebAssembly), every later part is `None`.
pub fn on_threads<P: Send, U, T: Send>(
    name: &str,
    later: impl IntoIterator<Item = P>,
    first: impl FnOnce() -> U,
    f: impl Fn(P) -> T + Sync,
) -> (U, Vec<Option<T>>) {
    if ONE_THREAD.with(std::cell::Cell::get) {
        let none = later.into_iter().map(|_| None).collect();
        return (first(), none);
    }
    std::thread::scope(|sc| {
        let f = &f;
        let handles: Vec<_> = later
            .into_iter()
            .map(|part| {
                std::thread::Builder::new()
                    .name(name.into())
                    .spawn_scoped(sc, move || f(part))
            })
            .collect();
        let mine = first();
        let theirs = handles
            .into_iter()
            .map(|h| h.ok().and_then(|h| h.join().ok()))
            .collect();
        (mine, theirs)
    })
}

#[cfg(test)]
mod tests {
    use super::on_threads;

    #[test]
    fn the_first_part_runs_here_and_the_others_on_named_threads_in_order() {
        let here = std::thread::current().id();
        let (mine, theirs) = on_threads(
            "forkpoint-test",
            (1..5).map(|k| k * 10),
            || std::thread::current().id() == here,
            |k| {
                let t = std::thread::current();
                (k, t.id() != here && t.name() == Some("forkpoint-test"))
            },
        );
        assert!(mine);
        let theirs: Vec<_> = theirs.into_iter().map(Option::unwrap).collect();
        assert_eq!(theirs, [(10, true), (20, true), (30, true), (40, true)]);
        // A part that panics is `None` (the caller does it itself).
        let (_, theirs) = on_threads("forkpoint-test", [1, 0], || (), |k| 10 / k);
        assert_eq!(theirs, [Some(10), None]);
        // With no threads to be had, every later part is `None`.
        let (mine, theirs) =
            super::on_one_thread(|| on_threads("forkpoint-test", [1, 2], || 0, |k| k));
        assert_eq!((mine, theirs), (0, vec![None, None]));
        assert_eq!(on_threads("forkpoint-test", [1], || 0, |k| k).1, [Some(1)]);
    }
}
