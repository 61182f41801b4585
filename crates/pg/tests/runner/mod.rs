//! The plain `main` of this crate's test binaries (no libtest harness, so
//! that one cluster serves every test and is stopped after the last): runs
//! the tests whose name contains one of the words given (all when none),
//! each with its panic caught.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

/// A test: its name and its body, given what the binary set up.
pub type Tests<C> = Vec<(String, Box<dyn Fn(&C)>)>;

/// The words of the command line that choose tests (flags left out).
pub fn filter() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect()
}

/// Whether test `name` was chosen by `filter`.
pub fn chosen(filter: &[String], name: &str) -> bool {
    filter.is_empty() || filter.iter().any(|w| name.contains(w.as_str()))
}

/// Runs the chosen tests on `ctx`: how many ran, and the names of those
/// that failed.
pub fn run<C>(tests: &Tests<C>, ctx: &C, filter: &[String]) -> (usize, Vec<String>) {
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, f) in tests {
        if !chosen(filter, name) {
            continue;
        }
        ran += 1;
        let t = Instant::now();
        match catch_unwind(AssertUnwindSafe(|| f(ctx))) {
            Ok(()) => println!("test {name} ... ok ({:?})", t.elapsed()),
            Err(_) => {
                println!("test {name} ... FAILED ({:?})", t.elapsed());
                failed.push(name.clone());
            }
        }
    }
    (ran, failed)
}

/// Says how it went, and exits 1 when a test failed.
pub fn report(ran: usize, failed: &[String], t0: Instant) {
    println!(
        "\n{} passed, {} failed, in {:?}",
        ran - failed.len(),
        failed.len(),
        t0.elapsed()
    );
    if !failed.is_empty() {
        println!("failed: {failed:?}");
        std::process::exit(1);
    }
}
