//! The storage contract on the in-memory store, bare and behind a counting
//! `FaultStorage`; and the fault injector itself.

use forkpoint_core::ErrorCode;
use forkpoint_core::storage::contract::{self, Backend, Expect};
use forkpoint_core::storage::{AgentStorage, Fault, FaultPlan, FaultStorage, MemoryStorage};
use pollster::block_on;

struct Memory;

impl Backend for Memory {
    type Store = MemoryStorage;

    fn fresh(&self) -> MemoryStorage {
        MemoryStorage::new()
    }

    fn second(&self, store: &MemoryStorage) -> Option<MemoryStorage> {
        Some(store.clone())
    }

    fn append_raw(&self, store: &MemoryStorage, id: &str, session: &[u8], events: &[u8]) {
        store.append_raw(id, session, events);
    }
}

struct Counting;

impl Backend for Counting {
    type Store = FaultStorage<MemoryStorage>;

    fn fresh(&self) -> Self::Store {
        FaultStorage::counting(MemoryStorage::new())
    }

    fn second(&self, store: &Self::Store) -> Option<Self::Store> {
        Some(FaultStorage::counting(store.inner().clone()))
    }

    fn append_raw(&self, store: &Self::Store, id: &str, session: &[u8], events: &[u8]) {
        store.inner().append_raw(id, session, events);
    }
}

macro_rules! contract_tests {
    ($backend:expr, $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                block_on(contract::$check(&$backend));
            }
        )*
        #[test]
        fn every_check_is_run() {
            let here = [$(stringify!($check)),*];
            assert_eq!(here.as_slice(), contract::CHECKS);
        }
    };
}

mod memory {
    use super::*;
    contract_tests!(
        Memory,
        create_then_already_exists,
        acquire_missing_agent,
        acquire_while_held,
        release_then_acquire_grows_token,
        stale_lease_is_lost,
        writes_are_ordered_and_durable,
        torn_tails_are_cut_on_acquire,
        read_session_clamps,
        list_is_sorted_with_meta,
        exists_and_delete,
        batch_at_wrong_offset_is_refused,
        second_handle_sees_writes,
    );
}

/// Every check of `CHECKS` runs by name (the bindings' test builds pick them
/// so); a name that is none is `INVALID_INPUT`.
#[test]
fn every_check_runs_by_name() {
    for name in contract::CHECKS {
        block_on(contract::run(&Memory, name)).unwrap();
    }
    let e = block_on(contract::run(&Memory, "no_such_check")).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(e.message.contains("no_such_check"), "{e}");
}

mod counting_fault_storage {
    use super::*;
    contract_tests!(
        Counting,
        create_then_already_exists,
        acquire_missing_agent,
        acquire_while_held,
        release_then_acquire_grows_token,
        stale_lease_is_lost,
        writes_are_ordered_and_durable,
        torn_tails_are_cut_on_acquire,
        read_session_clamps,
        list_is_sorted_with_meta,
        exists_and_delete,
        batch_at_wrong_offset_is_refused,
        second_handle_sees_writes,
    );
}

fn plan(at: u64, fault: Fault) -> FaultPlan {
    FaultPlan {
        at: Some(at),
        fault,
    }
}

/// create (op 1), write (op 2), write (op 3): the planned op is 3.
fn script(fault: Fault) -> (MemoryStorage, Expect, forkpoint_core::storage::WriteBatch) {
    let mem = MemoryStorage::new();
    let f = FaultStorage::new(mem.clone(), plan(3, fault));
    let (mut e, init) = Expect::new("a");
    let lease = block_on(f.create("a", &init)).unwrap();
    let first = e.step(2, 2, true);
    block_on(f.write(&lease, &first)).unwrap();
    assert_eq!(f.ops(), 2);
    assert!(!f.fired());
    let third = e.peek(3, 4, true);
    let err = block_on(f.write(&lease, &third)).unwrap_err();
    assert_eq!(err.code, ErrorCode::Io);
    assert!(f.fired());
    assert_eq!(f.ops(), 3);
    // Dead from now on: reads and writes alike.
    assert_eq!(block_on(f.head(&lease)).unwrap_err().code, ErrorCode::Io);
    assert_eq!(block_on(f.exists("a")).unwrap_err().code, ErrorCode::Io);
    assert_eq!(block_on(f.list()).unwrap_err().code, ErrorCode::Io);
    assert_eq!(
        block_on(f.read_session("a", 0, 10)).unwrap_err().code,
        ErrorCode::Io
    );
    assert_eq!(block_on(f.acquire("b")).unwrap_err().code, ErrorCode::Io);
    let again = e.peek(1, 0, false);
    assert_eq!(
        block_on(f.write(&lease, &again)).unwrap_err().code,
        ErrorCode::Io
    );
    assert_eq!(f.ops(), 3, "a dead store counts nothing more");
    // The processes died: their leases with them.
    mem.crash();
    (mem, e, third)
}

#[test]
fn fail_changes_nothing_and_later_calls_fail() {
    let (mem, e, _) = script(Fault::Fail);
    block_on(contract::check_stored(&mem, &e, "after a failed write"));
    let lease = block_on(mem.acquire("a")).unwrap();
    block_on(contract::check_head(&mem, &lease, &e, "after restart"));
}

#[test]
fn fail_at_the_first_op_creates_nothing() {
    let mem = MemoryStorage::new();
    let f = FaultStorage::new(mem.clone(), plan(1, Fault::Fail));
    let (_, init) = Expect::new("a");
    assert_eq!(
        block_on(f.create("a", &init)).unwrap_err().code,
        ErrorCode::Io
    );
    assert!(!block_on(mem.exists("a")).unwrap());
}

#[test]
fn tear_leaves_a_prefix_cut_back_to_whole_lines() {
    let (mem, mut e, third) = script(Fault::Tear);
    // What landed: the first half of the session bytes (mid-line), the first
    // half of the events, no meta.
    let (session, events, meta) = mem.raw("a").unwrap();
    let half = &third.session[..third.session.len() / 2];
    assert_ne!(half.last(), Some(&b'\n'), "the tear is inside a line");
    let mut want = e.session.clone();
    want.extend_from_slice(half);
    assert_eq!(session, want, "a prefix of the session bytes landed");
    assert_eq!(meta, e.meta, "the meta is never torn in");
    let n = events.iter().filter(|&&b| b == b'\n').count();
    assert_eq!(n, e.events.len() + third.events.len() / 2);

    let lease = block_on(mem.acquire("a")).unwrap();
    // Whole lines of the prefix stay, the torn line goes.
    let whole = half.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    e.session.extend_from_slice(&half[..whole]);
    e.events.extend(
        third.events[..third.events.len() / 2]
            .iter()
            .map(|l| l.line.clone()),
    );
    block_on(contract::check_stored(&mem, &e, "after the torn write"));
    let h = block_on(mem.head(&lease)).unwrap();
    assert_eq!(h.session_len, e.session.len() as u64);
    assert!(
        block_on(mem.read_session("a", 0, u64::MAX))
            .unwrap()
            .ends_with(b"\n"),
        "the session ends with a whole line"
    );
}

#[test]
fn lose_ack_applies_the_write() {
    let (mem, mut e, third) = script(Fault::LoseAck);
    e.session.extend_from_slice(&third.session);
    e.events.extend(third.events.iter().map(|l| l.line.clone()));
    e.meta = third.meta.clone().unwrap();
    block_on(contract::check_stored(
        &mem,
        &e,
        "after a write whose acknowledgement was lost",
    ));
}

#[test]
fn crash_points_enumerate_every_operation() {
    // For every N of a scripted run, a failure at N leaves a store a restart opens.
    let run = |f: &FaultStorage<MemoryStorage>| -> forkpoint_core::Result<()> {
        let (mut e, init) = Expect::new("a");
        let lease = block_on(f.create("a", &init))?;
        for i in 0..3 {
            block_on(f.write(&lease, &e.step(1, 2, i == 2)))?;
        }
        block_on(f.release(&lease))?;
        let lease = block_on(f.acquire("a"))?;
        block_on(f.write(&lease, &e.step(2, 1, true)))?;
        block_on(f.release(&lease))?;
        block_on(f.delete("a"))
    };
    let total = {
        let f = FaultStorage::counting(MemoryStorage::new());
        run(&f).unwrap();
        f.ops()
    };
    assert_eq!(total, 9);
    for fault in [Fault::Fail, Fault::Tear, Fault::LoseAck] {
        for n in 1..=total {
            let mem = MemoryStorage::new();
            let f = FaultStorage::new(mem.clone(), plan(n, fault));
            assert!(run(&f).is_err(), "{fault:?} at {n} must surface");
            mem.crash();
            if block_on(mem.exists("a")).unwrap() {
                let lease = block_on(mem.acquire("a")).unwrap();
                let s = block_on(mem.read_session("a", 0, u64::MAX)).unwrap();
                assert!(s.ends_with(b"\n"), "{fault:?} at {n}: whole lines");
                block_on(mem.head(&lease)).unwrap();
            }
        }
    }
}
